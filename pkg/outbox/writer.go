package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
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
// When Write returns nil the transaction is committed and durable as the
// server's synchronous_commit setting asks (flushed to the WAL, and confirmed by
// the synchronous standbys when synchronous replication is on). The commit is
// synchronous and runs while the append lock is held, in the same pipeline as the
// lock and the insert (no client round trip inside the lock). So rows become
// visible to readers (REQs, the relay's live fan-out, consumers, the bridge) only
// once they are durable, and a crash never takes back a row anyone has seen, nor a
// seq value (the sequence is WAL-logged with the commit). Group commit happens one
// level up: callers batch many changes into one Write (the relay's batcher), and
// the flush is paid once per batch.
//
// Writing the WAL flush inside the lock serialises the flushes of concurrent
// writers. An asynchronous commit under the lock followed by a flush outside it
// was measured (docs/durability.md) and not kept: its rows were visible, fanned
// out and followed by consumers before they were durable, and after a crash the
// sequence could hand out the same seq again.
//
// If Write returns an error wrapping ErrDurabilityUnknown, the COMMIT was sent
// but its answer did not come: the connection failed, or ctx ended while the
// commit waited (for the synchronous standbys, or for the lock held by a writer
// that waits for them). The transaction may have committed or may still commit;
// rows that do commit are announced then. A caller must not report it as
// stored (the relay answers `error:`, and a client's resend is then stored or
// answered `duplicate:`).
func (w *Writer) Write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) ([]Record, error)) (Range, error) {
	return w.WriteBatch(ctx, func(ctx context.Context, tx pgx.Tx, _ *pgx.Batch) ([]Record, error) { return fn(ctx, tx) })
}

// WriteBatch is Write for callers that can queue their writes instead of running
// them: the statements fn queues on b run, in order, in the same pipeline as the
// append and the commit, which saves their round trips. If one of them fails,
// nothing is committed and WriteBatch returns its error. fn may still run
// statements (reads, typically) through tx.
func (w *Writer) WriteBatch(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) ([]Record, error)) (Range, error) {
	t := turnOf(ctx)
	sent := func() {}
	if t != nil {
		sent = sync.OnceFunc(t.sent)
		defer sent() // a failure before the pipeline below
	}
	pc, err := w.pool.Acquire(ctx)
	if err != nil {
		return Range{}, fmt.Errorf("acquire connection: %w", err)
	}
	conn := pc.Conn()
	tx := &lazyTx{conn: conn} // BEGIN goes with the first statement
	// Until the pipeline below starts, a failure rolls back here.
	rollback := func() {
		tx.rollback(context.WithoutCancel(ctx))
		pc.Release()
	}
	var inner pgx.Tx = tx
	var turned *turnTx
	if t != nil {
		turned = &turnTx{Tx: tx, pipeline: t.pipeline}
		inner = turned
	}
	var b pgx.Batch
	recs, err := fn(ctx, writeTx{inner}, &b)
	if err != nil {
		rollback()
		return Range{}, err
	}
	if turned != nil {
		// The turn must be granted before sent lets the next transaction ask
		// for it: fn read nothing, so it is taken here, on its own.
		if err := turned.take(ctx); err != nil {
			rollback()
			return Range{}, fmt.Errorf("take the write turn: %w", err)
		}
	}
	var r Range
	if len(recs) > 0 {
		if err := queueAppend(&b, recs, !w.cfg.disableAppendLock, &r); err != nil {
			rollback()
			return Range{}, err
		}
	}
	tx.queueBegin(&b) // fn ran no statement
	committed := false
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT" // an aborted transaction answers ROLLBACK
		return nil
	})
	// The pipeline ends with the COMMIT and is never cancelled: pgx cancels a
	// statement when its context ends (a cancel request, then it closes the
	// connection), and Postgres answers a cancelled wait for the synchronous
	// standbys with a mere warning, leaving the transaction committed and visible
	// on the primary but not on any standby. So it runs to its end in its own
	// goroutine, which owns the connection from here on; if ctx ends first,
	// WriteBatch returns ErrDurabilityUnknown and the goroutine still finishes,
	// announcing the rows if they commit. Such goroutines are bounded by the
	// pool: each holds a connection.
	done := make(chan error, 1)
	go func() {
		err := conn.SendBatch(context.WithoutCancel(ctx), &b).Close()
		if committed {
			if r.Count > 0 {
				w.Notify(r.Last)
			}
		} else {
			// Open or aborted: the pool closes a connection left in a transaction, so
			// none is handed out in a transaction.
			tx.rollback(context.WithoutCancel(ctx))
		}
		pc.Release()
		done <- err
	}()
	sent() // the turn is held, the COMMIT on its way: the next may start
	select {
	case err = <-done:
	case <-ctx.Done():
		return Range{}, fmt.Errorf("append and commit: %w: %w", ErrDurabilityUnknown, context.Cause(ctx))
	}
	switch {
	case err != nil && !committed && connLost(err):
		// The COMMIT may have reached the server before the connection failed.
		return Range{}, fmt.Errorf("append and commit: %w: %w", ErrDurabilityUnknown, err)
	case err != nil:
		return Range{}, fmt.Errorf("append and commit: %w", err)
	case !committed:
		return Range{}, errors.New("append and commit: the transaction was rolled back")
	}
	return r, nil
}

// Commit commits tx, a transaction that appended outbox rows (Append), without
// letting ctx cancel it: see WriteBatch for why a commit must never be cancelled
// while it waits for the synchronous standbys. It returns once the server has
// answered or the connection has failed, whatever ctx does.
func Commit(ctx context.Context, tx pgx.Tx) error {
	return tx.Commit(context.WithoutCancel(ctx))
}

// connLost reports an error that is not the server's answer to a statement
// (a PgError) but the loss of the connection, after which the outcome of a
// COMMIT sent on it is unknown.
func connLost(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr)
}

// ErrDurabilityUnknown reports a write whose COMMIT was sent but whose answer
// did not come (the connection failed, or the caller's context ended while the
// commit waited, typically for a synchronous standby): it may have committed or
// may still commit. The caller must not report it as stored.
var ErrDurabilityUnknown = errors.New("commit outcome unknown")

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
