package relay

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// lingeringBatcher returns a running pipelined batcher on store whose batches
// seem to take a minute each (so that a linger, half of it, outlasts the test
// unless the events it waits for end it) and whose timer never fires first.
func lingeringBatcher(t *testing.T, store Store) *batcher {
	t.Helper()
	cfg := DefaultConfig()
	cfg.IngestConcurrency = 1
	cfg.BatchMaxDelay = 10 * time.Minute
	b := newBatcher(cfg, store, newMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler), func([]*nostr.Event, []IngestResult) {})
	b.since = func(time.Time) time.Duration { return time.Minute }
	go b.run()
	t.Cleanup(b.close)
	return b
}

// batchesOf waits for n Ingest calls of store and returns their events' ids.
func batchesOf(t *testing.T, store *fakeStore, n int) [][]string {
	t.Helper()
	var out [][]string
	require.Eventually(t, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		if len(store.batches) < n {
			return false
		}
		out = nil
		for _, b := range store.batches {
			var ids []string
			for _, ev := range b {
				ids = append(ids, ev.ID)
			}
			out = append(out, ids)
		}
		return true
	}, waitTimeout, time.Millisecond)
	return out
}

// TestBatcherWaitsForWhatItsRepliesBringBack: one event in flight per client.
// Client 1's event commits while client 2's queues; once client 1 has its OK
// and sends its next event, that event joins client 2's in one batch (one WAL
// flush for both), instead of client 2's starting alone the moment the first
// batch replied and client 1's following in a batch of its own.
func TestBatcherWaitsForWhatItsRepliesBringBack(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	e1, e2, e3 := k.note(t, "client 1", nil), k.note(t, "client 2", nil), k.note(t, "client 1 again", nil)
	store := newFakeStore()
	release := make(chan struct{})
	store.ingestHook = func(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error) {
		if evs[0].ID == e1.ID {
			<-release
		}
		return store.store(evs), nil
	}
	b := lingeringBatcher(t, store)
	replied := make(chan IngestResult, 3)
	reply := func(r IngestResult) { replied <- r }
	require.True(t, b.submit(e1, reply))
	batchesOf(t, store, 1) // e1 is committing
	require.True(t, b.submit(e2, reply))
	close(release)
	require.True(t, (<-replied).OK)
	require.True(t, b.submit(e3, reply)) // client 1's next event, after its OK
	got := batchesOf(t, store, 2)
	require.Equal(t, [][]string{{e1.ID}, {e2.ID, e3.ID}}, got)
	require.True(t, (<-replied).OK)
	require.True(t, (<-replied).OK)
}

// TestBatcherLoneClientDoesNotWait: a lone client's next event is the one
// awaited: its batch starts at once, not after the linger.
func TestBatcherLoneClientDoesNotWait(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	store := newFakeStore()
	b := lingeringBatcher(t, store)
	replied := make(chan IngestResult, 1)
	reply := func(r IngestResult) { replied <- r }
	for i := range 3 {
		require.True(t, b.submit(k.note(t, "alone", nil), reply))
		select {
		case r := <-replied:
			require.True(t, r.OK)
		case <-time.After(waitTimeout):
			t.Fatalf("event %d: no reply (waiting for a linger of %s?)", i, time.Minute/2)
		}
	}
	require.Len(t, batchesOf(t, store, 3), 3)
}
