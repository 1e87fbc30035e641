package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultRetention is how long outbox rows are kept when PruneOptions.OlderThan is zero.
const DefaultRetention = 720 * time.Hour

// PruneLockKey is the session-level advisory lock that serialises Prune runs: a second
// Prune waits until the first has finished. Code that moves a consumer offset
// backwards (cnctl reset-offset) should take it too, so that it never races a prune.
const PruneLockKey int64 = 0x636e5f7072756e65 // "cn_prune"

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

// String renders the report as text, one line per dropped partition, deleted range and
// consumer that holds rows back. Lines of a dry run start with "dry run: would".
func (r PruneReport) String() string {
	var b strings.Builder
	pre, will := "", func(done, todo string) string { return done }
	if !r.Executed {
		pre, will = "dry run: ", func(_, todo string) string { return "would " + todo }
	}
	age := shortDuration(r.OlderThan)
	fmt.Fprintf(&b, "%sretention %s: rows ingested before %s may go; the head row (seq %d) is always kept\n",
		pre, age, r.Cutoff.UTC().Format(time.RFC3339), r.Head)
	switch {
	case r.Consumers == 0:
		fmt.Fprintf(&b, "%sno consumers are registered: none holds rows back\n", pre)
	case r.Forced:
		fmt.Fprintf(&b, "%sforced: rows are removed even where consumers have not consumed them\n", pre)
	}
	if r.PartitionsCreated > 0 {
		fmt.Fprintf(&b, "created %d partitions ahead of the head\n", r.PartitionsCreated)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(&b, "%s%s partition %s seq [%d, %d): %d rows", pre, will("dropped", "drop"), d.Name, d.Lo, d.Hi, d.Rows)
		if d.Elapsed > 0 {
			fmt.Fprintf(&b, " (took %s)", d.Elapsed.Round(10*time.Microsecond))
		}
		b.WriteString("\n")
	}
	if d := r.Deleted; d != nil {
		fmt.Fprintf(&b, "%s%s %d rows seq [%d, %d) from partition %s\n", pre, will("deleted", "delete"), d.Rows, d.From, d.To, d.Partition)
	}
	for _, h := range r.HeldBack {
		if r.Forced {
			fmt.Fprintf(&b, "%sforced: %s %d of %d rows older than %s that consumer %s at seq %d has not consumed\n",
				pre, will("removed", "remove"), h.Removed, h.Rows, age, h.Consumer, h.LastSeq)
			continue
		}
		fmt.Fprintf(&b, "%sheld back %d rows older than %s: consumer %s at seq %d has not consumed them\n",
			pre, h.Rows, age, h.Consumer, h.LastSeq)
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "%skept %s\n", pre, r.Stopped)
	}
	if len(r.Dropped) == 0 && r.Deleted == nil {
		fmt.Fprintf(&b, "%snothing to prune\n", pre)
	} else {
		fmt.Fprintf(&b, "%s%s %d partitions and %d rows in all\n", pre, will("removed", "remove"), len(r.Dropped), r.RowsRemoved())
	}
	return b.String()
}

// shortDuration prints 720h rather than 720h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// pruneStep is one planned removal: a whole partition, or seq [from, to) of it.
type pruneStep struct {
	part     Partition
	rows     int64
	from, to int64 // seq range concerned, [from, to)
	last     int64 // the highest seq of a row removed
	drop     bool
}

