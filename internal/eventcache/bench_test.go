package eventcache

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// BenchmarkQuery reports the cache's cost to answer the benchmark's
// many-event shapes (cnctl bench req) over 20,000 events of 500 authors,
// each with a topic, a p and an e tag: `go test ./internal/eventcache -bench Query`.
func BenchmarkQuery(b *testing.B) {
	const n, authors = 20000, 500
	evs := make([]*nostr.Event, n)
	for i := range evs {
		a := strconv.Itoa(i % authors)
		ev := note(strconv.Itoa(100000+i), int64(1_700_000_000+n-i),
			nostr.Tag{"t", "Topic" + strconv.Itoa(i%20)}, nostr.Tag{"p", a}, nostr.Tag{"e", strconv.Itoa(i / 3)})
		ev.PubKey = a
		ev.Kind = 1 + i%3
		evs[i] = ev
	}
	c := New(1<<30, false)
	if err := c.Fill(func(add func(*nostr.Event, []byte) bool) (int64, []int, error) {
		for _, ev := range evs {
			add(ev, []byte(`{"id":"`+ev.ID+`"}`))
		}
		return 1, nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name string
		f    nostr.Filter
		want int
	}{
		{"1-author", nostr.Filter{Authors: []string{"7"}, Limit: 20}, 20},
		{"#t", nostr.Filter{Tags: nostr.TagMap{"t": {"topic3"}}, Limit: 50}, 50},
		{"#p", nostr.Filter{Tags: nostr.TagMap{"p": {"7"}}, Limit: 50}, 40},
		{"kinds", nostr.Filter{Kinds: []int{1}, Limit: 50}, 50},
		{"kinds+#t", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"topic3"}}, Limit: 50}, 50},
	} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				hits, _, _, ok := c.Query([]nostr.Filter{s.f}, protocol.Viewer{}, 0, nil)
				if !ok || len(hits) != s.want {
					b.Fatal(fmt.Sprint(ok, len(hits)))
				}
			}
		})
	}
}
