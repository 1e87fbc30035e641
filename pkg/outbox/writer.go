package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// WriterConfig tunes a Writer. Zero values mean the defaults.
type WriterConfig struct {
	NotifyInterval    time.Duration // default DefaultNotifyInterval
	PartitionCheck    time.Duration // how often partitions are checked anyway; default 1 minute
	PartitionsAhead   int           // default DefaultPartitionsAhead
	Logger            *slog.Logger
	Registerer        prometheus.Registerer // may be nil
	disableAppendLock bool                  // tests and benchmarks only
}

// Writer runs write transactions that end with an outbox append, announces them
// after commit, and keeps outbox partitions ready in the background. Call Run in a
// goroutine for the lifetime of the Writer; Write works without it, but then nothing
// is announced and partitions are not extended (the default partition catches rows).
type Writer struct {
	pool     *pgxpool.Pool
	notifier *Notifier
	cfg      WriterConfig

	// announced is the highest seq passed to Notify (see Announced).
	announced atomic.Int64
	// extendAt is the seq at which the background keeper should add partitions.
	extendAt atomic.Int64
	extend   chan struct{}
}

// NewWriter returns a Writer on pool.
func NewWriter(pool *pgxpool.Pool, cfg WriterConfig) *Writer {
	if cfg.PartitionCheck <= 0 {
		cfg.PartitionCheck = time.Minute
	}
	if cfg.PartitionsAhead <= 0 {
		cfg.PartitionsAhead = DefaultPartitionsAhead
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{
		pool:     pool,
		notifier: NewNotifier(pool, cfg.NotifyInterval, cfg.Logger, cfg.Registerer),
		cfg:      cfg,
		extend:   make(chan struct{}, 1),
	}
	w.extendAt.Store(math.MaxInt64)
	return w
}

// Write runs fn in a new transaction, appends the records fn returns as the
// transaction's last statement, commits, and only then hands the new head to the
// notifier. If fn or the append fails, the transaction is rolled back and nothing
// is appended or announced. fn may return no records; the transaction is then
// committed without touching the outbox. fn must not commit or roll back tx.
//
// When Write returns nil the transaction is committed and durable (flushed to the
// WAL as the server's synchronous_commit setting asks). To keep the disk flush out
// of the append lock, the lock, the insert, an asynchronous COMMIT and then a tiny
// synchronous transaction travel to the server in one pipeline: the lock is held
// from the insert to the (now fast) commit only, with no client round trip inside
// it, and the synchronous transaction's commit flushes the WAL up to and including
// the first commit (WAL is flushed in order). Writers flushing at the same moment
// share one disk write (group commit), which they could not do while holding the
// lock. Rows are visible to readers from the first commit on; after a crash, WAL
// order guarantees that a lost transaction takes every later one with it, so the
// outbox never has a hole. If only the flush fails, the rows are committed and
// announced and Write returns an error wrapping ErrDurabilityUnknown.
func (w *Writer) Write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) ([]Record, error)) (Range, error) {
	return w.WriteBatch(ctx, func(ctx context.Context, tx pgx.Tx, _ *pgx.Batch) ([]Record, error) { return fn(ctx, tx) })
}

