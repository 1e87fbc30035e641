package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// SyncTreeItems streams to add, from one snapshot that holds the outbox up to
// seq, every visible event of the public kinds (not protocol.IsPrivateKind)
// that has a topic (schema.ScopeSQL: the events that have outbox rows), in no
// order, whatever group it is in: the relay's NIP-77 fingerprint tree is
// built from them, and keeps out what a group keeps from anonymous readers
// itself. An event's group is the group scope (groups.ScopePrefix) among its
// scope rows, as the store places it (protocol.GroupOf). unscoped reports
// whether any visible public event of that snapshot has no topic (no outbox
// rows: the tree could not follow it). It reads the whole table: once per
// relay start.
func (s *Reader) SyncTreeItems(ctx context.Context, add func(negentropy.Candidate)) (seq int64, unscoped bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The snapshot is taken by the transaction's first statement.
		if seq, err = outbox.Head(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.events e WHERE "+visibleSQL+" AND "+privateHiddenSQL+
			" AND NOT EXISTS (SELECT 1 FROM cn_relay.event_topics t WHERE t.event_id = e.id AND "+schema.ScopeSQL+"))",
			s.now().Unix()).Scan(&unscoped); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT e.created_at, e.id, e.kind, coalesce(e.expires_at, 0), coalesce(e.effective_key, ''),"+
			" CASE WHEN "+schema.NotGroupEventSQL+" THEN NULL ELSE (SELECT t.topic_id FROM cn_relay.event_topics t WHERE t.event_id = e.id AND "+
			schema.ScopeSQL+" AND t.topic_id LIKE '"+groups.ScopePrefix+"%' LIMIT 1) END"+
			" FROM cn_relay.events e WHERE "+visibleSQL+" AND "+privateHiddenSQL+
			" AND EXISTS (SELECT 1 FROM cn_relay.event_topics t WHERE t.event_id = e.id AND "+schema.ScopeSQL+")", s.now().Unix())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c negentropy.Candidate
			var kind int32
			var topic *string
			if err := rows.Scan(&c.CreatedAt, &c.ID, &kind, &c.Expires, &c.Key, &topic); err != nil {
				return err
			}
			c.Kind = int(kind)
			if topic != nil {
				c.Group, c.Grouped = strings.CutPrefix(*topic, groups.ScopePrefix)
			}
			add(c)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, false, fmt.Errorf("read sync tree items: %w", err)
	}
	return seq, unscoped, nil
}
