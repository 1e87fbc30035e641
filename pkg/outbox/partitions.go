package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPartitionsAhead is how many empty range partitions EnsurePartitions keeps
// beyond the partition that holds the current head.
const DefaultPartitionsAhead = 2

// Partition is one range partition of the outbox, holding seq values in [Lo, Hi).
type Partition struct {
	Name   string
	Lo, Hi int64
}

// EnsurePartitions creates range partitions until ahead whole partitions lie beyond
// the highest seq drawn so far, and moves any rows that fell into the default
// partition. It is idempotent and safe to run concurrently. It returns the number of
// partitions created.
func EnsurePartitions(ctx context.Context, q Querier, ahead int) (int, error) {
	if ahead < 1 {
		ahead = DefaultPartitionsAhead
	}
	var created int
	if err := q.QueryRow(ctx, "SELECT cn_relay.outbox_ensure_partitions($1)", ahead).Scan(&created); err != nil {
		return 0, fmt.Errorf("ensure outbox partitions: %w", err)
	}
	return created, nil
}

// Partitions lists the outbox's range partitions in seq order.
func Partitions(ctx context.Context, q Querier) ([]Partition, error) {
	rows, err := q.Query(ctx, "SELECT name, lo, hi FROM cn_relay.outbox_partitions ORDER BY lo")
	if err != nil {
		return nil, fmt.Errorf("list outbox partitions: %w", err)
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		if err := rows.Scan(&p.Name, &p.Lo, &p.Hi); err != nil {
			return nil, fmt.Errorf("scan outbox partition: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list outbox partitions: %w", err)
	}
	return out, nil
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
