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

// ErrSyncBudget is returned by SyncItems when its row budget (WithRowBudget)
// refused a row: the caller's memory for the items ran out.
var ErrSyncBudget = errors.New("the sync items do not fit the memory budget")

// SyncItems returns the (created_at, id) of every stored event matching f that v
// may read, with the visibility of Query (hidden, deleted, expired and
// unreadable private events never appear), for a NIP-77 session. The filter's
// Limit is ignored: a sync covers every match, and at most max of them; when
// more match, it returns ErrTooManySyncItems without reading further. Search
// filters are the caller's to refuse; f must have been validated
// (protocol.ValidateFilter). The items come sorted by (created_at, id). Under a
// row budget (WithRowBudget) it asks take(n) before each row and returns
// ErrSyncBudget at the first refusal.
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
	take := rowBudget(ctx)
	for rows.Next() {
		if len(items) == max {
			return nil, ErrTooManySyncItems
		}
		if take != nil && !take(rowSize(rows.RawValues())) {
			return nil, ErrSyncBudget
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
// tells, in (created_at, id) order. For the public viewer and a filter of
// kinds, since and until only (the whole node's sync, or a kind's), every
// column it reads is in the partial index events_sync_idx (schema 0019), whose
// predicate is the live part of the visibility rule, so Postgres reads the
// items with an index-only scan in that order: no heap page is read for rows
// on all-visible pages (see the README on what keeps pages all-visible). Other
// filters (ids, authors, tags) use their own indexes and read the heap.
func (s *Reader) syncSQL(f nostr.Filter, v protocol.Viewer, max int) (string, []any, bool) {
	where, args, ok := s.filterSQL(f, v)
	if !ok {
		return "", nil, false
	}
	args = append(args, max+1)
	return "SELECT e.created_at, e.id FROM cn_relay.events e WHERE " + where +
		" ORDER BY e.created_at, e.id LIMIT $" + strconv.Itoa(len(args)), args, true
}