// Prune applies time-based retention to the outbox. Unless opt.Execute is set it
// changes nothing and reports what it would do.
//
// A row may go when it was ingested before the database's now() minus opt.OlderThan
// and every registered consumer (every row of cn_relay.consumer_offsets) has consumed
// it (seq <= its last_seq); opt.Force lifts the consumer condition. With no registered
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
// longer than that. Removal transactions re-read the consumer offsets under a SHARE
// lock (held to commit) and give up if some offset is below what they remove.
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
			took, err = dropPartition(ctx, conn, s, opt.Force)
		} else {
			n, err = deleteRows(ctx, conn, s, rep.Cutoff, opt.Force)
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

// planPrune fills in rep's facts and returns the removals, oldest first: whole
// partitions, then at most one partial delete. It runs no transaction and scans
// partitions by name, not through the parent table, so that it never holds a lock
// on the outbox that EnsurePartitions (CREATE TABLE ... PARTITION OF takes ACCESS
// EXCLUSIVE on the parent), and the writers queued behind it, would have to wait for.
// Rows below the head never change and offsets are re-checked before each removal,
// so the plan needs no single snapshot.
func planPrune(ctx context.Context, conn *pgx.Conn, opt PruneOptions, rep *PruneReport) ([]pruneStep, error) {
	if err := conn.QueryRow(ctx, "SELECT now() - $1::bigint * interval '1 microsecond'",
		opt.OlderThan.Microseconds()).Scan(&rep.Cutoff); err != nil {
		return nil, fmt.Errorf("read cutoff: %w", err)
	}
	var err error
	if rep.Head, err = Head(ctx, conn); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, "SELECT consumer, last_seq FROM cn_relay.consumer_offsets ORDER BY last_seq, consumer")
	if err != nil {
		return nil, fmt.Errorf("read consumer offsets: %w", err)
	}
	consumers, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Name string
		Last int64
	}])
	if err != nil {
		return nil, fmt.Errorf("read consumer offsets: %w", err)
	}
	rep.Consumers = len(consumers)
	parts, err := Partitions(ctx, conn)
	if err != nil {
		return nil, err
	}

	// bound is the highest seq that may go as far as consumers and the head are concerned.
	bound := rep.Head - 1
	if !opt.Force && len(consumers) > 0 {
		bound = min(bound, consumers[0].Last)
	}
	var steps []pruneStep
	for _, p := range parts {
		table := pgx.Identifier{"cn_relay", p.Name}.Sanitize()
		var (
			n              int64
			first, last    pgtype.Int8
			newest         pgtype.Timestamptz
			keepSeq        int64
			keepIngestedAt time.Time
		)
		if err := conn.QueryRow(ctx, "SELECT count(*), min(seq), max(seq), max(ingested_at) FROM "+table).
			Scan(&n, &first, &last, &newest); err != nil {
			return nil, fmt.Errorf("read partition %s: %w", p.Name, err)
		}
		if p.Hi <= rep.Head && (n == 0 || newest.Time.Before(rep.Cutoff) && last.Int64 <= bound) {
			steps = append(steps, pruneStep{part: p, rows: n, from: p.Lo, to: p.Hi, last: last.Int64, drop: true})
			continue
		}
		if n == 0 {
			if rep.Head > 0 {
				rep.Stopped = fmt.Sprintf("partition %s seq [%d, %d) and later: they lie at or above the head", p.Name, p.Lo, p.Hi)
			}
			break
		}
		// The first row that must stay; the rows before it in this partition may go.
		err := conn.QueryRow(ctx, "SELECT seq, ingested_at FROM "+table+
			" WHERE NOT (ingested_at < $1 AND seq <= $2) ORDER BY seq LIMIT 1", rep.Cutoff, bound).
			Scan(&keepSeq, &keepIngestedAt)
		if err != nil {
			return nil, fmt.Errorf("read partition %s: %w", p.Name, err)
		}
		var del int64
		var delLast pgtype.Int8
		if err := conn.QueryRow(ctx, "SELECT count(*), max(seq) FROM "+table+" WHERE seq < $1", keepSeq).Scan(&del, &delLast); err != nil {
			return nil, fmt.Errorf("read partition %s: %w", p.Name, err)
		}
		if del > 0 {
			steps = append(steps, pruneStep{part: p, rows: del, from: first.Int64, to: keepSeq, last: delLast.Int64})
		}
		var why string
		switch {
		case keepSeq == rep.Head:
			why = "it is the head"
		case !keepIngestedAt.Before(rep.Cutoff):
			why = "it was ingested at " + keepIngestedAt.UTC().Format(time.RFC3339) + ", after the cutoff"
		default:
			why = fmt.Sprintf("consumer %s at seq %d has not consumed it", consumers[0].Name, consumers[0].Last)
		}
		rep.Stopped = fmt.Sprintf("seq %d and later (partition %s seq [%d, %d)): %s", keepSeq, p.Name, p.Lo, p.Hi, why)
		break
	}

	// Every row with seq < removeEnd goes.
	var removeEnd int64
	if len(steps) > 0 {
		removeEnd = steps[len(steps)-1].to
	}
	for _, c := range consumers {
		h := HeldBack{Consumer: c.Name, LastSeq: c.Last}
		if h.Rows, err = countExpired(ctx, conn, parts, c.Last, math.MaxInt64, rep.Cutoff); err != nil {
			return nil, err
		}
		if h.Rows == 0 {
			continue
		}
		if opt.Force {
			if h.Removed, err = countExpired(ctx, conn, parts, c.Last, removeEnd, rep.Cutoff); err != nil {
				return nil, err
			}
		}
		rep.HeldBack = append(rep.HeldBack, h)
	}
	return steps, nil
}

