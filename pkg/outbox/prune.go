package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/kukuri/communitynode/schema"
)

// DefaultRetention is how long outbox rows are kept when PruneOptions.OlderThan is zero.
const DefaultRetention = 720 * time.Hour

// PruneLockKey is the session-level advisory lock that serialises Prune runs: a second
// Prune waits until the first has finished. Code that moves a consumer offset
// backwards (cnctl reset-offset) should take it too, so that it never races a prune.
// (schema.PruneLock, listed with every other lock in schema/locks.go).
const PruneLockKey = schema.PruneLock

const (
	// pruneLockTimeout bounds how long a removal transaction waits for a table lock;
	// while it waits in the lock queue, later readers and writers queue behind it.
	pruneLockTimeout = 500 * time.Millisecond
	// pruneLockAttempts is how often a removal that timed out on a lock is retried.
	pruneLockAttempts = 5
	// deleteChunk is how many seq values one DELETE transaction covers.
	deleteChunk = 10000
)

// PruneOptions says what Prune may remove.
type PruneOptions struct {
	OlderThan time.Duration // rows ingested before now()-OlderThan may go; zero means DefaultRetention
	Force     bool          // also remove rows some registered consumer has not consumed yet
	Execute   bool          // false = dry run: report only, change nothing
	// Readers says how far the registered readers have read (required; the
	// node's consumers: pkg/consumer.Offsets).
	Readers Readers
}

// Readers is who follows the outbox, as far as retention is concerned: Prune
// never removes a row that one of them has not consumed yet (unless forced).
// The outbox does not know how readers keep their positions; pkg/consumer's
// Offsets is the implementation over its offsets table.
type Readers interface {
	// Positions returns every registered reader's position, lowest seq first,
	// ties by name.
	Positions(ctx context.Context, q Querier) ([]Position, error)
	// FreezeLowest keeps every position from moving and new readers from
	// registering until tx ends, and returns the lowest position; ok is false
	// when no reader is registered.
	FreezeLowest(ctx context.Context, tx pgx.Tx) (lowest Position, ok bool, err error)
}

// Position is how far one reader has consumed the outbox: every row with a
// seq up to Seq.
type Position struct {
	Reader string
	Seq    int64
}

// PruneReport says what Prune removed, or in a dry run would remove, and what it kept
// back and why. String renders it as text, one line per fact; it marshals to JSON.
type PruneReport struct {
	Executed  bool          `json:"executed"` // false: a dry run, nothing was changed
	Forced    bool          `json:"forced"`
	OlderThan time.Duration `json:"-"`      // the retention period applied
	Cutoff    time.Time     `json:"cutoff"` // database now() - retention
	Head      int64         `json:"head"`   // highest seq; its row is always kept
	// Consumers is the number of registered consumers; with none, nothing holds rows back.
	Consumers         int                `json:"consumers"`
	PartitionsCreated int                `json:"partitions_created"` // by EnsurePartitions (executed runs only)
	Dropped           []DroppedPartition `json:"dropped"`
	Deleted           *DeletedRange      `json:"deleted,omitempty"`
	// HeldBack lists every consumer that has not consumed some rows older than the
	// cutoff. Without Force those rows are kept; with Force, Removed of them go.
	HeldBack []HeldBack `json:"held_back"`
	// Stopped says where retention stopped and why ("" when the outbox has no rows).
	Stopped string `json:"stopped,omitempty"`
}

// DroppedPartition is a range partition removed whole, with every row in it.
type DroppedPartition struct {
	Name string `json:"name"`
	Lo   int64  `json:"lo"` // seq range [Lo, Hi)
	Hi   int64  `json:"hi"`
	Rows int64  `json:"rows"`
	// Elapsed is how long the drop took from the outbox lock granted to COMMIT
	// returned (executed runs only). Writers and readers waited at most that long,
	// usually much less: Postgres releases the lock before it removes the files, which
	// is most of a big partition's commit (1M rows: 31ms in all, about 2ms locked).
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`
}

// DeletedRange is a run of rows deleted from the oldest partition that could not be
// dropped whole: the seq values in [From, To) that were older than the cutoff.
type DeletedRange struct {
	Partition string `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Rows      int64  `json:"rows"`
}

// HeldBack is a consumer that has not consumed Rows rows older than the cutoff.
type HeldBack struct {
	Consumer string `json:"consumer"`
	LastSeq  int64  `json:"last_seq"`
	Rows     int64  `json:"rows"`    // rows with seq > LastSeq ingested before the cutoff
	Removed  int64  `json:"removed"` // how many of them Force removes (always 0 without Force)
}

