package outbox

import (
	"context"
	"fmt"
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
