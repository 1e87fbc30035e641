package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// Recent streams the visible events of the public kinds (not
// protocol.IsPrivateKind) that have a topic (schema.ScopeSQL: the events
// that have outbox rows) newest first, ties by lowest id, at most max of
// them, to add (each decoded, with its JSON built from the stored bytes) until
// add returns false, all from one snapshot that holds the outbox up to seq
// (see QuerySnapshot): it fills the relay's event cache (package eventcache).
// unscoped are the kinds of the visible public events in that snapshot that
// have no topic (and so no outbox rows): the cache cannot follow them.
//
// The walk is pinned to the (created_at DESC, id) index (events_created_at_idx)
// for the same reason as SyncItems': without statistics Postgres may plan a
// sort of the whole table.
func (s *Reader) Recent(ctx context.Context, max int, add func(ev *nostr.Event, js []byte) bool) (seq int64, unscoped []int, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The snapshot is taken by the transaction's first statement.
		if seq, err = outbox.Head(ctx, tx); err != nil {
			return err
		}
		// (a scan of the whole table, once per relay start)
		rows, err := tx.Query(ctx, "SELECT DISTINCT e.kind FROM cn_relay.events e WHERE "+visibleSQL+" AND "+privateHiddenSQL+
			" AND NOT EXISTS (SELECT 1 FROM cn_relay.event_topics t WHERE t.event_id = e.id AND "+schema.ScopeSQL+") ORDER BY 1", s.now().Unix())
		if err != nil {
			return err
		}
		if unscoped, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, syncPlanSQL); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, "SELECT "+eventColumns+" FROM cn_relay.events e WHERE "+visibleSQL+" AND "+privateHiddenSQL+
			" AND EXISTS (SELECT 1 FROM cn_relay.event_topics t WHERE t.event_id = e.id AND "+schema.ScopeSQL+")"+
			" ORDER BY e.created_at DESC, e.id LIMIT $2", s.now().Unix(), max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ev := &nostr.Event{}
			var createdAt int64
			var kind int32
			var tags, content string
			if err := rows.Scan(&ev.ID, &ev.PubKey, &createdAt, &kind, &tags, &content, &ev.Sig); err != nil {
				return err
			}
			if ev.Tags, err = decodeTags(tags); err != nil {
				return err
			}
			ev.CreatedAt, ev.Kind, ev.Content = nostr.Timestamp(createdAt), int(kind), content
			js := appendEventJSON(make([]byte, 0, 200+len(ev.ID)+len(ev.PubKey)+len(tags)+len(content)+len(content)/8+len(ev.Sig)),
				ev.ID, ev.PubKey, createdAt, kind, tags, content, ev.Sig)
			if !add(ev, js) {
				return nil
			}
		}
		return rows.Err()
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read recent events: %w", err)
	}
	return seq, unscoped, nil
}

// StoredKeys streams the id and pubkey of every stored event, whatever its
// state, and every (name, value) of event_tags (the single-letter tags but
// t), from one snapshot that begins after it is called, to key with the
// field names of the relay's seen set (eventcache.SeenScan: "ids",
// "authors", "#x"); value is only valid during the call. It reads both tables
// whole: once per relay start, in the background.
//
// Before the first key it calls size with an estimate of the keys (twice the
// events, plus the tag rows) from pg_class.reltuples, when both tables have
// statistics (the relay keeps them, AnalyzeStale).
func (s *Reader) StoredKeys(ctx context.Context, size func(keys int), key func(field string, value []byte)) error {
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var events, tags float64
		if err := tx.QueryRow(ctx, `SELECT (SELECT reltuples FROM pg_class WHERE oid = 'cn_relay.events'::regclass),
			(SELECT reltuples FROM pg_class WHERE oid = 'cn_relay.event_tags'::regclass)`).Scan(&events, &tags); err != nil {
			return err
		}
		if events >= 0 && tags >= 0 { // (-1: never analysed)
			size(int(2*events + tags))
		}
		rows, err := tx.Query(ctx, "SELECT id, pubkey FROM cn_relay.events")
		if err != nil {
			return err
		}
		for rows.Next() {
			v := rows.RawValues()
			key("ids", v[0])
			key("authors", v[1])
		}
		if rows.Close(); rows.Err() != nil {
			return rows.Err()
		}
		rows, err = tx.Query(ctx, "SELECT name, value FROM cn_relay.event_tags")
		if err != nil {
			return err
		}
		fields := map[string]string{} // name -> "#name"
		for rows.Next() {
			v := rows.RawValues()
			field, ok := fields[string(v[0])]
			if !ok {
				field = "#" + string(v[0])
				fields[string(v[0])] = field
			}
			key(field, v[1])
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("read stored keys: %w", err)
	}
	return nil
}
