package protocol

import (
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// reference is how go-nostr answers: CheckID, then CheckSignature.
func reference(ev *nostr.Event) string {
	if !ev.CheckID() {
		return ReasonBadID
	}
	if ok, err := ev.CheckSignature(); err != nil || !ok {
		return ReasonBadSignature
	}
	return ""
}

// TestCheckIDAndSignatureAsGoNostr compares checkIDAndSignature with go-nostr
// on valid events and on every kind of broken id, signature and public key,
// each twice (the second time from the key cache), in the build under test
// (pure Go, or -tags libsecp256k1).
func TestCheckIDAndSignatureAsGoNostr(t *testing.T) {
	var cases []*nostr.Event
	add := func(ev nostr.Event, edit func(*nostr.Event)) {
		if edit != nil {
			edit(&ev)
		}
		cases = append(cases, &ev)
	}
	flip := func(s string, i int) string { // another lower-case hex digit at i
		c := "0"
		if s[i] == '0' {
			c = "1"
		}
		return s[:i] + c + s[i+1:]
	}
	sks := []string{nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()}
	for i, sk := range sks {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1700000000 + i), Content: "hello " + strings.Repeat("x", i),
			Tags: nostr.Tags{{"t", "go"}, {"e", strings.Repeat("ab", 32)}}}
		require.NoError(t, ev.Sign(sk))
		other := ev
		other.Content = "another"
		require.NoError(t, other.Sign(sks[(i+1)%len(sks)]))
		add(ev, nil)
		add(ev, func(e *nostr.Event) { e.Content += "!" })                             // id no longer matches
		add(ev, func(e *nostr.Event) { e.ID = flip(e.ID, 63) })                        // id not the hash
		add(ev, func(e *nostr.Event) { e.Sig = flip(e.Sig, 0) })                       // r changed
		add(ev, func(e *nostr.Event) { e.Sig = flip(e.Sig, 127) })                     // s changed
		add(ev, func(e *nostr.Event) { e.Sig = other.Sig })                            // another event's signature
		add(ev, func(e *nostr.Event) { e.Sig = strings.Repeat("f", 128) })             // r >= p, s >= n
		add(ev, func(e *nostr.Event) { e.Sig = e.Sig[:64] + strings.Repeat("f", 64) }) // s >= n
		add(ev, func(e *nostr.Event) { e.Sig = strings.Repeat("0", 128) })
		// Another author's key, the id recomputed: the signature is not theirs.
		add(ev, func(e *nostr.Event) { e.PubKey = other.PubKey; e.ID = e.GetID() })
		// Keys that are no curve point: x >= p, and an x with no y.
		add(ev, func(e *nostr.Event) { e.PubKey = strings.Repeat("f", 64); e.ID = e.GetID() })
		add(ev, func(e *nostr.Event) { e.PubKey = strings.Repeat("0", 63) + "5"; e.ID = e.GetID() })
		add(ev, func(e *nostr.Event) { e.PubKey = strings.Repeat("0", 64); e.ID = e.GetID() })
	}
	// Many keys and signatures: valid, and with one hex digit of r, of s or
	// of the message changed (the id recomputed, so only the signature fails).
	for i := range 100 {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1700000000 + i), Content: fmt.Sprint("note ", i), Tags: nostr.Tags{}}
		require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
		add(ev, nil)
		add(ev, func(e *nostr.Event) { e.Sig = flip(e.Sig, i%64) })
		add(ev, func(e *nostr.Event) { e.Sig = flip(e.Sig, 64+i%64) })
		add(ev, func(e *nostr.Event) { e.Content += "."; e.ID = e.GetID() })
	}
	valid := 0
	for round := range 2 {
		for i, ev := range cases {
			want := reference(ev)
			if want == "" {
				valid++
			}
			require.Equal(t, want, checkIDAndSignature(ev), "round %d case %d: %+v", round, i, ev)
		}
	}
	require.Equal(t, 2*(len(sks)+100), valid)
}

