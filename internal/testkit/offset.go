package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// pollEvery is how often AwaitOffset reads the offset: short, so that a
// benchmark's figure is not rounded up by the wait.
const pollEvery = 2 * time.Millisecond

// WaitTimeout bounds WaitOffset and WaitCaughtUp.
const WaitTimeout = 60 * time.Second

// AwaitOffset returns once the consumer named has committed seq (its offset in
// cn_relay.consumer_offsets is at least seq), or with ctx's error. A consumer
// not registered yet has offset 0. Read errors are retried: the consumer may be
// starting.
func AwaitOffset(ctx context.Context, pool *pgxpool.Pool, name string, seq int64) error {
	for {
		if last, err := consumer.Offset(ctx, pool, name); err == nil && last >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// WaitOffset waits, for at most WaitTimeout, until the consumer named has
// committed seq, and fails the test with its offset if it does not.
func WaitOffset(t testing.TB, pool *pgxpool.Pool, name string, seq int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := AwaitOffset(ctx, pool, name, seq); err != nil {
		last, rerr := consumer.Offset(context.Background(), pool, name)
		t.Fatalf("consumer %s did not reach seq %d within %s: offset %d (%v)", name, seq, WaitTimeout, last, rerr)
	}
}

// WaitCaughtUp waits until the consumer named has committed the outbox head as
// it is now, and returns that head.
func WaitCaughtUp(t testing.TB, pool *pgxpool.Pool, name string) int64 {
	t.Helper()
	head, err := outbox.Head(context.Background(), pool)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	WaitOffset(t, pool, name, head)
	return head
}

// CatchUp times a consumer draining the outbox, for the catch-up benchmarks:
// with b's timer running only meanwhile, it starts run (a consumer's Run) and
// each of also on a context of their own, waits until the consumer named has
// committed head, then cancels them. It fails b if run returns before head or
// with an error, and returns the time taken.
func CatchUp(b *testing.B, pool *pgxpool.Pool, name string, head int64, run func(context.Context) error, also ...func(context.Context)) time.Duration {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	done := make(chan error, 1)
	b.StartTimer()
	start := time.Now()
	go func() {
		err := run(ctx)
		stopWaiting()
		done <- err
	}()
	for _, f := range also {
		go f(ctx)
	}
	if err := AwaitOffset(waitCtx, pool, name, head); err != nil {
		b.StopTimer()
		cancel()
		b.Fatalf("consumer %s stopped before seq %d: %v", name, head, <-done)
	}
	took := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return took
}

// SetHead moves the outbox head (cn_relay.outbox_head, which every append
// moves) to the highest seq in cn_relay.events_outbox and returns it: for the
// benchmarks' loaders, which COPY rows into the outbox directly. Without it
// the head stays 0 and a catch-up is over before it starts.
func SetHead(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	if _, err := pool.Exec(ctx, `UPDATE cn_relay.outbox_head
		SET seq = greatest(seq, (SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox))`); err != nil {
		return 0, err
	}
	return outbox.Head(ctx, pool)
}
