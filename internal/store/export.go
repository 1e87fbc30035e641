package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/nbd-wtf/go-nostr"
)

// ErrSearchFilter is returned by Export for a filter with `search`, whose
// relevance order has no stable cursor.
var ErrSearchFilter = errors.New("search filters cannot be exported")

// Export calls fn with every event a REQ with filter f would return (visible:
// effective, not deleted, not expired as of now; #t matching own t tags), oldest
// first, ties by lowest id, so that an event comes after the ones it can
// inherit topics from and after the versions it replaces. A positive f.Limit
// keeps the newest Limit events (still written oldest first), no Limit keeps
// all, LimitZero none (as in a REQ). The rows come from one query, read as fn consumes them: memory
// stays flat whatever the size, and the result is one consistent snapshot. An
// error from fn stops the export and is returned as is.
func (s *Reader) Export(ctx context.Context, f nostr.Filter, fn func(*nostr.Event) error) error {
	if f.Search != "" {
		return ErrSearchFilter
	}
	where, args, ok := s.filterSQL(f, protocol.Viewer{Operator: true}) // an export is the operator's copy of everything
	if !ok || f.LimitZero {
		return nil
	}
	sql := "SELECT " + eventColumns + " FROM cn_relay.events e WHERE " + where + " ORDER BY e.created_at, e.id"
	if f.Limit > 0 {
		args = append(args, f.Limit)
		sql = "SELECT * FROM (SELECT " + eventColumns + " FROM cn_relay.events e WHERE " + where +
			fmt.Sprintf(" ORDER BY e.created_at DESC, e.id LIMIT $%d) e ORDER BY e.created_at, e.id", len(args))
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("export events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return fmt.Errorf("export events: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export events: %w", err)
	}
	return nil
}
