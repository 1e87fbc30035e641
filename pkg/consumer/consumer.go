package consumer

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/backoff"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Tx is what a handler can do inside the consumer's transaction: run statements.
// The consumer begins and ends the transaction; a handler cannot.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Handler applies the side effects of outbox rows.
type Handler interface {
	// Handle applies rows (ascending seq, never empty). tx is the transaction that
	// advances the consumer's offset when Handle returns nil: effects written
	// through tx commit atomically with it. An error rolls everything back and the
	// rows are retried.
	Handle(ctx context.Context, tx Tx, rows []outbox.Row) error
}

// AfterCommitter is implemented by handlers that want to know when the batch
// their last successful Handle call belongs to has committed: a handler that
// appended to the outbox in its transaction announces the new rows from
// AfterCommit (outbox.Notifier). It is called from the consumer's goroutine,
// never after a failed or rolled-back commit.
type AfterCommitter interface {
	AfterCommit()
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, tx Tx, rows []outbox.Row) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, tx Tx, rows []outbox.Row) error {
	return f(ctx, tx, rows)
}

// ErrHalted is returned by Run when a row kept failing under PolicyHalt.
var ErrHalted = errors.New("consumer halted on a failing row")

// handlerError is a failure of the handler itself; it counts toward MaxAttempts.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }
func (e handlerError) Unwrap() error { return e.err }

// infraError is a database failure outside the handler; it is retried forever.
type infraError struct{ err error }

func (e infraError) Error() string { return e.err.Error() }
func (e infraError) Unwrap() error { return e.err }

// Consumer follows the outbox for one consumer name. Create it with New and call
// Run once.
type Consumer struct {
	pool    *pgxpool.Pool
	handler Handler
	cfg     Config
	m       *metrics
	wake    chan string  // wake-up source; capacity 1, extra wake-ups coalesce
	stream  *streamState // set by NewStream: rows come from a JetStream stream

	lastMetrics time.Time
}

// New returns a Consumer that applies rows with handler.
func New(pool *pgxpool.Pool, handler Handler, cfg Config) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, errors.New("consumer: nil handler")
	}
	cfg.setDefaults()
	return &Consumer{
		pool:    pool,
		handler: handler,
		cfg:     cfg,
		m:       newMetrics(cfg.Name, cfg.Registerer),
		wake:    make(chan string, 1),
	}, nil
}

// Run registers the consumer, waits as a standby until it holds the lease, then
// applies the outbox until ctx is done (nil), the halt policy stops it (ErrHalted),
// or registration keeps failing past ctx. Losing the lease sends it back to standby.
func (c *Consumer) Run(ctx context.Context) error {
	log := c.cfg.Logger.With("consumer", c.cfg.Name, "owner", c.cfg.OwnerID)
	for attempt := 0; ; attempt++ {
		err := c.register(ctx)
		if err == nil {
			break
		}
		log.Warn("register failed; retrying", "err", err)
		if !backoff.Sleep(ctx, c.retryDelay(attempt)) {
			return nil
		}
	}
	if !c.cfg.DisableListen {
		listenCtx, stopListen := context.WithCancel(ctx)
		defer stopListen()
		go outbox.Listen(listenCtx, c.pool.Config().ConnConfig, func(w outbox.Wake) {
			if w == outbox.WakeNotify {
				c.signal(wakeNotify)
			} else {
				c.signal(wakeReconnect)
			}
		}, c.cfg.Logger.With("consumer", c.cfg.Name))
	}

	standbyLogged := false
	for attempt := 0; ctx.Err() == nil; {
		l, ok, err := c.tryAcquire(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("lease acquisition failed; retrying", "err", err)
			}
			backoff.Sleep(ctx, c.retryDelay(attempt))
			attempt++
			continue
		case !ok:
			if !standbyLogged {
				log.Info("another instance is active; waiting as standby")
				standbyLogged = true
			}
			backoff.Sleep(ctx, jitter(c.cfg.LeaseTTL/5))
			continue
		}
		attempt, standbyLogged = 0, false
		log.Info("active", "generation", l.generation, "last_seq", l.lastSeq)
		c.m.active.Set(1)
		if c.stream != nil {
			err = c.leadStream(ctx, l)
		} else {
			err = c.lead(ctx, l)
		}
		c.m.active.Set(0)
		if !errors.Is(err, errLeaseLost) {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if errors.Is(err, ErrHalted) {
				if herr := c.markHalted(rctx, l.generation, err); herr != nil {
					log.Warn("could not record the halt in the offset row", "err", herr)
				}
			}
			if rerr := c.release(rctx, l.generation); rerr != nil {
				log.Warn("lease release failed; a standby takes over when it expires", "err", rerr)
			}
			cancel()
		}
		switch {
		case errors.Is(err, ErrHalted):
			log.Error("halted: fix the handler or the row, then restart (or use the park policy)", "err", err)
			return err
		case errors.Is(err, errLeaseLost):
			log.Warn("lease lost; back to standby", "generation", l.generation)
		case ctx.Err() != nil:
			log.Info("stopped", "generation", l.generation)
			return nil
		case err != nil:
			log.Error("leading failed; retrying", "err", err)
			backoff.Sleep(ctx, c.retryDelay(attempt))
			attempt++
		}
	}
	return nil
}

