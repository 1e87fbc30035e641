package relay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// answer is what a store answers for filters over the visible events vis
// (Store.QuerySnapshot): each filter's newest Limit matches, their union
// newest first.
func answer(filters []nostr.Filter, vis []*nostr.Event) []*nostr.Event {
	sorted := slices.SortedFunc(slices.Values(vis), newestFirst)
	pages := make([][]*nostr.Event, len(filters))
	for i, f := range filters {
		if f.LimitZero {
			continue
		}
		for _, ev := range sorted {
			if f.Limit > 0 && len(pages[i]) == f.Limit {
				break
			}
			if protocol.Match(f, ev) {
				pages[i] = append(pages[i], ev)
			}
		}
	}
	return union(pages, len(filters) > 1)
}

func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// TestHandoffMergeIsThePrimarysAnswer differential-tests the handoff's merge
// against a store's answer at the window's head. Random events (created_at
// ties included, replaceable versions, two topics, two authors) are visible
// at the replica's seq; a random window then deletes some of them, replaces
// some versions (the new one in the topic or not), adds new events, some
// older than the pages, and upserts some visible ones again. For random REQs
// of one to three filters (limit:0 and no limit included), the replica's answer merged with the window (and,
// for the filters it leaves short, completed with the refill queries answered
// at the head) is the store's answer at the head; an answer the memory
// budget stopped (a prefix of a lone filter's) becomes the head's newest
// events down to the oldest that fit.
func TestHandoffMergeIsThePrimarysAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	authors := []string{fmt.Sprintf("%064x", 1), fmt.Sprintf("%064x", 2)}
	topics := []string{"a", "b"}
	n := 0
	newEvent := func(kind int, at int) *nostr.Event {
		n++
		ev := &nostr.Event{ID: fmt.Sprintf("%064x", rng.Uint64()), PubKey: authors[rng.IntN(2)], Kind: kind,
			CreatedAt: nostr.Timestamp(1000 + at), Tags: nostr.Tags{{"t", topics[rng.IntN(2)]}}}
		if kind == 30023 {
			ev.Tags = append(ev.Tags, nostr.Tag{"d", fmt.Sprint(rng.IntN(3))})
		}
		return ev
	}
	randomFilter := func() nostr.Filter {
		f := nostr.Filter{Limit: 1 + rng.IntN(12)}
		if rng.IntN(2) == 0 {
			f.Kinds = [][]int{{1}, {30023}, {1, 30023}}[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			f.Tags = nostr.TagMap{"t": {topics[rng.IntN(2)]}}
		}
		if rng.IntN(3) == 0 {
			f.Authors = []string{authors[rng.IntN(2)]}
		}
		if rng.IntN(4) == 0 {
			until := nostr.Timestamp(1000 + 10 + rng.IntN(20))
			f.Until = &until
		}
		switch rng.IntN(10) {
		case 0:
			f.Limit, f.LimitZero = 0, true
		case 1:
			f.Limit = 0 // (no limit)
		}
		return f
	}
	var refills, shortAtReplica, stoppedRuns int
	for round := range 400 {
		// Visible at the replica's seq: regular notes, and the newest
		// version of each addressable key.
		var vis []*nostr.Event
		current := map[string]*nostr.Event{}
		for i := range 10 + rng.IntN(40) {
			ev := newEvent([]int{1, 1, 1, 30023}[rng.IntN(4)], i/2)
			if k := protocol.EffectiveKey(ev); k != "" {
				if old := current[k]; old != nil {
					vis = slices.DeleteFunc(vis, func(e *nostr.Event) bool { return e == old })
				}
				current[k] = ev
			}
			vis = append(vis, ev)
		}
		// The window.
		w := store.Window{Seq: 100, Named: map[string]bool{}, Keys: map[string]bool{}}
		head := slices.Clone(vis)
		for range rng.IntN(8) {
			switch r := rng.IntN(5); {
			case r == 0 && len(head) > 0: // a deletion
				ev := head[rng.IntN(len(head))]
				head = slices.DeleteFunc(head, func(e *nostr.Event) bool { return e == ev })
				w.Named[ev.ID] = true
			case r == 1: // a new version of an addressable event
				ev := newEvent(30023, 25+rng.IntN(10))
				k := protocol.EffectiveKey(ev)
				if old := current[k]; old != nil {
					if old.CreatedAt >= ev.CreatedAt {
						continue
					}
					head = slices.DeleteFunc(head, func(e *nostr.Event) bool { return e == old })
				}
				current[k] = ev
				head = append(head, ev)
				w.Named[ev.ID], w.Keys[k] = true, true
			case r == 2 && len(head) > 0: // an upsert of a visible event again
				w.Named[head[rng.IntN(len(head))].ID] = true
			default: // a new note, often older than the pages
				ev := newEvent(1, rng.IntN(35))
				head = append(head, ev)
				w.Named[ev.ID] = true
			}
		}
		for _, ev := range head {
			if w.Named[ev.ID] {
				w.Events = append(w.Events, ev)
			}
		}

		filters := []nostr.Filter{randomFilter()}
		for range rng.IntN(3) {
			filters = append(filters, randomFilter())
		}
		stored := answer(filters, vis)
		stopped := len(filters) == 1 && len(stored) > 1 && rng.IntN(5) == 0
		if stopped {
			stored = stored[:1+rng.IntN(len(stored)-1)]
			stoppedRuns++
		}
		m := &pageMerge{filters: filters, stored: slices.Clone(stored), stopped: stopped,
			matches: func(ev *nostr.Event) bool {
				return slices.ContainsFunc(filters, func(f nostr.Filter) bool { return protocol.Match(f, ev) })
			}}
		res, err := m.merge(w)
		require.NoError(t, err)
		require.False(t, res.primary)
		page := res.page
		if len(res.refills) > 0 {
			refills++
			for _, rf := range res.refills {
				res.pages[rf.i] = rf.fill(answer([]nostr.Filter{rf.filter}, head))
			}
			page = union(res.pages, len(filters) > 1)
		}
		want := answer(filters, head)
		if stopped {
			bound := stored[len(stored)-1]
			want = slices.DeleteFunc(want, func(ev *nostr.Event) bool { return newestFirst(ev, bound) > 0 })
		}
		require.Equal(t, ids(want), ids(page), "round %d: filters %v, stopped %t", round, filters, stopped)
		for _, f := range filters {
			if !f.LimitZero && len(answer([]nostr.Filter{f}, head)) < len(answer([]nostr.Filter{f}, vis)) {
				shortAtReplica++
			}
		}
	}
	require.Greater(t, refills, 20, "pages left short were refilled")
	require.Greater(t, shortAtReplica, 20)
	require.Greater(t, stoppedRuns, 20)
}
