package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// PendingStats is what SweepPending did and found.
type PendingStats struct {
	Expired   int   // pending events deleted as older than PendingLimits.MaxAge
	Published int   // pending events published because their key is a member now
	Events    int64 // pending events left
	Keys      int64 // distinct pubkeys among them
}

// admitChunk bounds the keys one SweepPending transaction admits.
const admitChunk = 100

// SweepPending maintains the pending identity events (see Ingest): it deletes
// the ones older than PendingLimits.MaxAge, publishes those of keys that are
// members now (admitted by an operator or another process, or a batch that
// raced with their first post) or that the member gate admits, and counts what
// is left for the global cap and the metrics. Publishing goes through the outbox
// writer, as Ingest; concurrent sweeps of several relays are harmless (the
// second finds the events stored and the rows gone).
func (s *Store) SweepPending(ctx context.Context) (PendingStats, error) {
	var st PendingStats
	if s.pub.pending.MaxAge > 0 {
		tag, err := s.pool.Exec(ctx, "DELETE FROM cn_relay.pending_events WHERE received_at < $1", s.now().Add(-s.pub.pending.MaxAge))
		if err != nil {
			return st, fmt.Errorf("expire pending events: %w", err)
		}
		st.Expired = int(tag.RowsAffected())
	}
	var due []string
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT pe.pubkey, m.pubkey IS NOT NULL
		FROM cn_relay.pending_events pe LEFT JOIN cn_relay.members m ON m.pubkey = pe.pubkey ORDER BY 1`)
	if err != nil {
		return st, fmt.Errorf("list pending keys: %w", err)
	}
	for rows.Next() {
		var pk string
		var member bool
		if err := rows.Scan(&pk, &member); err != nil {
			rows.Close()
			return st, fmt.Errorf("list pending keys: %w", err)
		}
		if member || (s.pub.gate != nil && s.pub.gate(pk)) {
			due = append(due, pk)
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("list pending keys: %w", err)
	}
	for chunk := range slices.Chunk(due, admitChunk) {
		p := s.pub.newPlan(nil, s.Rules())
		p.admitting = chunk
		if err := s.write(ctx, p, false); err != nil {
			return st, fmt.Errorf("publish pending events: %w", err)
		}
		st.Published += len(p.promoted)
	}
	if err := s.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT pubkey) FROM cn_relay.pending_events").
		Scan(&st.Events, &st.Keys); err != nil {
		return st, fmt.Errorf("count pending events: %w", err)
	}
	s.pub.pendingRows.Store(st.Events)
	return st, nil
}

// PendingEvents is the number of pending identity events as last counted by
// SweepPending, plus those kept since.
func (s *Store) PendingEvents() int64 { return s.pub.pendingRows.Load() }

// PendingSummary is what waits in cn_relay.pending_events, for status reports.
type PendingSummary struct {
	Events        int64   `json:"events"`
	Keys          int64   `json:"keys"`
	OldestSeconds float64 `json:"oldest_seconds"`
}

// SummarizePending reads the pending identity events' count, distinct keys and
// the age of the oldest (cnctl status).
func SummarizePending(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (PendingSummary, error) {
	var s PendingSummary
	err := q.QueryRow(ctx, `SELECT count(*), count(DISTINCT pubkey),
		coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8 FROM cn_relay.pending_events`).
		Scan(&s.Events, &s.Keys, &s.OldestSeconds)
	if err != nil {
		return s, fmt.Errorf("summarize pending events: %w", err)
	}
	return s, nil
}
