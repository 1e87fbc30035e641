package relay

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/eventcache"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Store is the relay's persistence: the primary database. Implementations are
// safe for concurrent use.
type Store interface {
	// Ingest stores verified, non-ephemeral events in ONE transaction that ends with
	// the outbox append (group commit), and returns one result per event in input
	// order: OK true/false and the NIP-01 message ("duplicate: ...", "blocked: ...",
	// "" ...). An error means the whole batch failed (the relay answers each event
	// with OK false "error: ...").
	Ingest(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error)
	// Reader reads REQs and COUNTs on the primary unless Deps.Reads is set.
	Reader
	// Events loads visible events by id (for live fan-out of outbox rows), private
	// kinds included (the fan-out checks each reader); missing ids are skipped.
	// The events are whole (content, sig and tags).
	Events(ctx context.Context, ids []string) ([]*nostr.Event, error)
	// Ping reports whether the database answers (for /healthz, which calls it about
	// once a second at most, with a short deadline).
	Ping(ctx context.Context) error

	// The parts below are read only while Config switches their feature on
	// (see Deps.Store); a store that serves no such feature still has them
	// (a test's fake answers them empty).
	Primary
	SyncStore
	SyncTreeStore
	RecentStore
	GroupAccessStore
	WithheldStore
}

// Reader is the relay's read contract: a REQ's stored part and a COUNT. The
// primary's store implements it (package store), and so does a set of read
// replicas in front of it (package replica); the composition root (package
// node) picks which serves (Deps.Reads).
type Reader interface {
	// Read returns the stored, visible events matching any of req.Filters
	// that req.Viewer may read (protocol.Viewer.MayRead: private kinds only
	// to their parties), each filter's Limit applied to its own matches
	// (LimitZero: none), newest first, ties by lowest id, no duplicates, all
	// read in one snapshot, with their JSON, the snapshot's outbox seq and
	// where it was read (readpath.Result). It asks req.Take for each event
	// before keeping it and stops at the first refusal (Result.Stopped).
	// A Result read on a replica (Source readpath.Replica) may be older than
	// the REQ: the relay hands it off to the primary (Deps.Store's Primary part).
	Read(ctx context.Context, req readpath.Request) (readpath.Result, error)
	// Count returns the number of stored, visible events matching any filter
	// that v may read (NIP-45). A replica's count is as old as its lag.
	Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error)
}

// Primary is the primary database as the handoff of a stored part read on a
// replica needs it (see Relay.handoff): the outbox window after the
// replica's seq, and reads in one snapshot. package store implements it.
type Primary interface {
	// Window reads what the outbox rows after seq `after` changed
	// (readpath.Window), in one snapshot; a window of more than limit rows is
	// not read: More is set.
	Window(ctx context.Context, after int64, limit int) (readpath.Window, error)
	// InSnapshot runs fn with reads in one snapshot of the primary, then ends
	// it.
	InSnapshot(ctx context.Context, fn func(readpath.Snapshot) error) error
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
	// Notified returns the highest seq a notification has announced (0: none
	// yet): rows up to it are committed, by any process. A REQ answered from
	// the event cache waits until the cache holds it.
	Notified() int64
}

// EventCache is the relay's event cache (eventcache.Cache, Deps.Cache): what
// the follower fills and keeps it with, and the learner files into it. Its
// reads are its Reader's (eventcache.Reader), composed in front of
// Deps.Reads. Implementations are safe for concurrent use.
type EventCache interface {
	// MaxEvents bounds the events Fill can take.
	MaxEvents() int
	// Fill fills the cache once, before Apply (eventcache.Cache.Fill).
	Fill(read eventcache.Filler) error
	// BuildSeen builds its seen set (eventcache.Cache.BuildSeen).
	BuildSeen(scan eventcache.SeenScan) (full <-chan struct{}, err error)
	// Apply applies the outbox rows up to last, with the visible events
	// they name loaded (eventcache.Cache.Apply), in seq order.
	Apply(rows []outbox.Row, loaded map[string]eventcache.Loaded, last int64)
	// WaitFor waits until the cache has applied seq, for at most wait or
	// until done is closed, and reports whether it has.
	WaitFor(seq int64, wait time.Duration, done <-chan struct{}) bool
	// Learn files a database answer read at seq as author ranges
	// (eventcache.Cache.Learn) and reports whether it took it.
	Learn(f nostr.Filter, answer []eventcache.Loaded, seq int64) bool
	Stats() eventcache.Stats
	SeenStats() eventcache.SeenStats
}

// WithEventCache composes the event cache (internal/eventcache) into deps,
// when cfg.CacheBytes > 0 (otherwise it returns deps as they are): the cache answers in front of deps.Reads (deps.Store when
// nil) the REQs it can prove it holds, once it has applied what this process
// committed (deps.Store.Committed) and what deps.Feed's notifications
// announced (and, unless deps.Sole says this relay is the only one
// acknowledging writes, an outbox head read after the REQ arrived); the
// relay's follower fills it from deps.Store and keeps it with the outbox
// (deps.Cache). Its answers counter
// (cn_relay_cache_answers_total) is registered on deps.Registerer. The
// composition root (internal/node) calls it; so do tests that build a relay.
func WithEventCache(cfg Config, deps Deps) Deps {
	if cfg.CacheBytes <= 0 {
		return deps
	}
	next := deps.Reads
	if next == nil {
		next = deps.Store
	}
	rd, c := eventcache.Compose(cfg.CacheBytes, !cfg.Limits.TopicRules.RequireTopic,
		next, deps.Store.Committed, deps.Feed, deps.Now, deps.Registerer)
	rd.Sole = deps.Sole
	deps.Reads, deps.Cache = rd, c
	return deps
}

// RecentStore fills the relay's event cache (package eventcache;
// Deps.Store, Deps.Cache): package store implements it.
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
