package relay

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// TestSubIndexAgreesWithMatch is a differential test: for random filters and
// events, the index finds exactly the subscriptions a scan of every filter with
// protocol.Match finds.
func TestSubIndexAgreesWithMatch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	hexes := []string{hexOf('a'), hexOf('b'), hexOf('c'), hexOf('d')}
	topics := []string{"go", "rust", "zig", "日本語"}
	pick := func(from []string) []string {
		var out []string
		for _, v := range from {
			if rng.IntN(3) == 0 {
				out = append(out, v)
			}
		}
		if out == nil && rng.IntN(4) == 0 {
			out = []string{} // present but empty: matches nothing
		}
		return out
	}
	randomFilter := func() nostr.Filter {
		var f nostr.Filter
		if rng.IntN(4) == 0 {
			f.IDs = pick(hexes)
		}
		if rng.IntN(3) == 0 {
			f.Authors = pick(hexes)
		}
		if rng.IntN(2) == 0 {
			for _, k := range []int{1, 7, 20001} {
				if rng.IntN(2) == 0 {
					f.Kinds = append(f.Kinds, k)
				}
			}
		}
		f.Tags = nostr.TagMap{}
		if rng.IntN(3) > 0 {
			f.Tags["t"] = pick(topics)
		}
		if rng.IntN(3) == 0 {
			f.Tags["e"] = pick(hexes)
		}
		if rng.IntN(5) == 0 {
			since := nostr.Timestamp(100 + rng.IntN(10))
			f.Since = &since
		}
		return f
	}
	randomEvent := func() *nostr.Event {
		ev := &nostr.Event{
			ID:        hexes[rng.IntN(len(hexes))],
			PubKey:    hexes[rng.IntN(len(hexes))],
			Kind:      []int{1, 7, 20001}[rng.IntN(3)],
			CreatedAt: nostr.Timestamp(100 + rng.IntN(10)),
		}
		for range rng.IntN(3) {
			topic := topics[rng.IntN(len(topics))]
			if rng.IntN(2) == 0 {
				topic = " " + strings.ToUpper(topic) // needs normalising
			}
			ev.Tags = append(ev.Tags, nostr.Tag{"t", topic})
		}
		if rng.IntN(2) == 0 {
			ev.Tags = append(ev.Tags, nostr.Tag{"e", hexes[rng.IntN(len(hexes))]})
		}
		return ev
	}

	x := newSubIndex()
	var subs []*subscription
	for i := range 300 {
		s := &subscription{id: strconv.Itoa(i)}
		for range 1 + rng.IntN(3) {
			f, _ := protocol.ValidateFilter(randomFilter(), protocol.Limits{})
			s.filters = append(s.filters, f)
		}
		x.add(s)
		subs = append(subs, s)
	}
	// Remove a third, to exercise unfiling.
	for i := 0; i < len(subs); i += 3 {
		require.True(t, x.remove(subs[i]))
		require.False(t, x.remove(subs[i]))
	}
	require.Equal(t, len(subs)-(len(subs)+2)/3, x.size())

	matched := 0
	for range 2000 {
		ev := randomEvent()
		want := map[string]bool{}
		for i, s := range subs {
			if i%3 == 0 {
				continue
			}
			for _, f := range s.filters {
				if protocol.Match(f, ev) {
					want[s.id] = true
					break
				}
			}
		}
		got := map[string]bool{}
		for _, s := range x.matching(ev, nil) {
			require.False(t, got[s.id], "subscription %s returned twice", s.id)
			got[s.id] = true
		}
		require.Equal(t, want, got, "event %+v", ev)
		matched += len(got)
	}
	require.Greater(t, matched, 2000, "the random cases should match often")
	t.Logf("%d matches", matched)

	// Unfiling finds every key filing used (entries keep no keys: both
	// compute them from the filter): nothing is left behind.
	for i, s := range subs {
		if i%3 != 0 {
			require.True(t, x.remove(s))
		}
	}
	require.Zero(t, x.size())
	require.Empty(t, x.keyed)
	require.Empty(t, x.rest)
}

func hexOf(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// TestDetachKeepsNoMessage: the filter an index entry keeps has the values of
// the filter it was made from, in memory of its own: none of its strings
// points into the message the filter was parsed from.
func TestDetachKeepsNoMessage(t *testing.T) {
	t.Parallel()
	msg := strings.Repeat("x", 1000) + strings.Repeat("1", 64) + strings.Repeat("2", 64) + "nostr" + "p" + strings.Repeat("3", 64)
	at := 1000
	next := func(n int) string { s := msg[at : at+n]; at += n; return s }
	id, author, topic, p, pv := next(64), next(64), next(5), msg[at:at+1], msg[at+1:at+65]
	f := nostr.Filter{IDs: []string{id}, Authors: []string{author}, Kinds: []int{1}, Tags: nostr.TagMap{"t": {topic}, p: {pv}}}
	in := protocol.NewLiveFilter(f)
	out := detach(in)
	require.Equal(t, in.IDs, out.IDs)
	require.Equal(t, in.Authors, out.Authors)
	require.Equal(t, in.Kinds, out.Kinds)
	require.ElementsMatch(t, in.Tags, out.Tags)
	base := uintptr(unsafe.Pointer(unsafe.StringData(msg)))
	inMsg := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= base && p < base+uintptr(len(msg))
	}
	for _, s := range append(append([]string{}, out.IDs...), out.Authors...) {
		require.False(t, inMsg(s), "%q points into the message", s)
	}
	for _, tv := range out.Tags {
		require.False(t, inMsg(tv.Name), "%q points into the message", tv.Name)
		for _, s := range tv.Values {
			require.False(t, inMsg(s), "%q points into the message", s)
		}
	}
	ev := &nostr.Event{ID: id, PubKey: author, Kind: 1, Tags: nostr.Tags{{"t", "nostr"}, {"p", pv}}}
	require.True(t, out.Match(ev))
	require.Equal(t, "nostr", f.Tags["t"][0], "the filter detach was given is unchanged")
}
