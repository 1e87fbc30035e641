package trust

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Ranks returns the trust-v1 ranks (0..100, cn_trust.scores as the last
// recompute wrote them) of the keys of pks that have one; a key never
// ranked is absent. It is the read other packages use instead of their own
// SQL over the table (the console's pages).
func Ranks(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, pks []string) (map[string]int, error) {
	out := map[string]int{}
	if len(pks) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, "SELECT pubkey, rank FROM cn_trust.scores WHERE pubkey = ANY($1)", pks)
	if err != nil {
		return nil, fmt.Errorf("read trust ranks: %w", err)
	}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var pk string
		var rank int16
		if err := row.Scan(&pk, &rank); err != nil {
			return struct{}{}, err
		}
		out[pk] = int(rank)
		return struct{}{}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read trust ranks: %w", err)
	}
	return out, nil
}
