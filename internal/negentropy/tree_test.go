package negentropy_test

import (
	"encoding/hex"
	mrand "math/rand/v2"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// treeOf returns a tree snapshot's whole window over items.
func treeOf(t testing.TB, items []negentropy.Item) lib.Storage {
	t.Helper()
	tr := negentropy.NewTree()
	for _, it := range items {
		id, ok := negentropy.ParseID(it.ID)
		require.True(t, ok)
		tr.Insert(int64(it.CreatedAt), id)
	}
	s := tr.Snapshot()
	return s.Window(0, s.Len())
}

func vectorOf(items []negentropy.Item) *vector.Vector {
	v := vector.New()
	for _, it := range items {
		v.Insert(it.CreatedAt, it.ID)
	}
	v.Seal()
	return v
}

// TestTreeMatchesRecomputation: after a random history of inserts and
// deletions (re-inserts included), every query of a tree snapshot (whole,
// and time windows) answers what go-nostr's vector storage, rebuilt from the
// surviving items and recomputing each range's fingerprint from its ids,
// answers; and an older snapshot is untouched by later changes.
func TestTreeMatchesRecomputation(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(3, 4))
	// Built whole from the first half of the pool (with a duplicate), then
	// changed item by item.
	pool := randomItems(3000, 40) // few timestamps: ties
	tr := negentropy.NewTree()
	held := map[string]negentropy.Item{}
	var keys []negentropy.Key
	for _, it := range append(pool[:1500:1500], pool[0]) {
		id, _ := negentropy.ParseID(it.ID)
		keys = append(keys, negentropy.Key{TS: int64(it.CreatedAt), ID: id})
		held[it.ID] = it
	}
	tr.Build(keys)
	checkTree(t, rng, tr.Snapshot(), values(held))
	var old *negentropy.Snapshot
	var oldItems []negentropy.Item
	for step := range 6000 {
		it := pool[rng.IntN(len(pool))]
		id, _ := negentropy.ParseID(it.ID)
		if rng.IntN(3) == 0 {
			_, had := held[it.ID]
			require.Equal(t, had, tr.Delete(int64(it.CreatedAt), id))
			delete(held, it.ID)
		} else {
			_, had := held[it.ID]
			require.Equal(t, !had, tr.Insert(int64(it.CreatedAt), id))
			held[it.ID] = it
		}
		if step == 3000 {
			old, oldItems = tr.Snapshot(), values(held)
		}
		if step%500 == 499 {
			checkTree(t, rng, tr.Snapshot(), values(held))
		}
	}
	require.Equal(t, len(held), tr.Len())
	checkTree(t, rng, old, oldItems)
}

func values(m map[string]negentropy.Item) []negentropy.Item {
	out := make([]negentropy.Item, 0, len(m))
	for _, it := range m {
		out = append(out, it)
	}
	return out
}

// checkTree compares snapshot s with a recomputation over items: the whole
// set and a random time window.
func checkTree(t *testing.T, rng *mrand.Rand, s *negentropy.Snapshot, items []negentropy.Item) {
	t.Helper()
	require.Equal(t, len(items), s.Len())
	since := int64(1_700_000_000 + rng.IntN(40))
	until := since + int64(rng.IntN(20))
	var in []negentropy.Item
	for _, it := range items {
		if int64(it.CreatedAt) >= since && int64(it.CreatedAt) <= until {
			in = append(in, it)
		}
	}
	for _, c := range []struct {
		got  lib.Storage
		want []negentropy.Item
	}{
		{s.Window(0, s.Len()), items},
		{s.Window(s.RankTime(since), s.RankTime(until+1)), in},
	} {
		want := vectorOf(c.want)
		got := c.got
		n := want.Size()
		require.Equal(t, n, got.Size())
		var gotAll, wantAll []lib.Item
		for _, it := range got.Range(0, n) {
			gotAll = append(gotAll, it)
		}
		for _, it := range want.Range(0, n) {
			wantAll = append(wantAll, it)
		}
		require.Equal(t, wantAll, gotAll)
		for range 200 {
			a := rng.IntN(n + 1)
			b := a + rng.IntN(n-a+1)
			require.Equal(t, want.Fingerprint(a, b), got.Fingerprint(a, b), "fingerprint [%d, %d) of %d", a, b, n)
			require.Equal(t, want.GetBound(a), got.GetBound(a))
			var sub []lib.Item
			for _, it := range got.Range(a, b) {
				sub = append(sub, it)
			}
			require.Equal(t, b-a, len(sub))
			if b > a {
				require.Equal(t, wantAll[a:b], sub)
			}
			// bounds: an item's own, a prefix of it, a random one, infinite
			bounds := []lib.Bound{lib.InfiniteBound,
				{Item: lib.Item{Timestamp: nostr.Timestamp(since), ID: ""}},
				{Item: lib.Item{Timestamp: nostr.Timestamp(1_700_000_000 + rng.IntN(45)), ID: hex.EncodeToString([]byte{byte(rng.IntN(256))})}}}
			if n > 0 {
				it := wantAll[rng.IntN(n)]
				bounds = append(bounds, lib.Bound{Item: it}, lib.Bound{Item: lib.Item{Timestamp: it.Timestamp, ID: it.ID[:2*(1+rng.IntN(31))]}})
			}
			for _, bd := range bounds {
				require.Equal(t, want.FindLowerBound(a, b, bd), got.FindLowerBound(a, b, bd), "bound %v in [%d, %d)", bd, a, b)
			}
		}
	}
}

// TestTreeServerDifferential: sessions served from a tree snapshot find
// exactly the true differences (random sets, many equal timestamps, frame
// limits), and answer every message exactly as the sorted-items server does.
func TestTreeServerDifferential(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(5, 6))
	for run := range 30 {
		n := 1 + rng.IntN(3000)
		all := randomItems(n, 1+rng.IntN(50))
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
		clientLimit, serverLimit := []int{0, 4096, 8192, 60000}[run%4], []int{0, 4096, 20000}[run%3]
		cl, err := negentropy.NewClient(local, clientLimit)
		require.NoError(t, err)
		ref := newServer(t, remote, serverLimit)
		srv, err := negentropy.NewTreeServer(treeOf(t, remote), serverLimit)
		require.NoError(t, err)
		msg, err := cl.Start()
		require.NoError(t, err)
		for round := 0; ; round++ {
			require.Less(t, round, 1000)
			reply, err := srv.Reconcile(msg)
			require.NoError(t, err)
			want, err := ref.Reconcile(msg)
			require.NoError(t, err)
			require.Equal(t, want, reply, "run %d round %d", run, round)
			next, done, err := cl.Reconcile(reply)
			require.NoError(t, err)
			if done {
				break
			}
			msg = next
		}
		have, need := cl.Result()
		cl.Close()
		wantHave, wantNeed := Diff(local, remote)
		require.Equal(t, wantHave, have, "run %d", run)
		require.Equal(t, wantNeed, need, "run %d", run)
	}
}
