package relay

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// pipeConn is a relay connection on one end of a net.Pipe whose other end
// is read and thrown away: its writer never waits. It is tracked by r (shed
// looks at the tracked connections) and never read (nothing calls start).
func pipeConn(t *testing.T, r *Relay) *conn {
	t.Helper()
	ours, theirs := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, theirs) }()
	c := newConnOn(r, wsconn.New(ours), "127.0.0.1", "127.0.0.1")
	c.w.Start(c) // (the first writer finds nothing and ends: the first kick starts one)
	require.True(t, r.track(c))
	t.Cleanup(func() {
		c.closeWith(closePeerGone)
		_ = ours.Close()
		_ = theirs.Close()
	})
	return c
}

// TestQueryResultsWaitForRelayRoom: a query result that finds the relay's
// budget full, filled by the rows another connection's query is reading,
// waits for room instead of shedding that connection (its client is not slow:
// nothing was even queued for it yet); the bytes it gives back wake the wait.
// Shedding at once disconnected clients whose REQs had not run yet and, since
// a shed client's rows come back only when its queries notice, shed one
// client after another for one message (TestRelayWideBudget failed so, about
// once in ten runs, with either transport). It fails on the step before: a is
// shed at once.
func TestQueryResultsWaitForRelayRoom(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.SendQueueBytes, cfg.TotalQueueBytes = 256<<10, 256<<10
	cfg.WriteTimeout = time.Minute // (far above the test: no room comes by the timer)
	store := newFakeStore()
	r, err := New(cfg, Deps{Store: store, Feed: store})
	require.NoError(t, err)
	a, b := pipeConn(t, r), pipeConn(t, r)

	// a's query holds 192 KiB of rows it has read and not queued yet.
	const rows = 192 << 10
	require.Equal(t, wsconn.Taken, a.mem.Take(rows, a.mem.BulkLimit(), false))
	queued := make(chan bool, 1)
	go func() {
		queued <- b.enqueueBulk(context.Background(), plainMsg(bytes.Repeat([]byte("x"), 80<<10)))
	}()
	// b waits (it asked to be woken by the relay's budget) or, on the step
	// before, shed a: polled, not slept.
	deadline := time.Now().Add(waitTimeout)
	for !r.mem.Waited() && !a.closing() {
		require.True(t, time.Now().Before(deadline), "b neither waits nor sheds")
		time.Sleep(time.Millisecond)
	}
	require.False(t, a.closing(), "a was shed while its own query held the relay's budget")
	select {
	case ok := <-queued:
		t.Fatalf("the result did not wait for room (queued: %v)", ok)
	default:
	}
	a.mem.Give(rows) // a's query queues or ends: its rows come back
	select {
	case ok := <-queued:
		require.True(t, ok, "b's result is queued once the room came back")
	case <-time.After(waitTimeout):
		t.Fatal("the room given back did not wake b's wait")
	}
	require.False(t, a.closing())
	require.False(t, b.closing())
	require.Zero(t, testutil.ToFloat64(r.m.slowDisconnects), "nobody was disconnected as too slow")
}

// TestQueryResultsShedAfterWriteTimeout: when no room comes within
// WriteTimeout, a query result that finds the relay's budget full still sheds
// the connection holding the most (and only it: the wait begins again, for the
// shed client's bytes), and is queued once those come back.
func TestQueryResultsShedAfterWriteTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.SendQueueBytes, cfg.TotalQueueBytes = 256<<10, 256<<10
	cfg.WriteTimeout = 100 * time.Millisecond
	store := newFakeStore()
	r, err := New(cfg, Deps{Store: store, Feed: store})
	require.NoError(t, err)
	a, b, c := pipeConn(t, r), pipeConn(t, r), pipeConn(t, r)

	// a holds 160 KiB, c 32 KiB: neither is queued (their queries hold them).
	require.Equal(t, wsconn.Taken, a.mem.Take(160<<10, a.mem.BulkLimit(), false))
	require.Equal(t, wsconn.Taken, c.mem.Take(32<<10, c.mem.BulkLimit(), false))
	queued := make(chan bool, 1)
	go func() {
		queued <- b.enqueueBulk(context.Background(), plainMsg(bytes.Repeat([]byte("x"), 80<<10)))
	}()
	deadline := time.Now().Add(waitTimeout)
	for !a.closing() {
		require.True(t, time.Now().Before(deadline), "a was not shed")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.slowDisconnects))
	select {
	case ok := <-queued:
		t.Fatalf("the result was not waiting for the shed client's bytes (queued: %v)", ok)
	default:
	}
	a.mem.Give(160 << 10) // a's query notices it is closed and ends
	select {
	case ok := <-queued:
		require.True(t, ok)
	case <-time.After(waitTimeout):
		t.Fatal("the shed client's bytes did not wake b's wait")
	}
	require.False(t, c.closing(), "only the connection holding the most is shed")
	require.False(t, b.closing())
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.slowDisconnects))
	c.mem.Give(32 << 10)
}
