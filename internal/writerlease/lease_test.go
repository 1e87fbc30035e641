package writerlease_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/writerlease"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// run renews l (Run) until the test ends or stop is called.
func run(t *testing.T, l *writerlease.Lease) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); require.NoError(t, <-done) }) }
	t.Cleanup(stop)
	return stop
}

// TestNewcomerWaitsOutTheSoleRelay: a relay alone is sole, from the outbox
// head on; a second relay's Register returns at once, but its Await (which
// holds its acknowledgements) returns only once the first has stopped
// trusting its memory (here: the first does not renew, so its trust runs
// out), and from then on the first is not sole; once the second releases
// its row, the first is sole again at its next renewal, and Note raises the
// floor.
func TestNewcomerWaitsOutTheSoleRelay(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = 500 * time.Millisecond
	a := writerlease.New(db.Pool, ttl, nil)
	_, ok := a.Sole()
	require.False(t, ok, "sole before Register")
	require.False(t, a.Holds(), "holds before Register")
	require.NoError(t, a.Register(ctx))
	require.True(t, a.Holds())
	require.NoError(t, a.Await(ctx))
	floor, ok := a.Sole()
	require.True(t, ok, "a relay alone is sole")
	require.Zero(t, floor, "an empty outbox's head")

	b := writerlease.New(db.Pool, ttl, nil)
	require.NoError(t, b.Register(ctx))
	require.False(t, b.Holds(), "a newcomer may acknowledge while the first relay trusts its memory")
	_, ok = b.Sole()
	require.False(t, ok, "a newcomer is sole next to a sole relay")
	stopB := run(t, b)
	require.NoError(t, b.Await(ctx))
	// The invariant: when the newcomer may acknowledge, the first no longer
	// trusts its memory.
	_, ok = a.Sole()
	require.False(t, ok, "the newcomer may acknowledge writes while the first relay trusts its memory")
	require.True(t, b.Holds())

	// With the second renewing, the first comes back: it waits until the
	// second no longer trusts its memory (if it was sole: the first's row
	// lapsed), and neither is sole.
	require.NoError(t, a.Register(ctx))
	run(t, a)
	require.NoError(t, a.Await(ctx))
	_, ok = b.Sole()
	require.False(t, ok, "a relay may acknowledge writes while another trusts its memory")
	_, ok = a.Sole()
	require.False(t, ok, "sole next to a live relay")
	require.True(t, a.Holds())

	stopB() // (as the relay does: Run ends before Release)
	require.NoError(t, b.Release(ctx))
	require.False(t, b.Holds(), "holds after Release")
	require.ErrorIs(t, b.Await(ctx), writerlease.ErrLost, "Await after Release")
	var head int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT seq FROM cn_relay.outbox_head").Scan(&head))
	require.Eventually(t, func() bool { _, ok := a.Sole(); return ok }, 5*time.Second, 5*time.Millisecond,
		"sole again once the other released its row")
	floor, _ = a.Sole()
	require.Equal(t, head, floor)
	a.Note(head + 5)
	floor, _ = a.Sole()
	require.Equal(t, head+5, floor, "Note raises the floor")
}

// TestAwaitIsLostWithoutRenewals: a relay whose renewals stop (its
// database unreachable) is told at once that it may not acknowledge, not
// held: Await returns ErrLost once its last renewal's TTL is over.
func TestAwaitIsLostWithoutRenewals(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	a := writerlease.New(db.Pool, ttl, nil)
	require.NoError(t, a.Register(ctx))
	require.NoError(t, a.Await(ctx))
	require.Eventually(t, func() bool { return !a.Holds() }, 5*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, a.Await(ctx), writerlease.ErrLost)
}

// waits counts the lease's "acknowledgements of writes held until it stops" waits.
type waits struct {
	slog.Handler
	n *atomic.Int32
}

func (w waits) Enabled(context.Context, slog.Level) bool { return true }

func (w waits) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "acknowledgements of writes held until it stops") {
		w.n.Add(1)
	}
	return nil
}

func countingLogger() (*slog.Logger, *atomic.Int32) {
	n := new(atomic.Int32)
	return slog.New(waits{Handler: slog.DiscardHandler, n: n}), n
}

// TestRestartAfterACrashWaitsOneTTL: a relay that restarts after its sole
// predecessor died without releasing its row waits once, for one TTL from
// first reading that row's sole renewal, not again at each renewal while the
// dead row still counts as live (it did twice: issue 50's reverted lease).
func TestRestartAfterACrashWaitsOneTTL(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = 500 * time.Millisecond
	dead := writerlease.New(db.Pool, ttl, nil)
	require.NoError(t, dead.Register(ctx))
	_, ok := dead.Sole()
	require.True(t, ok)
	// dead renews no more, as after a SIGKILL.

	logger, n := countingLogger()
	next := writerlease.New(db.Pool, ttl, logger)
	start := time.Now()
	require.NoError(t, next.Register(ctx))
	require.False(t, next.Holds(), "acknowledges while the dead relay may trust its memory")
	run(t, next)
	require.NoError(t, next.Await(ctx))
	took := time.Since(start)
	require.GreaterOrEqual(t, took, ttl, "acknowledges before the dead relay's trust has ended")
	require.Less(t, took, 2*ttl, "waited more than one TTL")
	// Until the dead row stops counting (TTL past its expiry), renewals read
	// its sole renewal again: no new wait.
	require.Eventually(t, func() bool { _, ok := next.Sole(); return ok }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int32(1), n.Load(), "waits for the dead relay's one sole renewal")
	require.True(t, next.Holds())
}

// TestNewcomerWaitsForTheLastSoleRenewal: a relay's renewal that is not
// sole keeps its row's sole_until, so that a newcomer reading the row after
// it still waits out the trust of the relay's last sole renewal (that
// relay may not have received the answer that ends its trust yet).
func TestNewcomerWaitsForTheLastSoleRenewal(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = time.Second
	a := writerlease.New(db.Pool, ttl, nil)
	require.NoError(t, a.Register(ctx))
	_, ok := a.Sole()
	require.True(t, ok)
	// x's row makes a's next renewal not sole.
	x := writerlease.New(db.Pool, ttl, nil)
	xCtx, stopX := context.WithCancel(ctx)
	defer stopX()
	go func() { _ = x.Register(xCtx) }()
	require.Eventually(t, func() bool {
		var rows int
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.writer_lease").Scan(&rows))
		return rows == 2
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, a.Register(ctx))
	_, ok = a.Sole()
	require.False(t, ok, "sole next to a live relay")

	logger, n := countingLogger()
	w := writerlease.New(db.Pool, ttl, logger)
	require.NoError(t, w.Register(ctx))
	require.False(t, w.Holds(), "a newcomer may acknowledge while a's last sole renewal may be trusted")
	require.GreaterOrEqual(t, n.Load(), int32(1), "a newcomer did not wait out a's last sole renewal")
}