// lead applies the outbox while this instance holds the lease. It returns
// errLeaseLost when the lease goes, ErrHalted, or ctx's error.
func (c *Consumer) lead(ctx context.Context, l lease) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.heartbeat(ctx, cancel, l.generation)

	log := c.cfg.Logger.With("consumer", c.cfg.Name)
	last := l.lastSeq
	c.m.lastSeq.Set(float64(last))
	idle := c.cfg.MinPollInterval
	// Two buffers: the batch being applied and the next one being read ahead.
	bufs := [2][]outbox.Row{make([]outbox.Row, 0, c.cfg.BatchSize), make([]outbox.Row, 0, c.cfg.BatchSize)}
	cur := 0
	var ahead *openRead
	defer func() { ahead.discard(ctx) }()
	for infraAttempt := 0; ; {
		if ctx.Err() != nil {
			return leadEnd(ctx)
		}
		var batch *openRead
		if ahead.wait(); ahead != nil && ahead.after == last {
			batch, cur = ahead, 1-cur
		} else {
			ahead.discard(ctx)
			batch = c.beginRead(ctx, last, bufs[cur])
			batch.wait()
		}
		ahead = nil
		if batch.err != nil {
			batch.discard(ctx)
			if ctx.Err() != nil {
				return leadEnd(ctx)
			}
			log.Warn("read outbox failed; retrying", "err", batch.err)
			backoff.Sleep(ctx, c.retryDelay(infraAttempt))
			infraAttempt++
			continue
		}
		infraAttempt = 0
		rows := batch.rows
		bufs[cur] = rows
		if len(rows) == 0 {
			// An operator may have moved the offset (a forced reset-offset) while we
			// were idle: no commit would tell us, so look.
			if stored, ok, err := offset(ctx, c.pool, c.cfg.Name, ""); err == nil && ok && stored != last {
				log.Warn("offset was moved by an operator; continuing from it", "last_seq", stored)
				last = stored
				c.m.lastSeq.Set(float64(last))
				continue
			}
			c.refreshMetrics(ctx, last, true)
			if err := c.retryDeadLetters(ctx, l.generation); err != nil {
				if ctx.Err() != nil {
					return leadEnd(ctx)
				}
				log.Warn("dead-letter retry failed", "err", err)
			}
			c.waitForWork(ctx, idle)
			idle = min(idle*2, c.cfg.PollInterval)
			continue
		}
		idle = c.cfg.MinPollInterval
		if len(rows) == c.cfg.BatchSize {
			// A full batch: more rows are likely waiting. Read them while this
			// batch is applied; the read is valid whatever happens to the commit.
			ahead = c.beginRead(ctx, rows[len(rows)-1].Seq, bufs[1-cur])
		}
		next, err := c.apply(ctx, l.generation, last, rows, batch.take())
		switch {
		case errors.Is(err, errOffsetMoved):
			stored, ok, err := offset(ctx, c.pool, c.cfg.Name, "")
			if err != nil || !ok {
				continue // retried at the next turn through the read path
			}
			last = stored
			log.Warn("offset was moved by an operator; continuing from it", "last_seq", last)
			c.m.lastSeq.Set(float64(last))
			continue
		case err != nil:
			if ctx.Err() != nil {
				return leadEnd(ctx)
			}
			return err
		}
		last = next
		c.m.lastSeq.Set(float64(last))
		c.refreshMetrics(ctx, last, false)
	}
}