// FuzzCheckIDAndSignature compares checkIDAndSignature with go-nostr on
// signatures and public keys made of any 64 and 32 bytes, and on any content,
// around a valid event: `go test -fuzz CheckIDAndSignature ./internal/protocol`
// (and with -tags libsecp256k1).
func FuzzCheckIDAndSignature(f *testing.F) {
	sk := nostr.GeneratePrivateKey()
	base := nostr.Event{Kind: 1, CreatedAt: 1700000000, Content: "hello", Tags: nostr.Tags{{"t", "go"}}}
	if err := base.Sign(sk); err != nil {
		f.Fatal(err)
	}
	sig, _ := hex.DecodeString(base.Sig)
	pk, _ := hex.DecodeString(base.PubKey)
	f.Add(sig, pk, base.Content, false)
	f.Add(sig, pk, "other", true)
	f.Fuzz(func(t *testing.T, sig, pk []byte, content string, rehash bool) {
		if len(sig) != 64 || len(pk) != 32 {
			return
		}
		ev := base
		ev.Sig, ev.PubKey, ev.Content = hex.EncodeToString(sig), hex.EncodeToString(pk), content
		if rehash {
			ev.ID = ev.GetID()
		}
		if want, got := reference(&ev), checkIDAndSignature(&ev); want != got {
			t.Fatalf("go-nostr %q, checkIDAndSignature %q: %+v", want, got, ev)
		}
	})
}

// TestBIP340Vectors holds parsePubKey and verifySchnorr, in the build under
// test, to BIP-340's own verification vectors (testdata/bip340-test-vectors.csv,
// bip-0340/test-vectors.csv of bitcoin/bips, the 32-byte-message ones): a key
// that does not lift fails the parse, every other vector verifies as the BIP says.
// Each valid vector is also checked with one bit of the signature, and one of
// the message, flipped.
func TestBIP340Vectors(t *testing.T) {
	f, err := os.Open("testdata/bip340-test-vectors.csv")
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 16)
	valid := 0
	for _, row := range rows[1:] {
		var raw, msg [32]byte
		var sig [64]byte
		for _, p := range []struct {
			dst []byte
			hex string
		}{{raw[:], row[2]}, {msg[:], row[4]}, {sig[:], row[5]}} {
			_, err := hex.Decode(p.dst, []byte(p.hex))
			require.NoError(t, err, "vector %s", row[0])
		}
		want := row[6] == "TRUE"
		pk, ok := parsePubKey(&raw)
		if !ok {
			require.False(t, want, "vector %s: %s", row[0], row[7])
			continue
		}
		require.Equal(t, want, verifySchnorr(pk, &msg, &sig), "vector %s: %s", row[0], row[7])
		if want {
			valid++
			for _, bit := range []int{0, 255, 256, 511} {
				bad := sig
				bad[bit/8] ^= 1 << (bit % 8)
				require.False(t, verifySchnorr(pk, &msg, &bad), "vector %s, signature bit %d flipped", row[0], bit)
			}
			bad := msg
			bad[31] ^= 1
			require.False(t, verifySchnorr(pk, &bad, &sig), "vector %s, message flipped", row[0])
		}
	}
	require.Equal(t, 5, valid)
}

// TestVerifyEvent: an event is verified as signed, or refused with the reason
// of its first fault: none, a malformed field, a content that is not the id's,
// an id recomputed over altered content (the signature is then wrong).
func TestVerifyEvent(t *testing.T) {
	ev := &nostr.Event{Kind: 1, CreatedAt: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "as signed"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	require.Equal(t, "", VerifyEvent(ev))
	require.Equal(t, ReasonNoEvent, VerifyEvent(nil))

	malformed := *ev
	malformed.ID = strings.ToUpper(ev.ID)
	require.Equal(t, ReasonMalformedID, VerifyEvent(&malformed))
	altered := *ev
	altered.Content = "altered"
	require.Equal(t, ReasonBadID, VerifyEvent(&altered))
	altered.ID = altered.GetID()
	require.Equal(t, ReasonBadSignature, VerifyEvent(&altered))
}
