// Package readpath holds the types of the relay's read contract (relay.Store,
// relay.Reader, relay.Primary): the request of a read of stored events and its
// result, the outbox window and snapshot of the primary that a read on a
// replica is handed off with, and the errors of a NIP-77 item read.
//
// The contract is the relay's: package relay declares the interfaces and
// depends on this package only, not on their implementations (package store
// for the primary, package replica for read replicas), which the composition
// root (package node) wires. Nothing of a read travels in a context value:
// what a read is asked is its Request, what it answers is its Result.
package readpath

import (
	"context"
	"errors"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Request is one read of stored events (a REQ's stored part).
type Request struct {
	// Filters have been validated (protocol.ValidateFilter): #t values
	// normalised, Limit set. Each filter's Limit applies to its own matches
	// (LimitZero: none).
	Filters []nostr.Filter
	// Viewer is who reads: private kinds only to their parties
	// (protocol.Viewer.MayRead), NIP-29 groups as the viewer may read them.
	Viewer protocol.Viewer
	// Take, when not nil, is asked, for each event before the read keeps it,
	// for the bytes the event holds once read (its JSON, its ID and PubKey,
	// any decoded tags). When Take refuses, the read stops there (the rest of
	// that filter's matches and any further filter are skipped) and returns
	// what it kept, without an error. Take runs on the goroutine that called
	// the read, in the order of the rows read. A read that is retried
	// elsewhere (a failed replica) asks Take again for the rows it reads
	// again: what a failed attempt took stays taken.
	Take func(n int) bool
	// Cap, when > 0, bounds an answer whose events hold none of the
	// reader's memory (the event cache's events are the cache's): such a
	// source does not ask Take; it keeps events while the bytes Take would
	// have been asked for sum to at most Cap, and stops at the first that
	// does not fit (Stopped). 0: no cap. A read of a database asks Take and
	// ignores Cap: a connection's budget is taken by what it holds, and only
	// capped for what it merely shares.
	Cap int64
}

// Source says where a Result was read.
type Source uint8

const (
	// Primary: the primary database; Seq is its snapshot's outbox head.
	Primary Source = iota
	// Replica: a read replica, whose snapshot may lag the primary: Seq may
	// lie below what the primary's outbox had committed when the read
	// started, and the primary may have hidden or replaced its events since
	// (see relay's handoff).
	Replica
	// Cache: the relay's event cache (package eventcache), which had
	// applied every outbox row up to Seq, and every row committed before the
	// read began.
	Cache
)

func (s Source) String() string {
	switch s {
	case Primary:
		return "primary"
	case Replica:
		return "replica"
	case Cache:
		return "cache"
	}
	return "unknown"
}

// Result is a read's answer: the visible matching events that the viewer may
// read, newest first, ties by lowest id (a lone search filter: by relevance),
// each once, all read in one snapshot, with their JSON.
type Result struct {
	// Events carry ID, PubKey, CreatedAt and Kind, and Tags at least for
	// addressable kinds (so that protocol.EffectiveKey works on every one);
	// Content, Sig and other kinds' Tags may be missing: JSON holds the
	// whole event.
	Events []*nostr.Event
	// JSON[i] is Events[i]'s NIP-01 event object (valid JSON, its fields
	// the stored event's).
	JSON [][]byte
	// From, for a read of 2 to 64 filters, says for each event which
	// filters' own answers (newest first, cut to their Limit) held it: bit j
	// of From[i] for Filters[j]. An event matching filter j may be returned
	// for another filter only (older than filter j's Limit newest): bit j is
	// then unset. nil for other reads.
	From []uint64
	// Seq is the highest outbox seq the snapshot holds: it holds exactly the
	// writes whose outbox rows have seq <= Seq (the outbox seq is committed
	// in visibility order, see package outbox). A subscription's live part
	// starts after Seq. A Snapshot's Read leaves it 0: the Snapshot's
	// Window.Seq is its head.
	Seq int64
	// Source is where the result was read.
	Source Source
	// Stopped reports that Request.Take refused an event: the result holds
	// the events kept before.
	Stopped bool
}

// Window is what the outbox rows after a seq changed, read in one snapshot
// of the primary, which holds the outbox up to Seq: a reader holding an
// answer read in a snapshot at the seq asked for learns from it which of its
// events may no longer be visible and which events may have become visible
// since (the relay's handoff of a stored part read on a replica).
//
// Every change of what a reader sees writes outbox rows: an event that
// becomes visible, or effective again, has an `upsert` row; one that is
// deleted or hidden has a `delete` row; a replaceable or addressable version
// that another version replaces has none of its own, but the new version's
// upsert row carries their common effective key. So an event visible at the
// earlier seq is visible at Seq unless Named holds its id or Keys its
// effective key, and every event visible at Seq that was not visible at the
// earlier seq is in Events.
type Window struct {
	// Seq is the snapshot's outbox head.
	Seq int64
	// Named holds the ids of the events the window's rows name, any op.
	Named map[string]bool
	// Keys holds the effective keys of the window's upsert rows.
	Keys map[string]bool
	// Events are the events of Named that are visible in the snapshot, each
	// once, private kinds included (the caller checks each reader with
	// protocol.Viewer.MayRead), with their tags and content.
	Events []*nostr.Event
	// More reports that the window has more than the rows asked for: it was
	// not read (Named, Keys and Events are empty).
	More bool
	// Groups reports that a row of the window is in a NIP-29 group's scope
	// (GROUP:<id>): who may read that group's events may have changed (a
	// member removed, the group made private), for events the window does
	// not name too.
	Groups bool
}

// Snapshot reads the primary in one snapshot (a read-only REPEATABLE READ
// transaction): its reads agree with each other, a Window's Seq is the outbox
// head of every Read's snapshot too. It is used by one goroutine, only while
// the function it was handed to runs.
type Snapshot interface {
	// Window reads what the outbox rows after seq `after` changed (see
	// Window); a window of more than limit rows is not read: More is set.
	Window(ctx context.Context, after int64, limit int) (Window, error)
	// Read reads stored events as a Request asks, in the snapshot
	// (Result.Seq is 0: Window's Seq is the snapshot's head).
	Read(ctx context.Context, req Request) (Result, error)
}

// ErrTooManySyncItems is returned by a NIP-77 item read when more than its
// max events match.
var ErrTooManySyncItems = errors.New("too many events match the sync filter")

// ErrSyncBudget is returned by a NIP-77 item read when its take refused an
// item: the caller's memory for the items ran out.
var ErrSyncBudget = errors.New("the sync items do not fit the memory budget")
