package outbox

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pruneStep is one planned removal: a whole partition, or seq [from, to) of it.
type pruneStep struct {
	part     Partition
	rows     int64
	from, to int64 // seq range concerned, [from, to)
	last     int64 // the highest seq of a row removed
	drop     bool
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
	consumers, err := opt.Readers.Positions(ctx, conn)
	if err != nil {
		return nil, err
	}
	rep.Consumers = len(consumers)
	parts, err := Partitions(ctx, conn)
	if err != nil {
		return nil, err
	}

	// bound is the highest seq that may go as far as consumers and the head are concerned.
	bound := rep.Head - 1
	if !opt.Force && len(consumers) > 0 {
		bound = min(bound, consumers[0].Seq)
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
			why = fmt.Sprintf("consumer %s at seq %d has not consumed it", consumers[0].Reader, consumers[0].Seq)
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
		h := HeldBack{Consumer: c.Reader, LastSeq: c.Seq}
		if h.Rows, err = countExpired(ctx, conn, parts, c.Seq, math.MaxInt64, rep.Cutoff); err != nil {
			return nil, err
		}
		if h.Rows == 0 {
			continue
		}
		if opt.Force {
			if h.Removed, err = countExpired(ctx, conn, parts, c.Seq, removeEnd, rep.Cutoff); err != nil {
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