// openRead reads the rows after seq `after` on its own connection, in a transaction
// it leaves open: BEGIN and the read share one round trip, and the handler then
// applies the rows in that very transaction. Reads run in the background while the
// previous batch is applied.
type openRead struct {
	after int64
	done  chan struct{}
	conn  *pgxpool.Conn // holds the open transaction; nil once taken or discarded, or when no rows
	rows  []outbox.Row
	err   error
}

func (c *Consumer) beginRead(ctx context.Context, after int64, buf []outbox.Row) *openRead {
	r := &openRead{after: after, done: make(chan struct{}), rows: buf[:0]}
	go func() {
		defer close(r.done)
		pc, err := c.pool.Acquire(ctx)
		if err != nil {
			r.err = fmt.Errorf("acquire connection: %w", err)
			return
		}
		var b pgx.Batch
		b.Queue("BEGIN")
		outbox.QueueReadAfter(&b, after, c.cfg.BatchSize, &r.rows)
		if err := pc.Conn().SendBatch(ctx, &b).Close(); err != nil {
			r.err = err
			pc.Release() // the pool closes a connection left in a transaction
			return
		}
		if len(r.rows) == 0 {
			if _, err := pc.Exec(ctx, "ROLLBACK"); err != nil {
				r.err = err
			}
			pc.Release()
			return
		}
		r.conn = pc
	}()
	return r
}

// wait blocks until the read is over; a nil openRead is over.
func (r *openRead) wait() {
	if r != nil {
		<-r.done
	}
}

// take hands the open transaction's connection to the caller, who must end the
// transaction and release it.
func (r *openRead) take() *pgxpool.Conn {
	pc := r.conn
	r.conn = nil
	return pc
}

// discard waits for the read and ends its transaction unused.
func (r *openRead) discard(ctx context.Context) {
	if r == nil {
		return
	}
	r.wait()
	if pc := r.take(); pc != nil {
		_, _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		pc.Release()
	}
}

// leadEnd turns a cancelled lead context into errLeaseLost or the parent's error.
func leadEnd(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, errLeaseLost) {
		return errLeaseLost
	}
	return ctx.Err()
}

// heartbeat renews the lease every LeaseTTL/3. It cancels the lead context when the
// lease is taken over, or when no renewal succeeded for a whole LeaseTTL (another
// instance may then legitimately hold it; fencing refuses our commits anyway, and
// stopping avoids external effects by a stale instance).
func (c *Consumer) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, generation int64) {
	t := time.NewTicker(c.cfg.LeaseTTL / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/3)
		err := c.renew(rctx, generation)
		rcancel()
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, errLeaseLost):
			cancel(errLeaseLost)
			return
		case time.Since(lastOK) >= c.cfg.LeaseTTL-c.cfg.LeaseTTL/6:
			c.cfg.Logger.Warn("lease renewal failing; stepping down", "consumer", c.cfg.Name, "err", err)
			cancel(errLeaseLost)
			return
		}
	}
}