// countExpired counts the rows with after < seq < before ingested before cutoff, one
// partition (and the default partition) at a time, so that no statement locks the
// parent table.
func countExpired(ctx context.Context, conn *pgx.Conn, parts []Partition, after, before int64, cutoff time.Time) (int64, error) {
	var total int64
	for _, p := range append(parts, Partition{Name: "events_outbox_default", Lo: math.MinInt64, Hi: math.MaxInt64}) {
		if p.Hi <= after+1 || p.Lo >= before {
			continue
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{"cn_relay", p.Name}.Sanitize()+
			" WHERE seq > $1 AND seq < $2 AND ingested_at < $3", after, before, cutoff).Scan(&n); err != nil {
			return 0, fmt.Errorf("count expired rows in %s: %w", p.Name, err)
		}
		total += n
	}
	return total, nil
}

// dropPartition drops s.part in one transaction and returns the time from the outbox
// lock granted to commit returned. Unless force, it first checks that every consumer
// is still past the partition's last row.
func dropPartition(ctx context.Context, conn *pgx.Conn, s pruneStep, force bool) (time.Duration, error) {
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
		if !force && s.rows > 0 {
			if err := checkConsumersPast(ctx, tx, s.last); err != nil {
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
func deleteRows(ctx context.Context, conn *pgx.Conn, s pruneStep, cutoff time.Time, force bool) (int64, error) {
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
			if !force {
				if err := checkConsumersPast(ctx, tx, min(to-1, s.last)); err != nil {
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

// checkConsumersPast locks the consumer offsets against change until tx ends (SHARE
// mode: offsets can neither move nor be registered) and fails unless every consumer
// has consumed seq.
func checkConsumersPast(ctx context.Context, tx pgx.Tx, seq int64) error {
	if _, err := tx.Exec(ctx, "LOCK TABLE cn_relay.consumer_offsets IN SHARE MODE"); err != nil {
		return err
	}
	var consumer string
	var last int64
	err := tx.QueryRow(ctx, "SELECT consumer, last_seq FROM cn_relay.consumer_offsets ORDER BY last_seq LIMIT 1").Scan(&consumer, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if last < seq {
		return fmt.Errorf("consumer %s is at seq %d, below seq %d, since the prune was planned (its offset moved back or it was just registered); nothing more was removed", consumer, last, seq)
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

// PartitionStat describes one range partition for an operator.
type PartitionStat struct {
	Partition
	// Rows is the row count when Exact, else the planner's estimate (-1: unknown).
	Rows  int64
	Exact bool
	// FirstSeq and LastSeq are the lowest and highest seq in the partition and
	// FirstIngestedAt, LastIngestedAt those rows' ingest times; all zero when empty.
	FirstSeq, LastSeq               int64
	FirstIngestedAt, LastIngestedAt time.Time
}

// PartitionStats lists the range partitions in seq order with their first and last
// rows (two index lookups each) and their row counts: exact counts read every row,
// otherwise the planner's estimate is used. An empty partition always counts 0.
func PartitionStats(ctx context.Context, q Querier, exact bool) ([]PartitionStat, error) {
	parts, err := Partitions(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]PartitionStat, 0, len(parts))
	for _, p := range parts {
		s := PartitionStat{Partition: p, Exact: exact}
		table := pgx.Identifier{"cn_relay", p.Name}.Sanitize()
		err := q.QueryRow(ctx, "SELECT seq, ingested_at FROM "+table+" ORDER BY seq LIMIT 1").Scan(&s.FirstSeq, &s.FirstIngestedAt)
		if err == nil {
			err = q.QueryRow(ctx, "SELECT seq, ingested_at FROM "+table+" ORDER BY seq DESC LIMIT 1").Scan(&s.LastSeq, &s.LastIngestedAt)
		}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			s.Exact = true
		case err != nil:
			return nil, fmt.Errorf("read partition %s: %w", p.Name, err)
		case exact:
			err = q.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&s.Rows)
		default:
			err = q.QueryRow(ctx, "SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", table).Scan(&s.Rows)
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("count partition %s: %w", p.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}
