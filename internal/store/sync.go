package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
)

// ErrTooManySyncItems is returned by SyncItems when more than max events match.
var ErrTooManySyncItems = errors.New("too many events match the sync filter")

// SyncItems returns the (created_at, id) of every stored event matching f that v
// may read, with the visibility of Query (hidden, deleted, expired and
// unreadable private events never appear), for a NIP-77 session. The filter's
// Limit is ignored: a sync covers every match, and at most max of them; when
// more match, it returns ErrTooManySyncItems without reading further. Search
// filters are the caller's to refuse; f must have been validated
// (protocol.ValidateFilter). The items come in no particular order; the
// negentropy storage sorts them.
func (s *Reader) SyncItems(ctx context.Context, f nostr.Filter, v protocol.Viewer, max int) ([]negentropy.Item, error) {
	sql, args, ok := s.syncSQL(f, v, max)
	if !ok {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("sync items: %w", err)
	}
	defer rows.Close()
	items := make([]negentropy.Item, 0, 1024)
	for rows.Next() {
		if len(items) == max {
			return nil, ErrTooManySyncItems
		}
		var it negentropy.Item
		var createdAt int64
		if err := rows.Scan(&createdAt, &it.ID); err != nil {
			return nil, fmt.Errorf("sync items: %w", err)
		}
		it.CreatedAt = nostr.Timestamp(createdAt)
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sync items: %w", err)
	}
	return items, nil
}

// syncSQL is SyncItems' query: max+1 rows at most, so that one more than max
// tells. Only the two columns are read, in no order: the negentropy storage
// sorts them in memory, so the planner is free to pick the cheapest index (a
// bitmap scan for an author's events) and never sorts. The visibility columns
// come from the heap: an index scan, not an index-only one.
func (s *Reader) syncSQL(f nostr.Filter, v protocol.Viewer, max int) (string, []any, bool) {
	where, args, ok := s.filterSQL(f, v)
	if !ok {
		return "", nil, false
	}
	args = append(args, max+1)
	return "SELECT e.created_at, e.id FROM cn_relay.events e WHERE " + where +
		" LIMIT $" + strconv.Itoa(len(args)), args, true
}