// RowsRemoved is the number of rows dropped or deleted (or, in a dry run, that would be).
func (r PruneReport) RowsRemoved() int64 {
	n := int64(0)
	for _, d := range r.Dropped {
		n += d.Rows
	}
	if r.Deleted != nil {
		n += r.Deleted.Rows
	}
	return n
}

// MarshalJSON adds "older_than" as a Go duration string ("720h0m0s").
func (r PruneReport) MarshalJSON() ([]byte, error) {
	type plain PruneReport
	return json.Marshal(struct {
		OlderThan string `json:"older_than"`
		plain
	}{r.OlderThan.String(), plain(r)})
}

// Prune applies time-based retention to the outbox. Unless opt.Execute is set it
// changes nothing and reports what it would do.
//
// A row may go when it was ingested before the database's now() minus opt.OlderThan
// and every registered reader (opt.Readers: the node's consumers) has consumed
// it (seq <= its position); opt.Force lifts the consumer condition. With no registered
// consumers only age counts. The row holding the highest seq is never removed, so
// Head keeps reporting the true head, and neither a partition that holds the head or
// lies above it nor the default partition is ever dropped.
//
// Prune removes a prefix of the outbox: it walks the range partitions in seq order
// and drops each one whose rows all may go (an empty partition below the head always
// may); at the first partition that must stay it deletes the leading rows that may go
// (in DELETE transactions of at most 10,000 seq values) and stops. What is left is
// therefore always every row from some seq up to the head, as a consumer replaying
// from an older offset expects.
//
// Each drop and each DELETE chunk is its own transaction, so an interrupted prune
// leaves a consistent, shorter outbox and the next run goes on. DROP TABLE of a
// partition takes ACCESS EXCLUSIVE on the parent, which blocks every reader and
// writer of the outbox: a drop holds it only for the offset re-check and the drop
// (a few milliseconds; Postgres unlinks the files after releasing it), and waits for
// it at most 500ms at a time, a few times, before it fails. A long transaction
// reading the outbox thus makes Prune fail instead of queueing writers behind it for
// longer than that. Removal transactions re-read the positions frozen until they
// commit (Readers.FreezeLowest) and give up if some offset is below what they remove.
// Concurrent Prune calls are serialised by the PruneLockKey advisory lock. An
// executed prune first runs EnsurePartitions.
//
// On error the report describes what was done before the error.
func Prune(ctx context.Context, pool *pgxpool.Pool, opt PruneOptions) (PruneReport, error) {
	if opt.OlderThan < 0 {
		return PruneReport{}, fmt.Errorf("prune outbox: negative retention %s", opt.OlderThan)
	}
	if opt.OlderThan == 0 {
		opt.OlderThan = DefaultRetention
	}
	if opt.Readers == nil {
		return PruneReport{}, errors.New("prune outbox: no Readers (consumer.Offsets)")
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return PruneReport{}, fmt.Errorf("prune outbox: %w", err)
	}
	conn := pc.Conn()
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", PruneLockKey); err != nil {
			// A closed connection releases the lock, and the pool discards it.
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		pc.Release()
	}()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", PruneLockKey); err != nil {
		return PruneReport{}, fmt.Errorf("prune outbox: take prune lock: %w", err)
	}

	rep := PruneReport{Executed: opt.Execute, Forced: opt.Force, OlderThan: opt.OlderThan,
		Dropped: []DroppedPartition{}, HeldBack: []HeldBack{}}
	if opt.Execute {
		if rep.PartitionsCreated, err = EnsurePartitions(ctx, conn, DefaultPartitionsAhead); err != nil {
			return rep, fmt.Errorf("prune outbox: %w", err)
		}
	}
	steps, err := planPrune(ctx, conn, opt, &rep)
	if err != nil {
		return rep, fmt.Errorf("prune outbox: %w", err)
	}
	for _, s := range steps {
		if !opt.Execute {
			rep.record(s, s.rows, 0)
			continue
		}
		var took time.Duration
		n := s.rows
		if s.drop {
			took, err = dropPartition(ctx, conn, s, opt)
		} else {
			n, err = deleteRows(ctx, conn, s, rep.Cutoff, opt)
		}
		if n > 0 || (s.drop && err == nil) {
			rep.record(s, n, took)
		}
		if err != nil {
			return rep, fmt.Errorf("prune outbox: %w", err)
		}
	}
	return rep, nil
}

func (r *PruneReport) record(s pruneStep, rows int64, took time.Duration) {
	if s.drop {
		r.Dropped = append(r.Dropped, DroppedPartition{Name: s.part.Name, Lo: s.part.Lo, Hi: s.part.Hi, Rows: rows, Elapsed: took})
		return
	}
	r.Deleted = &DeletedRange{Partition: s.part.Name, From: s.from, To: s.to, Rows: rows}
}