// WriteBatch is Write for callers that can queue their writes instead of running
// them: the statements fn queues on b run, in order, in the same pipeline as the
// append and the commit, which saves their round trips. If one of them fails,
// nothing is committed and WriteBatch returns its error. fn may still run
// statements (reads, typically) through tx.
func (w *Writer) WriteBatch(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) ([]Record, error)) (Range, error) {
	pc, err := w.pool.Acquire(ctx)
	if err != nil {
		return Range{}, fmt.Errorf("acquire connection: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return Range{}, fmt.Errorf("begin write: %w", err)
	}
	open := true
	defer func() {
		if open {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var b pgx.Batch
	recs, err := fn(ctx, writeTx{tx}, &b)
	if err != nil {
		return Range{}, err
	}
	var r Range
	if len(recs) > 0 {
		if err := queueAppend(&b, recs, appendOptions{lock: !w.cfg.disableAppendLock, asyncCommit: true}, &r); err != nil {
			return Range{}, err
		}
	}
	committed := false
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT" // an aborted transaction answers ROLLBACK
		return nil
	})
	if len(recs) > 0 {
		// A transaction with an xid commits synchronously, flushing all WAL before it.
		b.Queue("BEGIN")
		b.Queue("SELECT pg_current_xact_id()")
		b.Queue("COMMIT")
	}
	err = conn.SendBatch(ctx, &b).Close()
	if committed {
		open = false
		if r.Count > 0 {
			w.Notify(r.Last)
		}
	}
	switch {
	case err != nil && committed:
		// The flush transaction may be open or aborted; pgx closes a connection whose
		// rollback fails, so none is handed out in a transaction.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return r, fmt.Errorf("flush write: %w: %w", ErrDurabilityUnknown, err)
	case err != nil:
		return Range{}, fmt.Errorf("append and commit: %w", err)
	case !committed:
		return Range{}, errors.New("append and commit: the transaction was rolled back")
	}
	return r, nil
}

// ErrDurabilityUnknown reports a write that committed (its rows are visible and were
// announced) but whose WAL flush could not be confirmed.
var ErrDurabilityUnknown = errors.New("committed, durability not confirmed")

// writeTx is the transaction Write hands to its callback. Write ends the
// transaction itself, so ending it or nesting another inside it is refused.
type writeTx struct{ pgx.Tx }

var errWriteTxControl = errors.New("outbox.Write owns the transaction: do not begin, commit or roll back inside it")

func (writeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errWriteTxControl }
func (writeTx) Commit(context.Context) error          { return errWriteTxControl }
func (writeTx) Rollback(context.Context) error        { return errWriteTxControl }

// Notify announces seq after its transaction committed. Write calls it; callers that
// use Append on their own transaction call it after their commit.
func (w *Writer) Notify(seq int64) {
	for cur := w.announced.Load(); seq > cur && !w.announced.CompareAndSwap(cur, seq); cur = w.announced.Load() {
	}
	w.notifier.Notify(seq)
	if seq >= w.extendAt.Load() {
		select {
		case w.extend <- struct{}{}:
		default:
		}
	}
}

// Announced returns the highest seq announced through w (Notify): every row up
// to it that this process appended through w is committed. A reader in the
// same process that has applied the outbox up to it has seen this process's
// writes (read your writes).
func (w *Writer) Announced() int64 { return w.announced.Load() }

// Run sends notifications and keeps partitions ahead of the head until ctx is done.
func (w *Writer) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.notifier.Run(ctx) })
	g.Go(func() error { return w.keepPartitions(ctx) })
	return g.Wait()
}

func (w *Writer) keepPartitions(ctx context.Context) error {
	t := time.NewTicker(w.cfg.PartitionCheck)
	defer t.Stop()
	for {
		if err := w.ensurePartitions(ctx); err != nil && !errors.Is(err, context.Canceled) {
			w.cfg.Logger.Error("outbox partitions", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.extend:
		}
	}
}

// ensurePartitions extends the partitions and re-arms extendAt at the start of the
// first partition beyond the head's, so that the next extension starts while whole
// empty partitions remain.
func (w *Writer) ensurePartitions(ctx context.Context) error {
	created, err := EnsurePartitions(ctx, w.pool, w.cfg.PartitionsAhead)
	if err != nil {
		return err
	}
	if created > 0 {
		w.cfg.Logger.Info("outbox partitions created", "count", created)
	}
	parts, err := Partitions(ctx, w.pool)
	if err != nil {
		return err
	}
	if i := len(parts) - w.cfg.PartitionsAhead; i >= 0 && i < len(parts) {
		w.extendAt.Store(parts[i].Lo)
	}
	return nil
}
