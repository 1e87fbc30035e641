package relay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestFollowerDeliversAVersionThatComesBack: version A (two topics, so two
// rows), a newer version B that replaces it, B deleted, A effective again: the
// outbox reads `A upsert x2, B upsert, B delete, A upsert x2`. Whatever the
// size of the follower's reads, A is delivered twice, each time with the seq
// of its run's first row (a subscription whose snapshot lies between the two
// runs needs the second), and never once per row.
func TestFollowerDeliversAVersionThatComesBack(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	vA := k.note(t, "version A", func(ev *nostr.Event) {
		ev.Kind, ev.Tags = 30023, nostr.Tags{{"d", "x"}, {"t", "go"}, {"t", "zig"}}
	})
	vB := k.note(t, "version B", func(ev *nostr.Event) {
		ev.Kind, ev.Tags, ev.CreatedAt = 30023, nostr.Tags{{"d", "x"}, {"t", "go"}}, vA.CreatedAt+1
	})
	rows := []outbox.Row{
		{Op: outbox.OpUpsert, EventID: vA.ID, TopicID: "go"},
		{Op: outbox.OpUpsert, EventID: vA.ID, TopicID: "zig"},
		{Op: outbox.OpUpsert, EventID: vB.ID, TopicID: "go"},
		{Op: outbox.OpDelete, EventID: vB.ID, TopicID: "go", Reason: "nip09"},
		{Op: outbox.OpUpsert, EventID: vA.ID, TopicID: "go"},
		{Op: outbox.OpUpsert, EventID: vA.ID, TopicID: "zig"},
	}
	for batch := 1; batch <= len(rows); batch++ {
		t.Run(fmt.Sprintf("reads of %d rows", batch), func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			var mu sync.Mutex
			var got []string
			f := newFollower(store, store, func(ev *nostr.Event, _ []byte, seq int64) {
				mu.Lock()
				got = append(got, fmt.Sprintf("%s@%d", map[string]string{vA.ID: "A", vB.ID: "B"}[ev.ID], seq))
				mu.Unlock()
			}, newMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
			f.batchSize = batch
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); f.run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			<-f.ready

			// All six rows commit at once; by the time the follower loads the
			// events, B is deleted (not visible) and A is.
			store.mu.Lock()
			store.events[vA.ID] = vA
			for _, r := range rows {
				store.seq++
				r.Seq, r.Kind = store.seq, 30023
				store.rows = append(store.rows, r)
			}
			wake := slices.Clone(store.listener)
			store.mu.Unlock()
			for _, w := range wake {
				w()
			}
			// The follower sets its seq after fanning a read's events out.
			require.Eventually(t, func() bool { return testutil.ToFloat64(f.m.followerSeq) == float64(len(rows)) }, waitTimeout, time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{"A@1", "A@5"}, got)
		})
	}
}

// TestFollowerTakesThisProcessEventsFromMemory: the events a batch of this
// process stored (committed: OK true, no message) are fanned out as the batch
// had them, without a load from the store; the events of rows it did not
// store (another process's, or a duplicate it was answered for) are loaded.
func TestFollowerTakesThisProcessEventsFromMemory(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	mine := k.note(t, "stored by this process", nil)
	other := k.note(t, "stored by another process", nil)
	dup := k.note(t, "a duplicate here, stored by another process", nil)
	store := newFakeStore()
	var mu sync.Mutex
	got := map[string]*nostr.Event{}
	f := newFollower(store, store, func(ev *nostr.Event, _ []byte, _ int64) {
		mu.Lock()
		got[ev.ID] = ev
		mu.Unlock()
	}, newMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	f.pollInterval = time.Hour // reads only when committed pokes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-f.ready

	// The store holds copies (what a load returns); the rows commit without
	// waking the follower. They become readable only once committed has
	// handed over the batch's events (the store's lock is held until then):
	// a read between the two (Listen's first wake-up can start one) would
	// rightly load them, which is not the path this test is about.
	store.mu.Lock()
	for _, ev := range []*nostr.Event{mine, other, dup} {
		c := *ev
		store.events[ev.ID] = &c
		store.seq++
		store.rows = append(store.rows, outbox.Row{Seq: store.seq, Op: outbox.OpUpsert, EventID: ev.ID, TopicID: "go", Kind: ev.Kind})
	}
	f.committed([]*nostr.Event{mine, dup}, []IngestResult{{OK: true}, {OK: true, Message: "duplicate: already have this event"}})
	store.mu.Unlock()

	require.Eventually(t, func() bool { return testutil.ToFloat64(f.m.followerSeq) == 3 }, waitTimeout, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3)
	require.Same(t, mine, got[mine.ID], "this process's event is the batch's, not loaded")
	require.NotSame(t, other, got[other.ID])
	require.Equal(t, other.ID, got[other.ID].ID)
	require.NotSame(t, dup, got[dup.ID], "a duplicate is loaded: the stored event is the first one's")
	require.Empty(t, f.local.take(), "a read takes what was kept")
}

// countingFeed is a fakeStore that counts the follower's reads.
type countingFeed struct {
	*fakeStore
	reads atomic.Int64
}

func (c *countingFeed) ReadAfter(ctx context.Context, after int64, limit int, buf []outbox.Row) ([]outbox.Row, error) {
	c.reads.Add(1)
	return c.fakeStore.ReadAfter(ctx, after, limit, buf)
}

// TestFollowerReadsOncePerWakeUp: a read that returns fewer rows than the
// follower's batch had every committed row; the follower then waits for the
// next wake-up instead of reading again to find nothing. Twenty batches, each
// committed and announced (committed) once the previous one is handled, take
// one read each (plus at most two at the start: the first read and Listen's
// first wake-up); reading again after every short read took about twice as
// many.
func TestFollowerReadsOncePerWakeUp(t *testing.T) {
	t.Parallel()
	const batches = 20
	k := newKey(t)
	feed := &countingFeed{fakeStore: newFakeStore()}
	f := newFollower(feed, feed.fakeStore, func(*nostr.Event, []byte, int64) {}, newMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	f.pollInterval = time.Hour // reads only when woken
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-f.ready

	for i := 1; i <= batches; i++ {
		ev := k.note(t, fmt.Sprintf("batch %d", i), nil)
		store := feed.fakeStore
		store.mu.Lock()
		store.events[ev.ID] = ev
		store.seq++
		store.rows = append(store.rows, outbox.Row{Seq: store.seq, Op: outbox.OpUpsert, EventID: ev.ID, TopicID: "go", Kind: ev.Kind})
		store.mu.Unlock()
		f.committed([]*nostr.Event{ev}, []IngestResult{{OK: true}})
		require.Eventually(t, func() bool { return testutil.ToFloat64(f.m.followerSeq) == float64(i) }, waitTimeout, time.Millisecond)
	}
	require.LessOrEqual(t, feed.reads.Load(), int64(batches+2), "one read per wake-up")
}
