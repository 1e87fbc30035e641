package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Store is the relay's persistence. Implementations are safe for concurrent use.
type Store interface {
	// Ingest stores verified, non-ephemeral events in ONE transaction that ends with
	// the outbox append (group commit), and returns one result per event in input
	// order: OK true/false and the NIP-01 message ("duplicate: ...", "blocked: ...",
	// "" ...). An error means the whole batch failed (the relay answers each event
	// with OK false "error: ...").
	Ingest(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error)
	// QuerySnapshot returns stored, visible events matching any of the filters
	// that v may read (protocol.Viewer.MayRead: private kinds only to their
	// parties); each filter's Limit applies to its own matches (LimitZero means
	// none), newest first, ties by lowest id, no duplicates, all read in one
	// snapshot, and seq, the highest outbox seq that snapshot holds: the
	// snapshot holds exactly the writes whose outbox rows have seq <= seq (the
	// outbox seq is committed in visibility order, see package outbox). A
	// subscription's live part starts after seq.
	QuerySnapshot(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (evs []*nostr.Event, seq int64, err error)
	// Count returns the number of stored, visible events matching any filter
	// that v may read (NIP-45).
	Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error)
	// Events loads visible events by id (for live fan-out of outbox rows), private
	// kinds included (the fan-out checks each reader); missing ids are skipped.
	Events(ctx context.Context, ids []string) ([]*nostr.Event, error)
	// Ping reports whether the database answers (for /healthz, which calls it about
	// once a second at most, with a short deadline).
	Ping(ctx context.Context) error
}

// IngestResult is the answer to one event of an Ingest batch.
type IngestResult = protocol.Verdict

// Feed is the relay's view of the outbox, which it follows to deliver stored events
// to live subscriptions, whichever relay process stored them. PGFeed is the
// Postgres implementation; tests drive the follower with their own.
type Feed interface {
	// Head returns the highest committed seq (0 when the outbox is empty).
	Head(ctx context.Context) (int64, error)
	// ReadAfter returns up to limit committed rows with seq > after in ascending
	// seq order, appended to buf[:0]. A reader that passes the highest seq it has
	// seen never misses a row (see package outbox).
	ReadAfter(ctx context.Context, after int64, limit int, buf []outbox.Row) ([]outbox.Row, error)
	// Listen calls wake whenever new rows may have been committed: after every
	// notification and after every (re)connect of its notification channel, since
	// notifications may have been missed meanwhile. wake never blocks. Listen
	// returns when ctx is done.
	Listen(ctx context.Context, wake func())
}

// ReplicaReader is implemented by a Store that may read a REQ's stored part
// on a read replica (package replica). A replica's snapshot may lag the
// primary: the relay then reads what changed since from the primary and
// makes the stored part the primary's answer at a seq after the REQ arrived
// (see Relay.handoff), so the delivery promise of a subscription holds
// whatever the replica's lag.
type ReplicaReader interface {
	// QuerySnapshotReplica is QuerySnapshot; replica reports that the
	// snapshot was a replica's, whose seq may lie below what this process's
	// follower had fanned out when the subscription was filed, and whose
	// events the primary may have hidden or replaced since.
	QuerySnapshotReplica(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (evs []*nostr.Event, seq int64, replica bool, err error)
	// Window is store.Reader.Window on the primary.
	Window(ctx context.Context, after int64, limit int) (store.Window, error)
	// InSnapshot is store.Reader.InSnapshot on the primary.
	InSnapshot(ctx context.Context, fn func(*store.Snapshot) error) error
}

// RecentStore is implemented by a Store that can fill the relay's event cache
// (package eventcache; Config.CacheBytes): store.Reader.Recent.
type RecentStore interface {
	// Recent streams at most max visible public events that have a topic
	// newest first (ties by lowest id) with their JSON to add, until it
	// returns false, from one snapshot that holds the outbox up to seq, with
	// the kinds of the visible public events without a topic (unscoped).
	Recent(ctx context.Context, max int, add func(ev *nostr.Event, js []byte) bool) (seq int64, unscoped []int, err error)
	// StoredKeys streams the ids, authors and indexed tag values of every
	// stored event, from a snapshot that begins after it is called (the
	// cache's seen set: eventcache.SeenScan).
	StoredKeys(ctx context.Context, size func(keys int), key func(field string, value []byte)) error
	// Committed returns the highest outbox seq this process's writes have
	// committed: a REQ answered from the cache waits until the cache holds
	// it, so that a client reads what it was answered OK for (and the writes
	// of other processes as far as their notifications have arrived,
	// PGFeed.Notified).
	Committed() int64
}