// apply commits rows with the retry and failure policy and returns the new offset.
// open, if not nil, is a connection in a transaction that read rows: the first
// attempt uses it; apply always ends and releases it.
func (c *Consumer) apply(ctx context.Context, generation, last int64, rows []outbox.Row, open *pgxpool.Conn) (int64, error) {
	log := c.cfg.Logger.With("consumer", c.cfg.Name)
	for attempt, infraAttempt := 0, 0; ; {
		err := c.commitBatch(ctx, generation, last, rows, nil, open)
		open = nil
		if err == nil {
			return rows[len(rows)-1].Seq, nil
		}
		if errors.Is(err, errLeaseLost) || errors.Is(err, errOffsetMoved) || ctx.Err() != nil {
			return last, err
		}
		var herr handlerError
		if !errors.As(err, &herr) {
			log.Warn("commit failed; retrying", "err", err, "first_seq", rows[0].Seq)
			if !backoff.Sleep(ctx, c.retryDelay(infraAttempt)) {
				return last, ctx.Err()
			}
			infraAttempt++
			continue
		}
		attempt++
		c.m.failed.Inc()
		log.Warn("handler failed", "attempt", attempt, "first_seq", rows[0].Seq, "rows", len(rows), "err", herr.err)
		if attempt < c.cfg.MaxAttempts {
			if !backoff.Sleep(ctx, c.retryDelay(attempt-1)) {
				return last, ctx.Err()
			}
			continue
		}
		if len(rows) > 1 {
			// Find the failing row: retry the rows one at a time.
			for i := range rows {
				var err error
				if last, err = c.apply(ctx, generation, last, rows[i:i+1], nil); err != nil {
					return last, err
				}
			}
			return last, nil
		}
		row := rows[0]
		if c.cfg.Policy == PolicyHalt {
			c.m.halted.Set(1)
			return last, fmt.Errorf("%w: seq %d event %s after %d attempts: %v", ErrHalted, row.Seq, row.EventID, attempt, herr.err)
		}
		for parkAttempt := 0; ; parkAttempt++ {
			err := c.commitBatch(ctx, generation, last, rows, &parked{err: herr.err, attempts: attempt}, nil)
			if err == nil {
				break
			}
			if errors.Is(err, errLeaseLost) || errors.Is(err, errOffsetMoved) || ctx.Err() != nil {
				return last, err
			}
			log.Warn("parking failed; retrying", "seq", row.Seq, "err", err)
			if !backoff.Sleep(ctx, c.retryDelay(parkAttempt)) {
				return last, ctx.Err()
			}
		}
		c.m.parked.Inc()
		log.Error("row parked in the dead-letter table", "seq", row.Seq, "event_id", row.EventID, "err", herr.err)
		return row.Seq, nil
	}
}

// parked describes a row to move to the dead-letter table instead of applying it.
type parked struct {
	err      error
	attempts int
}

// commitBatch runs the handler on rows (or parks the single row) and advances the
// offset from last to the batch's end, all in one transaction: the one open holds
// (then released), or a new one. The offset move and the COMMIT travel in one round
// trip; if the move fails (fenced, or the offset moved), the transaction is aborted
// and the COMMIT cannot commit anything.
func (c *Consumer) commitBatch(ctx context.Context, generation, last int64, rows []outbox.Row, park *parked, open *pgxpool.Conn) (err error) {
	start := time.Now()
	pc := open
	if pc == nil {
		if pc, err = c.pool.Acquire(ctx); err != nil {
			return infraError{fmt.Errorf("acquire connection: %w", err)}
		}
		if _, err := pc.Exec(ctx, "BEGIN"); err != nil {
			pc.Release()
			return infraError{fmt.Errorf("begin: %w", err)}
		}
	}
	// Released in a transaction (any failure below), the pool closes the connection.
	defer pc.Release()
	tx := pc.Conn()
	committed := false
	defer func() {
		if !committed && !tx.IsClosed() {
			_, _ = tx.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var b pgx.Batch
	if park == nil {
		if err := c.callHandler(ctx, tx, rows); err != nil {
			if tx.IsClosed() {
				return infraError{err} // the connection died under the handler
			}
			return handlerError{err}
		}
	} else {
		r := rows[0]
		b.Queue(`
			INSERT INTO cn_relay.consumer_dead_letters
				(consumer, seq, op, event_id, topic_id, kind, created_at, ingested_at, effective_key, reason, error, attempts)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nullif($9, ''), nullif($10, ''), $11, $12)
			ON CONFLICT (consumer, seq) DO UPDATE SET error = excluded.error, attempts = excluded.attempts,
				parked_at = now(), retry_requested_at = NULL`,
			c.cfg.Name, r.Seq, string(r.Op), r.EventID, r.TopicID, r.Kind, r.CreatedAt, r.IngestedAt,
			r.EffectiveKey, r.Reason, park.err.Error(), park.attempts)
	}
	var advanceErr error
	if c.stream != nil {
		c.stream.queuePosition(&b, c.cfg.Name, rows[len(rows)-1].Seq)
	}
	c.queueAdvance(&b, generation, last, rows[len(rows)-1].Seq)
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT"
		return nil
	})
	// Never cancelled once sent: a commit cancelled while it waits for the
	// synchronous standbys stays committed on the primary alone (outbox.Commit).
	br := tx.SendBatch(context.WithoutCancel(ctx), &b)
	if park != nil {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return infraError{fmt.Errorf("park seq %d: %w", rows[0].Seq, err)}
		}
	}
	if c.stream != nil {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return infraError{fmt.Errorf("store stream position: %w", err)}
		}
	}
	if _, err := br.Exec(); err != nil {
		advanceErr = advanceError(err)
	}
	if err := br.Close(); err != nil && advanceErr == nil {
		return infraError{fmt.Errorf("commit: %w", err)}
	}
	if advanceErr != nil {
		return advanceErr
	}
	if !committed {
		return infraError{errors.New("commit: transaction was rolled back")}
	}
	if park == nil {
		c.m.processed.Add(float64(len(rows)))
		if ac, ok := c.handler.(AfterCommitter); ok {
			ac.AfterCommit()
		}
	}
	c.m.batchDuration.Observe(time.Since(start).Seconds())
	return nil
}

