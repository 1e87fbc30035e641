// Package eventcache keeps the newest visible public events in the relay's
// memory, so that the common REQ shapes ("the newest N of ...") are answered
// without a database round trip.
//
// # What it holds
//
// The cache holds the visible events of the public kinds (not
// protocol.IsPrivateKind) whose (created_at, id) sorts newer than a floor, as
// of the outbox seq it has applied (Seq): it is filled from one database
// snapshot (Fill) and then kept by the relay's outbox follower, which applies
// every outbox row in seq order (Apply) before it fans the row's event out. Its
// promise, for bounded caches:
//
//	every visible public event newer than the floor is held, and nothing
//	else that is not visible (expired events stay until the sweep's delete
//	row; Query checks expiration itself)
//
// An unbounded cache (everything fitted, floor at the very bottom) holds every
// visible public event. When it outgrows its byte budget the oldest events are
// dropped and the floor rises past them; an event whose upsert arrives below
// the floor (backdated) is not taken.
//
// # What it answers
//
// Query answers a REQ when the cache provably holds the whole answer: for each
// filter, either it found Limit matches (an event the cache lacks is older
// than the floor, so older than each of them), or nothing older than the floor
// can match (unbounded, or since above the floor). Search filters, and readers
// that may see private kinds (authenticated or operator, unless every filter
// names only public kinds), are left to the database. The answer is read under
// the cache's lock together with Seq, so it is a snapshot exactly as the
// store's QuerySnapshot is: its events and seq say the same.
//
// A bounded cache cannot prove an empty answer by itself (a match could lie
// below the floor). The seen set (seen.go) can, for the common empty answers:
// a Bloom filter of the ids, authors and indexed tag values of every stored
// event, built in the background from a database snapshot and kept by Apply.
// A filter that names ids, authors or values of one tag none of which it
// holds matches no stored event, and is answered empty.
//
// Reader puts the cache in front of the database's reads (a relay.Reader
// decorator, composed by node.Relay): it answers a read from Query once the
// cache has applied every outbox row committed before the read began (or,
// while this relay is the only one acknowledging writes, Reader.Sole, every
// row acknowledged to a client before it began), and passes every other read
// to the next Reader. The relay's follower fills and
// keeps the cache (relay.Deps.Cache).
//
// Matching is protocol.Match, the reference matcher that live fan-out uses and
// the SQL query engine is tested against; order is the store's (newest first,
// ties by lowest id).
package eventcache

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// entry is one cached event; it never changes once made, so answers may hold
// it after the cache dropped it.
type entry struct {
	ev      *nostr.Event
	json    []byte // the event's NIP-01 JSON object
	expires int64  // NIP-40 expiration (unix seconds); 0: none
	key     string // protocol.EffectiveKey; "" for regular events
	tags    []tagKey
	size    int // bytes charged for it
	// pinned: held for an author range below the global floor (ranges.go),
	// so out of the all, kinds and tags lists. Under the cache's lock.
	pinned bool
}

// tagKey is a single-letter tag name and a value of it that a #x filter
// matches: the first value, normalised for t (protocol.Match).
type tagKey struct {
	name  string
	value string
}

// pos is a place in the order every list keeps: oldest first, by created_at
// ascending, then by id descending, so that walking a list backwards gives the
// serving order (newest first, ties by lowest id).
type pos struct {
	createdAt int64
	id        string
}

func (p pos) cmp(q pos) int {
	if c := cmp.Compare(p.createdAt, q.createdAt); c != 0 {
		return c
	}
	return strings.Compare(q.id, p.id)
}

func (e *entry) pos() pos { return pos{int64(e.ev.CreatedAt), e.ev.ID} }

// list is a set of entries in pos order.
type list []*entry

func (l list) search(p pos) (int, bool) {
	return slices.BinarySearchFunc(l, p, func(e *entry, p pos) int { return e.pos().cmp(p) })
}

// insert adds e (not in l). New events mostly sort last: the append is O(1).
func (l list) insert(e *entry) list {
	i, _ := l.search(e.pos())
	return slices.Insert(l, i, e)
}

// remove drops e if present. The oldest entry (eviction) goes by reslicing.
func (l list) remove(e *entry) list {
	i, ok := l.search(e.pos())
	if !ok {
		return l
	}
	if i == 0 {
		l[0] = nil
		return l[1:]
	}
	return slices.Delete(l, i, i+1)
}

// Cache is the set of recent events; safe for concurrent use. Apply and Fill
// are called by one goroutine (the outbox follower), Query by any.
type Cache struct {
	maxBytes  int
	topicless bool         // any event may be stored without a topic
	stored    map[int]bool // kinds the fill found stored without a topic; under mu

	mu      sync.RWMutex
	applied chan struct{} // closed (and replaced) whenever seq moves
	ready   bool
	seq     int64 // the outbox seq applied
	bounded bool  // false: every visible public event is held
	floor   pos   // when bounded: every visible public event above it is held
	bytes   int
	all     list
	byID    map[string]*entry
	byKey   map[string]*entry // effective key -> its cached version
	authors map[string]list
	kinds   map[int]list
	tags    map[tagKey]list

	// Author ranges (ranges.go): what the cache holds of some authors below
	// the floor; their pinned entries and costs are part of bytes.
	ranges      map[rangeKey]*authorRange
	pinnedBytes int
	tick        atomic.Int64 // orders the ranges' uses
	rangeHits   atomic.Int64 // filters answered thanks to author ranges
	log         rowLog       // the last rows applied, for Learn

	seen seenState // see seen.go; kept across fills
}

