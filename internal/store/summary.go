package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/schema"
)

// EventSummary is a stored event as an operator's list shows it: its
// content cut to a length, whether moderation hid it or it was deleted, and
// its group (protocol.GroupOf as the store placed it; "" for none).
type EventSummary struct {
	ID        string
	Pubkey    string
	Kind      int
	CreatedAt int64
	Content   string // its first contentChars characters
	Hidden    bool   // hidden by moderation (deleted_reason 'moderation')
	Deleted   bool   // deleted, for whatever reason
	Group     string
}

// EventSummaries reads the stored events among ids, whatever became of
// them (hidden, deleted), each with its content's first contentChars
// characters, in no order; an id the store never had is absent. It is the
// read of cn_relay.events other packages use instead of their own SQL (the
// console's moderation queue).
func EventSummaries(ctx context.Context, q querier, ids []string, contentChars int) ([]EventSummary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT e.id, e.pubkey, e.kind, e.created_at, left(e.content, $2),
			coalesce(e.deleted_reason = 'moderation', false), e.deleted_at IS NOT NULL, `+schema.GroupOfSQL("e.id")+`
		FROM cn_relay.events e WHERE e.id = ANY($1)`, ids, contentChars)
	if err != nil {
		return nil, fmt.Errorf("read event summaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventSummary, error) {
		var s EventSummary
		err := row.Scan(&s.ID, &s.Pubkey, &s.Kind, &s.CreatedAt, &s.Content, &s.Hidden, &s.Deleted, &s.Group)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read event summaries: %w", err)
	}
	return out, nil
}
