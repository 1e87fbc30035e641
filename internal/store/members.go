package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CommunityMember is one row of cn_relay.members: a key whose first event
// was stored (or that an operator allowed), when, and that event's id. A
// community member is neither a NIP-43 relay member nor a NIP-29 group
// member (docs/architecture.md "Words").
type CommunityMember struct {
	Pubkey     string
	JoinedAt   time.Time
	FirstEvent string
}

// CommunityMembersPage reads at most limit community members, newest first
// (joined_at, then pubkey, both descending), whose pubkey starts with prefix
// ("" for all), after the cursor (after, afterPK) when after is not nil.
// Each page is one index range scan from the cursor, wherever it is in the
// list (keyset paging).
func CommunityMembersPage(ctx context.Context, q querier, limit int, prefix string, after *time.Time, afterPK string) ([]CommunityMember, error) {
	// The cursor's condition is in the statement only when there is a
	// cursor: behind an OR, a cached generic plan would filter the index
	// scan from the list's start instead of starting at the cursor.
	cursor, args := "", []any{limit, prefix}
	if after != nil {
		cursor = "AND (m.joined_at, m.pubkey) < ($3, $4)"
		args = append(args, *after, afterPK)
	}
	rows, err := q.Query(ctx, `SELECT m.pubkey, m.joined_at, m.first_event_id FROM cn_relay.members m
		WHERE ($2 = '' OR starts_with(m.pubkey, $2)) `+cursor+`
		ORDER BY m.joined_at DESC, m.pubkey DESC LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CommunityMember, error) {
		var m CommunityMember
		err := row.Scan(&m.Pubkey, &m.JoinedAt, &m.FirstEvent)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	return out, nil
}