// New returns an empty cache that holds at most maxBytes of events (as
// charged by entrySize); it answers nothing until Fill. topicless says that
// events may be stored without a topic (protocol.TopicRules.RequireTopic
// off): such an event has no outbox row, so the follower never sees it arrive
// or change, and the cache answers no filter that could match one (see
// Query); the fill reports the kinds of those already stored.
func New(maxBytes int, topicless bool) *Cache {
	c := &Cache{maxBytes: maxBytes, topicless: topicless, applied: make(chan struct{})}
	c.reset()
	return c
}

func (c *Cache) reset() {
	c.ready, c.seq, c.bounded, c.floor, c.bytes, c.all = false, 0, false, pos{}, 0, nil
	c.stored = nil
	c.byID = map[string]*entry{}
	c.byKey = map[string]*entry{}
	c.authors = map[string]list{}
	c.kinds = map[int]list{}
	c.tags = map[tagKey]list{}
	c.ranges, c.pinnedBytes = map[rangeKey]*authorRange{}, 0
	c.log.reset(0)
}

// entrySize is what an event costs: its JSON, and as much again for the
// decoded event (strings and tag slices), plus the entry and index slots.
func entrySize(js []byte) int { return 2*len(js) + 256 }

// MinEntrySize is the least any event costs (its JSON has at least a 64-char
// id and pubkey and a 128-char sig): a fill needs at most maxBytes /
// MinEntrySize events.
const MinEntrySize = 2*(64+64+128) + 256

// MaxEvents is the most events the cache can hold: a fill reads no more.
func (c *Cache) MaxEvents() int { return c.maxBytes/MinEntrySize + 1 }

// Filler streams the visible public events that have a topic (and so outbox
// rows) newest first (ties by lowest id), from one database snapshot that
// holds the outbox up to the seq it returns, with the kinds of the visible
// public events in that snapshot that have none (unscoped); it stops when add
// returns false.
type Filler func(add func(ev *nostr.Event, js []byte) bool) (seq int64, unscoped []int, err error)

// Fill replaces the cache's content with what read streams, and makes it
// answer. The content is built aside: Query goes on meanwhile (answering
// nothing before the first fill). On error the cache is left empty and not
// answering.
func (c *Cache) Fill(read Filler) error {
	f := &Cache{maxBytes: c.maxBytes}
	f.reset()
	seq, unscoped, err := read(func(ev *nostr.Event, js []byte) bool {
		e := newEntry(ev, js)
		if f.bytes+e.size > f.maxBytes {
			f.bounded, f.floor = true, e.pos()
			return false
		}
		f.add(e)
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
	if err != nil {
		return err
	}
	c.ready, c.seq, c.bounded, c.floor, c.bytes = true, seq, f.bounded, f.floor, f.bytes
	c.all, c.byID, c.byKey, c.authors, c.kinds, c.tags = f.all, f.byID, f.byKey, f.authors, f.kinds, f.tags
	c.log.reset(seq)
	c.stored = map[int]bool{}
	for _, k := range unscoped {
		c.stored[k] = true
	}
	c.moved()
	return nil
}

// moved wakes WaitFor callers; under c.mu.
func (c *Cache) moved() {
	close(c.applied)
	c.applied = make(chan struct{})
}

// WaitFor waits until the cache is filled and has applied the outbox up to
// seq, for at most wait or until done is closed, and reports whether it has.
func (c *Cache) WaitFor(seq int64, wait time.Duration, done <-chan struct{}) bool {
	var timer *time.Timer
	for {
		c.mu.RLock()
		ok, ch := c.ready && c.seq >= seq, c.applied
		c.mu.RUnlock()
		if ok {
			return true
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-done:
			return false
		}
	}
}

// Stats is the cache's size.
type Stats struct {
	Ready   bool
	Events  int
	Bytes   int
	Seq     int64
	Bounded bool
	// Floor is the created_at of the floor (bounded caches): every visible
	// public event newer is held.
	Floor int64
	// Unscoped are the kinds the fill found stored without a topic.
	Unscoped []int
	// Ranges are the author ranges held; PinnedBytes what they and the
	// events they hold below the floor take of Bytes.
	Ranges      int
	PinnedBytes int
	// RangeHits counts the filters answered that only author ranges could
	// answer (their floor is below the global floor).
	RangeHits int64
}

// Stats returns the cache's size now.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Ready: c.ready, Events: len(c.byID), Bytes: c.bytes, Seq: c.seq, Bounded: c.bounded, Floor: c.floor.createdAt,
		Unscoped: slices.Sorted(maps.Keys(c.stored)), Ranges: len(c.ranges), PinnedBytes: c.pinnedBytes,
		RangeHits: c.rangeHits.Load()}
}