// dropPartition drops s.part in one transaction and returns the time from the outbox
// lock granted to commit returned. Unless force, it first checks that every consumer
// is still past the partition's last row.
func dropPartition(ctx context.Context, conn *pgx.Conn, s pruneStep, opt PruneOptions) (time.Duration, error) {
	var took time.Duration
	err := retryOnLockTimeout(ctx, "the outbox", func() error {
		tx, err := beginWithLockTimeout(ctx, conn)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if _, err := tx.Exec(ctx, "LOCK TABLE cn_relay.events_outbox IN ACCESS EXCLUSIVE MODE"); err != nil {
			return err
		}
		start := time.Now()
		if !opt.Force && s.rows > 0 {
			if err := checkConsumersPast(ctx, tx, opt.Readers, s.last); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{"cn_relay", s.part.Name}.Sanitize()); err != nil {
			return err
		}
		if err := raiseHorizon(ctx, tx, s.part.Hi-1); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		took = time.Since(start)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("drop partition %s: %w", s.part.Name, err)
	}
	return took, nil
}

// deleteRows deletes the rows of s older than cutoff, one transaction per
// deleteChunk seq values, and returns how many it deleted.
func deleteRows(ctx context.Context, conn *pgx.Conn, s pruneStep, cutoff time.Time, opt PruneOptions) (int64, error) {
	table := pgx.Identifier{"cn_relay", s.part.Name}.Sanitize()
	var total int64
	for from := s.from; from < s.to; from += deleteChunk {
		to := min(from+deleteChunk, s.to)
		err := retryOnLockTimeout(ctx, "the consumer offsets", func() error {
			tx, err := beginWithLockTimeout(ctx, conn)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			if !opt.Force {
				if err := checkConsumersPast(ctx, tx, opt.Readers, min(to-1, s.last)); err != nil {
					return err
				}
			}
			var n int64
			var last *int64
			if err := tx.QueryRow(ctx, "WITH d AS (DELETE FROM "+table+" WHERE seq >= $1 AND seq < $2 AND ingested_at < $3 RETURNING seq) SELECT count(*), max(seq) FROM d",
				from, to, cutoff).Scan(&n, &last); err != nil {
				return err
			}
			if last != nil {
				if err := raiseHorizon(ctx, tx, *last); err != nil {
					return err
				}
			}
			if err := tx.Commit(ctx); err != nil {
				return err
			}
			total += n
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("delete seq [%d, %d) from %s: %w", from, to, s.part.Name, err)
		}
	}
	return total, nil
}

// Horizon returns the retention horizon: every seq up to it may have been
// removed by Prune, so a replay cannot start below it.
func Horizon(ctx context.Context, q Querier) (int64, error) {
	var horizon int64
	if err := q.QueryRow(ctx, "SELECT pruned_through FROM cn_relay.outbox_retention").Scan(&horizon); err != nil {
		return 0, fmt.Errorf("read retention horizon: %w", err)
	}
	return horizon, nil
}

// raiseHorizon records in the same transaction as a removal that every seq up to
// seq may be gone; reset-offset clamps replays to it.
func raiseHorizon(ctx context.Context, tx pgx.Tx, seq int64) error {
	_, err := tx.Exec(ctx, `UPDATE cn_relay.outbox_retention
		SET pruned_through = greatest(pruned_through, $1), pruned_at = now()`, seq)
	return err
}

func beginWithLockTimeout(ctx context.Context, conn *pgx.Conn) (pgx.Tx, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)",
		fmt.Sprintf("%dms", pruneLockTimeout.Milliseconds())); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tx, nil
}

// checkConsumersPast freezes the readers' positions until tx ends
// (Readers.FreezeLowest) and fails unless every reader has consumed seq.
func checkConsumersPast(ctx context.Context, tx pgx.Tx, readers Readers, seq int64) error {
	lowest, ok, err := readers.FreezeLowest(ctx, tx)
	if err != nil || !ok {
		return err
	}
	if lowest.Seq < seq {
		return fmt.Errorf("consumer %s is at seq %d, below seq %d, since the prune was planned (its offset moved back or it was just registered); nothing more was removed", lowest.Reader, lowest.Seq, seq)
	}
	return nil
}

// retryOnLockTimeout runs fn until it does not fail on lock_timeout, a few times at most.
func retryOnLockTimeout(ctx context.Context, what string, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return err
		}
		if attempt == pruneLockAttempts {
			return fmt.Errorf("could not lock %s within %s in %d attempts (a long transaction may be using it): %w",
				what, pruneLockTimeout, attempt, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
}
