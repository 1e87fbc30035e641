package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// TestWindowTellsWhatChanged: after a random run of notes, replacements
// (late older versions included), NIP-09 deletions by id and by address,
// deletions of effective versions (which promote the previous one) and
// moderation hides and unhides, the window after any earlier seq turns the
// visible set read at that seq into the visible set now: drop what it names
// or whose effective key it names, add its events. Its Seq is the head, it
// is empty after the head, and a window over its limit is not read.
func TestWindowTellsWhatChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	visibleNow := func() (map[string]*nostr.Event, int64) {
		evs, seq, err := f.store.QuerySnapshot(ctx, []nostr.Filter{{Limit: 10000}}, protocol.Viewer{})
		require.NoError(t, err)
		m := map[string]*nostr.Event{}
		for _, ev := range evs {
			m[ev.ID] = ev
		}
		return m, seq
	}
	type point struct {
		seq     int64
		visible map[string]*nostr.Event
	}
	var points []point
	var all, batch []*nostr.Event
	flush := func() {
		if len(batch) > 0 {
			f.ingest(t, batch...)
			batch = nil
		}
		v, seq := visibleNow()
		points = append(points, point{seq, v})
	}
	add := func(ev *nostr.Event) {
		batch = append(batch, ev)
		all = append(all, ev)
	}
	hidden := map[string]bool{}
	topics := []string{"go", "nostr"}
	for i := range 150 {
		author := rng.IntN(len(f.keys))
		at := base + nostr.Timestamp(i/3)
		switch r := rng.IntN(20); {
		case r < 9 || len(all) == 0:
			add(f.event(t, author, 1, at, nostr.Tags{topic(topics[rng.IntN(2)]), topic(topics[rng.IntN(2)])}, fmt.Sprint("note ", i)))
		case r < 13:
			// A version of an addressable or replaceable event, now and
			// then an older one arriving late.
			if rng.IntN(4) == 0 {
				at -= 20
			}
			if rng.IntN(2) == 0 {
				add(f.event(t, author, 30023, at, nostr.Tags{{"d", fmt.Sprint(rng.IntN(3))}, topic(topics[rng.IntN(2)])}, fmt.Sprint("article ", i)))
			} else {
				add(f.event(t, author, 10015, at, nostr.Tags{topic(topics[rng.IntN(2)])}, ""))
			}
		case r < 18:
			// A deletion of something the author stored, by id or (for an
			// article) by address.
			target := all[rng.IntN(len(all))]
			tags := nostr.Tags{{"e", target.ID}}
			if target.Kind == 30023 && rng.IntN(2) == 0 {
				tags = nostr.Tags{{"a", fmt.Sprintf("30023:%s:%s", target.PubKey, target.Tags.GetD())}}
			}
			add(f.event(t, slices.Index(f.pubkeys(t), target.PubKey), 5, at, tags, ""))
		default:
			// Moderation: hide a stored event, or unhide a hidden one.
			flush()
			target := all[rng.IntN(len(all))]
			if hidden[target.ID] {
				f.moderate(t, nil, []string{target.ID})
			} else {
				f.moderate(t, []string{target.ID}, nil)
			}
			hidden[target.ID] = !hidden[target.ID]
		}
		if i%10 == 9 {
			flush()
		}
	}
	flush()
	now, head := visibleNow()
	changed := 0
	for _, p := range points {
		w, err := f.store.Window(ctx, p.seq, 10000)
		require.NoError(t, err)
		require.False(t, w.More)
		require.Equal(t, head, w.Seq)
		got := map[string]bool{}
		for id, ev := range p.visible {
			if !w.Named[id] && !w.Keys[protocol.EffectiveKey(ev)] {
				got[id] = true
			}
		}
		for _, ev := range w.Events {
			require.False(t, got[ev.ID], "an event named by the window is dropped, then added back when visible")
			got[ev.ID] = true
			require.Equal(t, now[ev.ID].Content, ev.Content, "whole events")
			require.Equal(t, now[ev.ID].Tags, ev.Tags, "whole events")
		}
		want := map[string]bool{}
		for id := range now {
			want[id] = true
		}
		require.Equal(t, want, got, "after seq %d", p.seq)
		if len(w.Named) > 0 {
			changed++
		}
	}
	require.Greater(t, changed, 5)
	require.Greater(t, len(hidden), 2, "moderation took part")

	w, err := f.store.Window(ctx, head, 10000)
	require.NoError(t, err)
	require.Equal(t, Window{Seq: head, Named: map[string]bool{}, Keys: map[string]bool{}}, w, "nothing after the head")
	w, err = f.store.Window(ctx, points[0].seq, 5)
	require.NoError(t, err)
	require.True(t, w.More, "more rows than the limit")
	require.Empty(t, w.Named)
	require.Empty(t, w.Events)

	// In a Snapshot, the window and a query agree: both are the snapshot's.
	require.NoError(t, f.store.InSnapshot(ctx, func(rs readpath.Snapshot) error {
		sn := rs.(*Snapshot)
		w, err := sn.Window(ctx, points[0].seq, 10000)
		require.NoError(t, err)
		require.Equal(t, head, w.Seq)
		f.ingest(t, f.event(t, 0, 1, base+500, nostr.Tags{topic("go")}, "after the snapshot")) // (another connection)
		evs, err := sn.Query(ctx, []nostr.Filter{{Limit: 10000}}, protocol.Viewer{})
		require.NoError(t, err)
		require.Len(t, evs, len(now), "the query reads the window's snapshot")
		res, err := sn.Read(ctx, readpath.Request{Filters: []nostr.Filter{{Limit: 10000}}})
		require.NoError(t, err)
		require.Len(t, res.Events, len(now), "so does a Read")
		w, err = sn.Window(ctx, head, 10000)
		require.NoError(t, err)
		require.Equal(t, head, w.Seq, "so does a later window")
		require.Empty(t, w.Named)
		return nil
	}))
}

// TestWindowPlanWalksTheOutboxInOrder: the window's generic plan (the one
// readWindow runs) reads the outbox by its primary key from the seq asked
// for and fetches each event by its primary key.
func TestWindowPlanWalksTheOutboxInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for batch := range 4 {
		evs := make([]*nostr.Event, 500)
		for i := range evs {
			n := batch*500 + i
			evs[i] = f.event(t, n%3, 1, base+nostr.Timestamp(n), nostr.Tags{topic("go")}, fmt.Sprint(n))
		}
		f.ingest(t, evs...)
	}
	_, err := f.db.Pool.Exec(ctx, "ANALYZE cn_relay.events, cn_relay.events_outbox")
	require.NoError(t, err)
	conn, err := f.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(ctx, "RESET plan_cache_mode") }()
	_, err = conn.Exec(ctx, "PREPARE window_plan AS "+windowSQL)
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(ctx, "DEALLOCATE window_plan") }()
	rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE window_plan(0, 10, 100)")
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.NotContains(t, plan, "Seq Scan on events ", plan)
	require.NotContains(t, plan, "Seq Scan on events_outbox", plan)
	require.Contains(t, plan, "Index Scan using events_pkey on events e", plan)
}

// pubkeys returns the fixture's authors' public keys, in key order.
func (f *fixture) pubkeys(t *testing.T) []string {
	t.Helper()
	out := make([]string, len(f.keys))
	for i, k := range f.keys {
		var err error
		out[i], err = nostr.GetPublicKey(k)
		require.NoError(t, err)
	}
	return out
}
