package outbox

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lazyTx is WriteBatch's transaction: its BEGIN is not a round trip of its
// own but travels with the first statement (the first batch's first query,
// or the commit pipeline when fn read nothing). On a busy machine the first
// round trip of a batch pays the wake-up of an idle backend; this way it
// carries the batch's reads.
type lazyTx struct {
	conn  *pgx.Conn
	begun bool
}

var errLazyTxNested = errors.New("outbox: no nested transaction in a write")

// queueBegin prepends BEGIN to b unless the transaction has begun.
func (t *lazyTx) queueBegin(b *pgx.Batch) {
	if t.begun {
		return
	}
	t.begun = true
	q := &pgx.QueuedQuery{SQL: "BEGIN"}
	q.Exec(func(pgconn.CommandTag) error { return nil })
	b.QueuedQueries = append([]*pgx.QueuedQuery{q}, b.QueuedQueries...)
}

// begin begins the transaction on its own unless it has begun.
func (t *lazyTx) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.conn.Exec(ctx, "BEGIN")
	return err
}

// rollback ends the transaction if it has begun; a failure leaves the
// connection in a transaction, which the pool then closes.
func (t *lazyTx) rollback(ctx context.Context) {
	if t.begun {
		_, _ = t.conn.Exec(ctx, "ROLLBACK")
	}
}

func (t *lazyTx) Begin(context.Context) (pgx.Tx, error) { return nil, errLazyTxNested }
func (t *lazyTx) Commit(context.Context) error          { return errWriteTxControl }
func (t *lazyTx) Rollback(context.Context) error        { return errWriteTxControl }

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t.queueBegin(b)
	return t.conn.SendBatch(ctx, b)
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, cols, src)
}

func (t *lazyTx) LargeObjects() pgx.LargeObjects {
	panic("outbox: large objects are not available in a write")
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *lazyTx) Conn() *pgx.Conn { return t.conn }
