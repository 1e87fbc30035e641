package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// Sweep is the expiry sweep (NIP-40; docs/architecture.md "Words": not the
// pending sweep, SweepPending, nor the relay's forgetting of idle rate-limit
// buckets). It marks up to `limit` expired, not yet deleted events as deleted (reason
// expiration) and appends a `delete` outbox row per topic of each that was visible,
// in one transaction. It returns how many it marked; 0 also when another relay's
// sweep holds the lock. Queries hide expired events even before they are swept.
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	n := 0
	_, err := s.writer.Write(ctx, func(ctx context.Context, tx pgx.Tx) ([]outbox.Record, error) {
		var mine bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", schema.SweepLock).Scan(&mine); err != nil || !mine {
			return nil, err
		}
		now := s.now()
		rows, err := tx.Query(ctx, `
			UPDATE cn_relay.events SET deleted_at = now(), deleted_reason = '`+string(outbox.ReasonExpiration)+`'
			WHERE id IN (SELECT id FROM cn_relay.events
			             WHERE expires_at <= $1 AND deleted_at IS NULL ORDER BY expires_at LIMIT $2)
			RETURNING id, kind, created_at, coalesce(effective_key, ''), is_effective`, now.Unix(), limit)
		if err != nil {
			return nil, err
		}
		type gone struct {
			id, key   string
			kind      int
			createdAt int64
		}
		var visible []gone
		var ids []string
		for rows.Next() {
			var g gone
			var effective bool
			if err := rows.Scan(&g.id, &g.kind, &g.createdAt, &g.key, &effective); err != nil {
				rows.Close()
				return nil, err
			}
			n++
			if effective {
				visible = append(visible, g)
				ids = append(ids, g.id)
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, nil
		}
		topics := map[string][]string{}
		trows, err := tx.Query(ctx, scopeByIDSQL+" ORDER BY t.event_id, t.topic_id", ids)
		if err != nil {
			return nil, err
		}
		for trows.Next() {
			var id, t string
			if err := trows.Scan(&id, &t); err != nil {
				trows.Close()
				return nil, err
			}
			topics[id] = append(topics[id], t)
		}
		if err := trows.Err(); err != nil {
			return nil, err
		}
		var recs []outbox.Record
		for _, g := range visible {
			for _, t := range topics[g.id] {
				recs = append(recs, outbox.Record{Op: outbox.OpDelete, EventID: g.id, TopicID: t, Kind: g.kind,
					CreatedAt: g.createdAt, IngestedAt: now, EffectiveKey: g.key, Reason: outbox.ReasonExpiration})
			}
		}
		return recs, nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep expired events: %w", err)
	}
	return n, nil
}
