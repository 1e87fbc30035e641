package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestPipelinedBatchesSeeTheirPredecessor: two batches of one write pipeline
// (outbox.WithTurn, as the relay's batcher runs them), the second started as
// soon as the first has sent its COMMIT, while that COMMIT is held up (a
// session holds the outbox append lock): the second's reads wait for the
// first's commit, so it decides on what the first wrote. An event and its
// deletion (no effective key in common: nothing else orders them), and a
// replaceable event and its newer version, end as if sent one after the other.
func TestPipelinedBatchesSeeTheirPredecessor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	note := f.event(t, 0, 1, base, nostr.Tags{topic("a")}, "to delete")
	del := f.event(t, 0, 5, base+1, nostr.Tags{{"e", note.ID}, topic("a")}, "")
	r1, r2 := pipelined(t, f, []*nostr.Event{note}, []*nostr.Event{del})
	require.Equal(t, []protocol.Verdict{{OK: true}}, r1)
	require.Equal(t, []protocol.Verdict{{OK: true}}, r2)
	require.Equal(t, []string{del.ID}, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"a"}}, Limit: 10}),
		"the deletion in the next batch deleted the event of the batch before it")
	var reason string
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		"SELECT coalesce(deleted_reason, '') FROM cn_relay.events WHERE id = $1", note.ID).Scan(&reason))
	require.NotEmpty(t, reason, "the event is marked deleted")

	v1 := f.event(t, 1, 0, base, nostr.Tags{topic("p")}, "v1")
	v2 := f.event(t, 1, 0, base+1, nostr.Tags{topic("p")}, "v2")
	r1, r2 = pipelined(t, f, []*nostr.Event{v1}, []*nostr.Event{v2})
	require.Equal(t, []protocol.Verdict{{OK: true}}, r1)
	require.Equal(t, []protocol.Verdict{{OK: true}}, r2)
	require.Equal(t, []string{v2.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Authors: []string{v1.PubKey}, Limit: 10}))
	var effective bool
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		"SELECT is_effective FROM cn_relay.events WHERE id = $1", v1.ID).Scan(&effective))
	require.False(t, effective, "the older version made way")
}

// pipelined ingests first and then second in one write pipeline: second
// starts once first holds its turn and has sent its COMMIT, which waits for
// the outbox append lock this function holds until both batches wait on the
// server. It returns both batches' verdicts.
func pipelined(t *testing.T, f *fixture, first, second []*nostr.Event) ([]protocol.Verdict, []protocol.Verdict) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hold, err := f.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", outbox.LockKey)
	require.NoError(t, err)

	type result struct {
		v   []protocol.Verdict
		err error
	}
	pipeline := "test-" + t.Name()
	sent := make(chan struct{})
	done1, done2 := make(chan result, 1), make(chan result, 1)
	go func() {
		v, err := f.store.Ingest(outbox.WithTurn(ctx, pipeline, sync.OnceFunc(func() { close(sent) })), first)
		done1 <- result{v, err}
	}()
	select {
	case <-sent:
	case r := <-done1:
		t.Fatalf("the first batch returned before sending its COMMIT: %v", r.err)
	case <-ctx.Done():
		t.Fatal("the first batch never sent its COMMIT")
	}
	go func() {
		v, err := f.store.Ingest(outbox.WithTurn(ctx, pipeline, func() {}), second)
		done2 <- result{v, err}
	}()
	// Both wait on the server: the first for the append lock, the second
	// for its turn (without one: for a row or lock the first holds).
	require.Eventually(t, func() bool {
		var n int
		err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n >= 2
	}, 30*time.Second, 5*time.Millisecond, "both batches wait on a lock")
	require.NoError(t, hold.Rollback(ctx))
	r1, r2 := <-done1, <-done2
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	return r1.v, r2.v
}
