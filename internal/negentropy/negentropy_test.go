package negentropy_test

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// crashers are messages that make go-nostr v0.38.2's server panic when it reads
// them unchecked; Check must refuse each.
var crashers = map[string]string{
	// bound timestamp 1, then a bound length varint of ten 0xff bytes: the
	// length overflows to a negative number and the decoder slices with it.
	"bound length varint overflow": "61" + "01" + strings.Repeat("ff", 9) + "7f",
	// an id list claiming 2^56 ids: the library allocates a map that size.
	"huge id count": "61" + "00" + "00" + "02" + "ff" + strings.Repeat("ff", 6) + "7f",
	// the bound length is negative after the shift wraps.
	"bound length negative": "61" + "01" + "81" + strings.Repeat("80", 7) + "00",
	// an infinite bound (timestamp delta 0) followed by another range: the
	// next timestamp overflows past MaxInt64 and the library's answer encodes
	// a negative delta (found by FuzzServerReconcile in CI).
	"range after the infinite bound": "6100000010000000000100000000000000000000000000000000",
}

func TestCheckRefusesCrashers(t *testing.T) {
	t.Parallel()
	for name, msg := range crashers {
		require.ErrorIs(t, negentropy.Check(msg), negentropy.ErrMalformed, name)
		srv := newServer(t, randomItems(100, 10), 0)
		_, err := srv.Reconcile(msg)
		require.ErrorIs(t, err, negentropy.ErrMalformed, name)
	}
}

// TestCrashersCrashTheLibrary shows the crashers are real: the unchecked
// library panics (or fails) on them, which is why Server checks first.
func TestCrashersCrashTheLibrary(t *testing.T) {
	t.Parallel()
	msg := crashers["bound length varint overflow"]
	vec := vector.New()
	for _, it := range randomItems(100, 10) {
		vec.Insert(it.CreatedAt, it.ID)
	}
	vec.Seal()
	neg := lib.New(vec, 0)
	require.Panics(t, func() { _, _ = neg.Reconcile(msg) })
	neg = lib.New(vec, 0)
	require.Panics(t, func() { _, _ = neg.Reconcile(crashers["range after the infinite bound"]) })
	require.Panics(t, func() { lib.New(vector.New(), 100) })
	require.Panics(t, func() { vector.New().Insert(1, "abc") })
}

func TestCheck(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("ab", 32)
	fp := strings.Repeat("cd", 16)
	for _, tc := range []struct {
		name, msg string
		ok        bool
	}{
		{"version only", "61", true},
		{"infinite bound, skip", "61" + "00" + "00" + "00", true},
		{"fingerprint", "61" + "00" + "00" + "01" + fp, true},
		{"id list", "61" + "00" + "00" + "02" + "02" + id + id, true},
		{"bound with prefix", "61" + "05" + "02" + "abcd" + "00", true},
		{"empty", "", false},
		{"odd", "610", false},
		{"uppercase", "61" + "00" + "00" + "01" + strings.ToUpper(fp), false},
		{"not hex", "61zz", false},
		{"no version byte", "7f", false},
		{"no version byte either", "00", false},
		{"bound prefix too long", "61" + "05" + "21" + strings.Repeat("00", 33) + "00", false},
		{"truncated fingerprint", "61" + "00" + "00" + "01" + fp[:30], false},
		{"unknown mode", "61" + "00" + "00" + "03", false},
		{"id list short", "61" + "00" + "00" + "02" + "02" + id, false},
		{"truncated varint", "61" + "81", false},
		{"missing mode", "61" + "00" + "00", false},
		{"ascending bounds", "61" + "05" + "01" + "10" + "00" + "01" + "01" + "f0" + "00" + "02" + "00" + "00" + "00" + "00" + "00", true},
		{"descending id prefixes", "61" + "05" + "01" + "f0" + "00" + "01" + "01" + "10" + "00", false},
		{"range after the infinite bound", "61" + "00" + "00" + "00" + "05" + "00" + "00", false},
		{"timestamp sum out of range", "61" + "c0" + strings.Repeat("80", 7) + "01" + "00" + "00" + "c0" + strings.Repeat("80", 7) + "01" + "00" + "00", false},
	} {
		err := negentropy.Check(tc.msg)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, negentropy.ErrMalformed, tc.name)
		}
	}
}

