package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// ErrTooManySyncItems is returned by SyncItems when more than max events match.
var ErrTooManySyncItems = readpath.ErrTooManySyncItems

// ErrSyncBudget is returned by SyncItems when its take refused a row: the
// caller's memory for the items ran out.
var ErrSyncBudget = readpath.ErrSyncBudget

// SyncItems returns the (created_at, id) of every stored event matching f that v
// may read, with the visibility of Query (hidden, deleted, expired and
// unreadable private events never appear), for a NIP-77 session. The filter's
// Limit is ignored: a sync covers every match, and at most max of them; when
// more match, it returns ErrTooManySyncItems without reading further. Search
// filters are the caller's to refuse; f must have been validated
// (protocol.ValidateFilter). The items come in no promised order. When take
// is not nil it asks take(n) before each row, n being the row's raw size,
// and returns ErrSyncBudget at the first refusal.
func (s *Reader) SyncItems(ctx context.Context, f nostr.Filter, v protocol.Viewer, max int, take func(n int) bool) ([]negentropy.Item, error) {
	sql, args, ok := s.syncSQL(f, v, max)
	if !ok {
		return nil, nil
	}
	var q querier = s.pool
	if syncIndexOnly(f, v) {
		// The ordered index-only scan of events_sync_idx, whatever the
		// statistics say (see syncSQL): a read-only transaction whose planner
		// may not use a sequential or bitmap scan.
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			return nil, fmt.Errorf("sync items: %w", err)
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if _, err := tx.Exec(ctx, syncPlanSQL); err != nil {
			return nil, fmt.Errorf("sync items: %w", err)
		}
		q = tx
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("sync items: %w", err)
	}
	defer rows.Close()
	items := make([]negentropy.Item, 0, 1024)
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
// tells. For the public viewer and a filter of kinds, since and until only
// (the whole node's sync, or a kind's), every column it reads is in the
// partial index events_sync_idx (schema 0019), whose predicate is the live
// part of the visibility rule; the query asks for the index's order, (created_at,
// id), so Postgres reads the items with an index-only scan and no sort, and
// reads no heap page for rows on pages the visibility map marks all-visible
// (see docs/negentropy.md on what keeps them so). Other filters (ids, authors, tags,
// or an authenticated viewer) read in no order, so that the planner picks the
// most selective index without a sort, and read the heap; the negentropy
// storage sorts in memory either way.
func (s *Reader) syncSQL(f nostr.Filter, v protocol.Viewer, max int) (string, []any, bool) {
	where, args, ok := s.filterSQLWith(f, 0, v, syncIndexOnly(f, v))
	if !ok {
		return "", nil, false
	}
	args = append(args, max+1)
	order := ""
	if syncIndexOnly(f, v) {
		order = " ORDER BY e.created_at, e.id"
	}
	return "SELECT e.created_at, e.id FROM cn_relay.events e WHERE " + where + order +
		" LIMIT $" + strconv.Itoa(len(args)), args, true
}

// syncPlanSQL pins the plan of an index-only sync query (syncIndexOnly) for
// its transaction. Left alone, Postgres prefers a bitmap heap scan and a sort
// of every match when the table's statistics are missing or the visibility
// map is young (measured here on 20,000 rows, vacuumed, never analysed), which
// sorts up to MaxSyncEvents rows in work_mem and reads every heap page; the
// ordered index-only scan streams the rows and reads the heap only for pages
// not yet all-visible.
const syncPlanSQL = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off"

// syncIndexOnly reports whether events_sync_idx holds every column f's sync
// query reads for v: the public viewer, and no ids, authors or tags.
func syncIndexOnly(f nostr.Filter, v protocol.Viewer) bool {
	return !v.Operator && len(v.Authed) == 0 && f.IDs == nil && f.Authors == nil && len(f.Tags) == 0
}