// callHandler runs the handler and turns a panic into an error.
func (c *Consumer) callHandler(ctx context.Context, tx Tx, rows []outbox.Row) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return c.handler.Handle(ctx, tx, rows)
}

// waitForWork blocks until a notification, a reconnect, the poll timer or ctx.
func (c *Consumer) waitForWork(ctx context.Context, idle time.Duration) {
	t := time.NewTimer(jitter(idle))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case src := <-c.wake:
		c.m.wakeups.WithLabelValues(src).Inc()
	case <-t.C:
		c.m.wakeups.WithLabelValues(wakePoll).Inc()
	}
}

func (c *Consumer) signal(source string) {
	select {
	case c.wake <- source:
	default:
	}
}

// refreshMetrics updates backlog and lag at most once per second (or when idle).
func (c *Consumer) refreshMetrics(ctx context.Context, last int64, idle bool) {
	if !idle && time.Since(c.lastMetrics) < time.Second {
		return
	}
	c.lastMetrics = time.Now()
	head, lag, err := backlogOf(ctx, c.pool, last)
	if err != nil {
		return
	}
	c.m.backlog.Set(float64(max(head-last, 0)))
	c.m.lagSeconds.Set(lag)
}

// backlogOf returns the outbox head and the age in seconds of the oldest row after
// last (0 when there is none). last is a parameter, not a join: joining
// cn_relay.consumer_offsets in the read made the drain about 90x slower.
func backlogOf(ctx context.Context, q outbox.Querier, last int64) (head int64, lagSeconds float64, err error) {
	err = q.QueryRow(ctx, `
		SELECT coalesce((SELECT max(seq) FROM cn_relay.events_outbox), 0),
		       coalesce(extract(epoch FROM now() - (SELECT ingested_at FROM cn_relay.events_outbox
		                                            WHERE seq > $1 ORDER BY seq LIMIT 1)), 0)::float8`,
		last).Scan(&head, &lagSeconds)
	if err != nil {
		return 0, 0, fmt.Errorf("read backlog: %w", err)
	}
	return head, max(lagSeconds, 0), nil
}

// retryDelay is exponential back-off with jitter: attempt 0 waits between half and
// all of RetryBase, each further attempt doubles that window, up to RetryMax.
func (c *Consumer) retryDelay(attempt int) time.Duration {
	return backoff.Jittered(c.cfg.RetryBase, c.cfg.RetryMax, attempt)
}

// jitter spreads d by ±20% so that many idle consumers do not poll in step.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + rand.N(2*d/5+1)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
