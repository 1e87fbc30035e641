package outbox

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kukuri/communitynode/schema"
)

// turnLockSQL takes a pipeline's turn (schema.TurnLockSQL).
const turnLockSQL = "SELECT pg_advisory_xact_lock(" + schema.TurnLockSQL + ")"

// turnKey is the context key of a Turn.
type turnKey struct{}

// turn is what WithTurn puts in a context.
type turn struct {
	pipeline string
	sent     func()
}

// WithTurn returns ctx for a WriteBatch that is one transaction of a write
// pipeline: a caller that starts the next transaction while this one's COMMIT
// is in flight (the relay's group commit), and whose next transaction must
// nevertheless read what this one wrote.
//
// The transaction's first statement, whatever it is, is preceded by the
// transaction-level lock of pipeline (schema.TurnLockSQL; a random name, one
// per pipeline), held to the end of the transaction. The next transaction of
// the pipeline queues its first statement behind that lock on the server, so
// its reads run only once this one has committed (Postgres releases a
// transaction's locks after its commit is durable and visible) or rolled
// back, with no client round trip in between: the reads see every row this
// one wrote, exactly as if it had started after this one's WriteBatch
// returned. Seq order and the append lock are untouched (the append still
// takes LockKey right before its insert, under the turn).
//
// sent is called once this transaction holds its turn and its last pipeline
// (its queued writes, the append and the COMMIT) has been sent, or when
// WriteBatch fails before that: from then on the caller may start the next
// transaction of the pipeline, whose turn lock request then reaches the
// server after this one's lock was granted. It may be called more than once
// (a caller that retries a failed WriteBatch with the same ctx); callers act
// on the first call. A retry takes the turn again: if the next transaction
// started meanwhile, the retry reads and commits after it, as if the two had
// arrived in the other order (each still sees the other's rows or none).
func WithTurn(ctx context.Context, pipeline string, sent func()) context.Context {
	return context.WithValue(ctx, turnKey{}, &turn{pipeline: pipeline, sent: sent})
}

func turnOf(ctx context.Context) *turn {
	t, _ := ctx.Value(turnKey{}).(*turn)
	return t
}

// turnTx is the transaction of a WriteBatch with a turn: its first statement
// takes the turn first (prepended to a batch, or as its own statement).
type turnTx struct {
	pgx.Tx
	pipeline string
	taken    bool
}

// queue prepends the turn lock to b if it is not taken yet and reports
// whether it did.
func (t *turnTx) queue(b *pgx.Batch) bool {
	if t.taken {
		return false
	}
	t.taken = true
	q := &pgx.QueuedQuery{SQL: turnLockSQL, Arguments: []any{t.pipeline}}
	q.Exec(func(pgconn.CommandTag) error { return nil })
	b.QueuedQueries = append([]*pgx.QueuedQuery{q}, b.QueuedQueries...)
	return true
}

// take takes the turn as a statement of its own unless it is taken.
func (t *turnTx) take(ctx context.Context) error {
	if t.taken {
		return nil
	}
	t.taken = true
	_, err := t.Tx.Exec(ctx, turnLockSQL, t.pipeline)
	return err
}

func (t *turnTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t.queue(b)
	return t.Tx.SendBatch(ctx, b)
}

func (t *turnTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.take(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *turnTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.take(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t *turnTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.take(ctx); err != nil {
		return errRow{err}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *turnTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.take(ctx); err != nil {
		return 0, err
	}
	return t.Tx.CopyFrom(ctx, table, cols, src)
}

// errRow is a pgx.Row that fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
