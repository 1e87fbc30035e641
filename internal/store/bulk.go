package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// DryRunTx decides and writes events exactly as IngestTx does, in the caller's
// transaction, but appends nothing to the outbox: it returns how many outbox
// rows the batch would have appended instead. It is for dry runs (`cnctl
// import --dry-run`) whose transaction is rolled back: later batches in the
// same transaction see this one's events, as they would after a real import,
// and no outbox lock is taken, so the relay's writers are not held up.
func (s *Store) DryRunTx(ctx context.Context, tx outbox.Batcher, evs []*nostr.Event) ([]protocol.Verdict, int, error) {
	p := s.newPlan(evs)
	if err := p.load(ctx, tx); err != nil {
		return nil, 0, fmt.Errorf("dry-run %d events: %w", len(evs), err)
	}
	p.decide()
	var b pgx.Batch
	p.queueWrites(&b)
	queueRestorePlans(&b)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return nil, 0, fmt.Errorf("dry-run %d events: write events: %w", len(evs), err)
		}
	}
	return p.results, len(p.records), nil
}

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
func (s *Store) Export(ctx context.Context, f nostr.Filter, fn func(*nostr.Event) error) error {
	if f.Search != "" {
		return ErrSearchFilter
	}
	where, args, ok := s.filterSQL(f)
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
