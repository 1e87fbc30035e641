package outbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

// TestWriteWaitsForItsTurn: a write with a turn runs nothing before the
// pipeline's lock is free (here a session holds it, as the previous
// transaction of the pipeline does until its commit), whether its callback
// reads (the lock goes in front of its first statement) or not (the lock is
// taken before the commit pipeline); sent is called once the turn is held,
// and on a failure.
func TestWriteWaitsForItsTurn(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	w := NewWriter(db.Pool, WriterConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, reads := range []bool{true, false} {
		hold, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = hold.Exec(ctx, turnLockSQL, "p")
		require.NoError(t, err)

		sent := make(chan struct{}, 2)
		done := make(chan error, 1)
		ran := make(chan struct{}, 1)
		go func() {
			_, err := w.WriteBatch(WithTurn(ctx, "p", func() { sent <- struct{}{} }), func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) ([]Record, error) {
				if reads {
					var one int
					var rb pgx.Batch
					rb.Queue("SELECT 1").QueryRow(func(r pgx.Row) error { return r.Scan(&one) })
					if err := tx.SendBatch(ctx, &rb).Close(); err != nil {
						return nil, err
					}
					ran <- struct{}{}
				}
				return []Record{rec("turn")}, nil
			})
			done <- err
		}()
		require.Eventually(t, func() bool {
			var n int
			err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
				WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`).Scan(&n)
			return err == nil && n == 1
		}, 30*time.Second, 5*time.Millisecond, "the write waits for its turn")
		require.Empty(t, ran, "its reads wait behind the turn")
		require.Empty(t, sent)
		require.NoError(t, hold.Rollback(ctx))
		require.NoError(t, <-done)
		require.Len(t, sent, 1, "sent once")
	}

	// A failing callback still reports sent (the caller's next may start).
	sent := make(chan struct{}, 2)
	_, err := w.WriteBatch(WithTurn(ctx, "p", func() { sent <- struct{}{} }), func(context.Context, pgx.Tx, *pgx.Batch) ([]Record, error) {
		return nil, errors.New("no")
	})
	require.Error(t, err)
	require.Len(t, sent, 1)

	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox WHERE event_id = 'turn'").Scan(&n))
	require.Equal(t, 2, n)
}