// TestOtherVersion: a message of another protocol version is not malformed;
// a server answers it with its own version alone (NIP-77's appendix) and the
// session goes on.
func TestOtherVersion(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{"62", "6f00", "60" + strings.Repeat("ff", 20)} {
		err := negentropy.Check(msg)
		require.ErrorIs(t, err, negentropy.ErrUnsupportedVersion, msg)
		require.NotErrorIs(t, err, negentropy.ErrMalformed, msg)
	}
	items := randomItems(300, 20)
	srv := newServer(t, items, 0)
	out, err := srv.Reconcile("62")
	require.NoError(t, err)
	require.Equal(t, "61", out)
	cl, err := negentropy.NewClient(items[:250], 0)
	require.NoError(t, err)
	defer cl.Close()
	msg, err := cl.Start()
	require.NoError(t, err)
	for {
		reply, err := srv.Reconcile(msg)
		require.NoError(t, err)
		next, done, err := cl.Reconcile(reply)
		require.NoError(t, err)
		if done {
			break
		}
		msg = next
	}
	have, need := cl.Result()
	require.Empty(t, have)
	require.Len(t, need, 50)
}

func TestNewRefusesBadIDsAndRaisesFrameLimit(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("a", 65)} {
		_, err := negentropy.NewServer([]negentropy.Item{{CreatedAt: 1, ID: bad}}, 0)
		require.ErrorIs(t, err, negentropy.ErrBadItem)
		_, err = negentropy.NewClient([]negentropy.Item{{CreatedAt: 1, ID: bad}}, 0)
		require.ErrorIs(t, err, negentropy.ErrBadItem)
	}
	for _, ts := range []nostr.Timestamp{-1, 1 << 62} {
		_, err := negentropy.NewServer([]negentropy.Item{{CreatedAt: ts, ID: strings.Repeat("a", 64)}}, 0)
		require.ErrorIs(t, err, negentropy.ErrBadItem)
		_, err = negentropy.NewClient([]negentropy.Item{{CreatedAt: ts, ID: strings.Repeat("a", 64)}}, 0)
		require.ErrorIs(t, err, negentropy.ErrBadItem)
	}
	for _, limit := range []int{-1, 0, 1, 4095} {
		_, err := negentropy.NewServer(randomItems(10, 5), limit)
		require.NoError(t, err)
	}
}

// TestDifferential reconciles random sets in memory (our Client and Server,
// both over the library) and compares with the true set difference.
func TestDifferential(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(1, 2))
	for run := range 40 {
		n := 1 + rng.IntN(3000)
		spread := 1 + rng.IntN(50) // few distinct timestamps: many ties
		all := randomItems(n, spread)
		var local, remote []negentropy.Item
		for _, it := range all {
			switch rng.IntN(4) {
			case 0:
				local = append(local, it)
			case 1:
				remote = append(remote, it)
			default:
				local = append(local, it)
				remote = append(remote, it)
			}
		}
		limit := []int{0, 4096, 8192, 60000}[run%4]
		have, need := reconcileInMemory(t, local, remote, limit, []int{0, 4096, 20000}[run%3])
		wantHave, wantNeed := Diff(local, remote)
		require.Equal(t, wantHave, have, "run %d: have", run)
		require.Equal(t, wantNeed, need, "run %d: need", run)
	}
}

func reconcileInMemory(t *testing.T, local, remote []negentropy.Item, clientLimit, serverLimit int) (have, need []string) {
	t.Helper()
	cl, err := negentropy.NewClient(local, clientLimit)
	require.NoError(t, err)
	defer cl.Close()
	srv := newServer(t, remote, serverLimit)
	msg, err := cl.Start()
	require.NoError(t, err)
	for round := 0; ; round++ {
		require.Less(t, round, 1000, "no end in sight")
		reply, err := srv.Reconcile(msg)
		require.NoError(t, err)
		next, done, err := cl.Reconcile(reply)
		require.NoError(t, err)
		if done {
			break
		}
		msg = next
	}
	return cl.Result()
}

// Diff is the true difference: ids only in a, ids only in b, sorted.
func Diff(a, b []negentropy.Item) (onlyA, onlyB []string) {
	in := func(items []negentropy.Item) map[string]bool {
		m := map[string]bool{}
		for _, it := range items {
			m[it.ID] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	for id := range ma {
		if !mb[id] {
			onlyA = append(onlyA, id)
		}
	}
	for id := range mb {
		if !ma[id] {
			onlyB = append(onlyB, id)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

func newServer(t testing.TB, items []negentropy.Item, limit int) *negentropy.Server {
	t.Helper()
	s, err := negentropy.NewServer(items, limit)
	require.NoError(t, err)
	return s
}

// randomItems returns n items with distinct random ids over spread timestamps.
func randomItems(n, spread int) []negentropy.Item {
	items := make([]negentropy.Item, n)
	for i := range items {
		var b [32]byte
		_, _ = rand.Read(b[:])
		items[i] = negentropy.Item{CreatedAt: nostr.Timestamp(1_700_000_000 + mrand.IntN(spread)), ID: hex.EncodeToString(b[:])}
	}
	return items
}
