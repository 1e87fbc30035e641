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
