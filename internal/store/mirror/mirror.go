// Package mirror writes a mirror's copy of the store's event tables.
//
// A mirror is a database that holds a copy of the primary's events, fed from
// the bridge's stream instead of the relay (the remote indexer's database:
// internal/indexer RemoteHandler). The store owns cn_relay.events and
// cn_relay.event_topics wherever they are (schema/events.go), so the writes
// that keep a mirror live in the store's room, beside the ones that keep the
// primary.
//
// Promises: applied in stream order, the mirror's rows say what the primary's
// say for the kinds mirrored (current version per effective key, deletions
// with their reason); each write is idempotent, so a message applied twice
// (a replay after a crash before the offset moved) changes nothing.
package mirror

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// QueueUpsert queues on b the writes that make a mirror hold ev, stored
// under topicID (one message per topic of an event), as the current version of
// its effective key ("" for a regular event), accepted at ingestedAt.
func QueueUpsert(b *pgx.Batch, ev *nostr.Event, topicID, effectiveKey string, ingestedAt time.Time) {
	tags, err := json.Marshal(ev.Tags)
	if err != nil || ev.Tags == nil {
		tags = []byte("[]")
	}
	var expires *int64
	if exp, ok := protocol.Expiration(ev); ok {
		expires = &exp
	}
	if effectiveKey != "" {
		// Before the insert: one effective version per key (a unique index).
		b.Queue(`UPDATE cn_relay.events SET is_effective = false
			WHERE effective_key = $1 AND is_effective AND id <> $2`, effectiveKey, ev.ID)
	}
	b.Queue(`INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig, ingested_at,
			effective_key, is_effective, expires_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, nullif($9, ''), true, $10)
		ON CONFLICT (id) DO UPDATE SET is_effective = true, deleted_at = NULL, deleted_reason = NULL`,
		ev.ID, ev.PubKey, ev.Kind, int64(ev.CreatedAt), string(tags), ev.Content, ev.Sig, ingestedAt,
		effectiveKey, expires)
	b.Queue(`INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at, pubkey, kind, own, scope)
		VALUES ($1, $2, $3, $4, $5, true, true) ON CONFLICT (event_id, topic_id) DO NOTHING`,
		ev.ID, topicID, int64(ev.CreatedAt), ev.PubKey, ev.Kind)
}

// QueueDelete queues on b the write that makes a mirror hold event id as
// deleted for reason (the outbox row's), unless it already is.
func QueueDelete(b *pgx.Batch, id, reason string) {
	b.Queue(`UPDATE cn_relay.events SET deleted_at = now(), deleted_reason = $2
		WHERE id = $1 AND deleted_at IS NULL`, id, reason)
}
