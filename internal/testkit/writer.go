package testkit

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// RunWriter returns an outbox writer on pool (default config) that runs, as
// every process that appends to the outbox runs one, until the test ends: its
// cleanup stops the writer and waits for it.
func RunWriter(t testing.TB, pool *pgxpool.Pool) *outbox.Writer {
	t.Helper()
	w := outbox.NewWriter(pool, outbox.WriterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}
