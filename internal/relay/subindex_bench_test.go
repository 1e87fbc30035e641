package relay

import (
	"fmt"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkSubIndexMatching: 10,000 subscriptions, one topic each over 1,000
// topics, plus 100 author subscriptions; an event with two topics should only
// test the ~20 filters filed under its topics, not all 10,100.
func BenchmarkSubIndexMatching(b *testing.B) {
	x := newSubIndex()
	for i := range 10000 {
		s := &subscription{id: fmt.Sprint(i), filters: []nostr.Filter{{Tags: nostr.TagMap{"t": {fmt.Sprintf("topic%d", i%1000)}}}}}
		x.add(s)
	}
	for i := range 100 {
		s := &subscription{id: fmt.Sprint("a", i), filters: []nostr.Filter{{Authors: []string{fmt.Sprintf("%064d", i)}}}}
		x.add(s)
	}
	ev := &nostr.Event{ID: fmt.Sprintf("%064d", 1), PubKey: fmt.Sprintf("%064d", 7), Kind: 1,
		Tags: nostr.Tags{{"t", "topic42"}, {"t", "topic77"}}}
	var out []*subscription
	b.ReportAllocs()
	for b.Loop() {
		out = x.matching(ev, out[:0])
	}
	if len(out) != 21 {
		b.Fatalf("matched %d subscriptions, want 21", len(out))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
