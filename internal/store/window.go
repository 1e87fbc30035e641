package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Window is what the outbox rows after a seq changed, read in one snapshot
// of the database (readpath.Window).
type Window = readpath.Window

// windowSQL reads, in one statement (one snapshot), the outbox head and how
// many of the rows after seq $2 it read, up to $3; then, when they were
// fewer than $3, each event they name, the effective key of its upsert rows
// and its columns if it is visible ($1 is now). The rows are read in seq
// order under the limit, so Postgres walks the partitions' primary keys from
// $2 (on any plan, generic ones included: see readWindow); each event is then
// fetched by its primary key through a LATERAL subquery with a LIMIT, never
// hash-joined with a scan of the events.
var windowSQL = `
WITH o AS (SELECT event_id, op, effective_key, topic_id FROM cn_relay.events_outbox WHERE seq > $2 ORDER BY seq LIMIT $3),
c AS (SELECT count(*) AS read, coalesce(bool_or(topic_id LIKE 'GROUP:%'), false) AS grouped FROM o),
n AS (SELECT event_id, max(effective_key) FILTER (WHERE op = 'upsert') AS ukey FROM o GROUP BY event_id)
SELECT h.seq, c.read, c.grouped, n.event_id, n.ukey, ` + eventColumns + `
FROM (` + outbox.HeadSQL + `) h
CROSS JOIN c
LEFT JOIN n ON c.read < $3
LEFT JOIN LATERAL (SELECT ` + eventColumns + ` FROM cn_relay.events e WHERE e.id = n.event_id AND ` + visibleSQL + ` LIMIT 1) e ON true`

// Window reads what the outbox rows after seq `after` changed (see Window),
// in one statement: one round trip, its own snapshot. A window of more than
// limit rows is not read: More is set.
func (s *Reader) Window(ctx context.Context, after int64, limit int) (Window, error) {
	return s.readWindow(ctx, s.pool, after, limit)
}

// batcher is what readWindow needs: the pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func (s *Reader) readWindow(ctx context.Context, q batcher, after int64, limit int) (Window, error) {
	w := Window{Named: map[string]bool{}, Keys: map[string]bool{}}
	var b pgx.Batch
	// Planned once per connection, as outbox.QueueReadAfter's read: the plan
	// does not depend on the values, and planning the partitioned outbox for
	// every read would cost more than the read of a short window.
	b.Queue(`SELECT set_config('cn.outbox_plan_cache_mode', current_setting('plan_cache_mode'), true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`)
	b.Queue(windowSQL, s.now().Unix(), after, limit+1).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var (
				read                          int64
				eventID, ukey                 *string
				id, pubkey, tags, content, sg *string
				createdAt                     *int64
				kind                          *int32
			)
			if err := rows.Scan(&w.Seq, &read, &w.Groups, &eventID, &ukey, &id, &pubkey, &createdAt, &kind, &tags, &content, &sg); err != nil {
				return err
			}
			if read > int64(limit) {
				w.More = true // (the head alone)
				continue
			}
			if eventID == nil {
				continue // (no rows after `after`: the head alone)
			}
			w.Named[*eventID] = true
			if ukey != nil && *ukey != "" {
				w.Keys[*ukey] = true
			}
			if id == nil {
				continue // (not visible)
			}
			ev := &nostr.Event{ID: *id, PubKey: *pubkey, CreatedAt: nostr.Timestamp(*createdAt), Kind: int(*kind), Content: *content, Sig: *sg}
			var err error
			if ev.Tags, err = decodeTags(*tags); err != nil {
				return err
			}
			w.Events = append(w.Events, ev)
		}
		return rows.Err()
	})
	b.Queue("SELECT set_config('plan_cache_mode', current_setting('cn.outbox_plan_cache_mode'), true)")
	if err := q.SendBatch(ctx, &b).Close(); err != nil {
		return Window{}, fmt.Errorf("read outbox window after %d: %w", after, err)
	}
	return w, nil
}

// Snapshot reads the database in one snapshot: a read-only REPEATABLE READ
// transaction whose first statement takes it (InSnapshot). Its reads agree
// with each other: a Window's Seq is the outbox head of every Query's and
// Read's snapshot too. It implements readpath.Snapshot.
type Snapshot struct {
	r  *Reader
	tx pgx.Tx
}

// InSnapshot runs fn with a Snapshot (a *Snapshot), then ends its
// transaction (relay.Primary).
func (s *Reader) InSnapshot(ctx context.Context, fn func(readpath.Snapshot) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(&Snapshot{r: s, tx: tx})
	})
}

// Window is Reader.Window in the snapshot.
func (sn *Snapshot) Window(ctx context.Context, after int64, limit int) (Window, error) {
	return sn.r.readWindow(ctx, sn.tx, after, limit)
}

// Query is Reader.Query in the snapshot.
func (sn *Snapshot) Query(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) ([]*nostr.Event, error) {
	return sn.r.query(ctx, sn.tx, filters, v, nil)
}

// Read is Reader.Read in the snapshot; its Seq is 0 (Window's Seq is the
// snapshot's head).
func (sn *Snapshot) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	o := newReadOpts(req)
	evs, err := sn.r.query(ctx, sn.tx, req.Filters, req.Viewer, o)
	if err != nil {
		return readpath.Result{}, err
	}
	return o.result(evs, 0), nil
}
