package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
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

// frozenReplica is a Store whose REQ reads (Read, Source Replica) all run in
// one REPEATABLE READ snapshot of the database taken when it was made: a
// replica that stopped replaying then. Window and InSnapshot read the
// database as it is, as replica.Set's do on the primary.
type frozenReplica struct {
	pgStore
	mu  sync.Mutex // (one statement at a time on the snapshot's transaction)
	sn  readpath.Snapshot
	seq int64
}

func freeze(t *testing.T, st pgStore) *frozenReplica {
	t.Helper()
	fr := &frozenReplica{pgStore: st}
	ready, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.InSnapshot(context.Background(), func(sn readpath.Snapshot) error {
			w, err := sn.Window(context.Background(), math.MaxInt64, 1) // (the head alone)
			if err != nil {
				return err
			}
			fr.sn, fr.seq = sn, w.Seq
			close(ready)
			<-release
			return nil
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("freeze: %v", err)
	}
	t.Cleanup(func() {
		close(release)
		require.NoError(t, <-done)
	})
	return fr
}

func (fr *frozenReplica) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	res, err := fr.sn.Read(ctx, req)
	res.Seq, res.Source = fr.seq, readpath.Replica
	return res, err
}

// TestHandoffFromAFrozenReplica: a relay whose replica stopped replaying
// answers each REQ as the primary does: a page whose events were deleted
// since is refilled from the primary (one refill), one the window leaves
// full is not, a window of more than handoffMaxRows rows has the primary
// answer the REQ; later events arrive live, once.
func TestHandoffFromAFrozenReplica(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	ctx := context.Background()
	k := newKey(t)
	at := nostr.Now() - 5000
	note := func(i int) *nostr.Event {
		return k.note(t, fmt.Sprint("note ", i), func(ev *nostr.Event) { ev.CreatedAt = at + nostr.Timestamp(i) })
	}
	ingest := func(evs ...*nostr.Event) {
		t.Helper()
		res, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
		for _, r := range res {
			require.True(t, r.OK, r.Message)
		}
	}
	var notes []*nostr.Event
	for i := range 30 {
		notes = append(notes, note(i))
	}
	ingest(notes...)
	fr := freeze(t, st)
	cfg := testConfig()
	cfg.CacheBytes = 0 // (the event cache would answer the REQs)
	reg := prometheus.NewRegistry()
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: fr, Feed: NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg}))
	require.NoError(t, err)
	tr := serveRelay(t, r)
	conns := map[string]*client{} // subscription -> its own connection
	stored := func(sub string, f nostr.Filter) []string {
		t.Helper()
		c := dial(t, tr.url)
		conns[sub] = c
		c.send("REQ", sub, f)
		var got []string
		for {
			msg := c.next()
			if str(t, msg[0]) == "EOSE" {
				return got
			}
			require.Equal(t, "EVENT", str(t, msg[0]), join(msg))
			var ev nostr.Event
			require.NoError(t, json.Unmarshal(msg[2], &ev))
			got = append(got, ev.ID)
		}
	}
	primary := func(f nostr.Filter) []string {
		t.Helper()
		evs, _, err := st.QuerySnapshot(ctx, []nostr.Filter{f}, protocol.Viewer{})
		require.NoError(t, err)
		return ids(evs)
	}
	refills := func() float64 { return testutil.ToFloat64(r.m.handoffRefills) }

	// Notes 19 and 18 deleted since the replica froze: the page back from
	// 19 is refilled with 9 and 8; the newest page is full without them.
	del := &nostr.Event{Kind: 5, CreatedAt: at + 40, Tags: nostr.Tags{{"e", notes[19].ID}, {"e", notes[18].ID}}}
	require.NoError(t, del.Sign(k.sk))
	ingest(del)
	back := at + 19
	older := nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}, Until: &back, Limit: 10}
	want := primary(older)
	require.Equal(t, ids(notes[8:18]), reverse(want))
	require.Equal(t, want, stored("older", older))
	require.Equal(t, 1.0, refills())
	newest := nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}, Limit: 5}
	require.Equal(t, primary(newest), stored("newest", newest))
	require.Equal(t, 1.0, refills(), "a full page needs no refill")

	// A window of more rows than the handoff reads: the primary answers.
	var many []*nostr.Event
	for i := range handoffMaxRows + 1 {
		many = append(many, note(100+i))
	}
	ingest(many...)
	want = primary(newest)
	require.Equal(t, ids(reverse(many[len(many)-5:])), want)
	require.Equal(t, want, stored("far", newest))
	require.Equal(t, 2.0, refills())

	// Later events arrive live, once: the subscription that pages back gets
	// none; the newest page's, every note stored since it was answered.
	later := note(5000)
	ok, reason := dial(t, tr.url).publish(later)
	require.True(t, ok, reason)
	live := func(sub string, want int) map[string]int {
		t.Helper()
		got := map[string]int{}
		n := 0
		for n < want {
			msg := conns[sub].next()
			require.Equal(t, "EVENT", str(t, msg[0]), join(msg))
			var ev nostr.Event
			require.NoError(t, json.Unmarshal(msg[2], &ev))
			got[ev.ID]++
			n++
		}
		require.Empty(t, conns[sub].drain(), "nothing more")
		return got
	}
	require.Equal(t, map[string]int{later.ID: 1}, live("far", 1))
	require.Empty(t, live("older", 0))
	each := map[string]int{later.ID: 1}
	for _, ev := range many {
		each[ev.ID] = 1
	}
	require.Equal(t, each, live("newest", len(many)+1))
}

func reverse[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
