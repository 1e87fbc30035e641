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
// Matching is protocol.Match, the reference matcher that live fan-out uses and
// the SQL query engine is tested against; order is the store's (newest first,
// ties by lowest id).
package eventcache

import (
	"cmp"
	"container/heap"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
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

func newEntry(ev *nostr.Event, js []byte) *entry {
	e := &entry{ev: ev, json: js, key: protocol.EffectiveKey(ev), size: entrySize(js)}
	if exp, ok := protocol.Expiration(ev); ok {
		e.expires = max(exp, 1)
	}
	for _, tag := range ev.Tags {
		if len(tag) < 2 || len(tag[0]) != 1 {
			continue
		}
		k := tagKey{tag[0], tag[1]}
		if k.name == "t" {
			if k.value = protocol.NormalizeTopic(k.value); k.value == "" {
				continue
			}
		}
		if !slices.Contains(e.tags, k) {
			e.tags = append(e.tags, k)
		}
	}
	return e
}

// add files e in every index (e is not held); a pinned e only in byID, byKey
// and its author's list.
func (c *Cache) add(e *entry) {
	c.byID[e.ev.ID] = e
	if e.key != "" {
		c.byKey[e.key] = e
	}
	c.authors[e.ev.PubKey] = c.authors[e.ev.PubKey].insert(e)
	c.bytes += e.size
	if e.pinned {
		c.pinnedBytes += e.size
		return
	}
	c.all = c.all.insert(e)
	c.kinds[e.ev.Kind] = c.kinds[e.ev.Kind].insert(e)
	for _, k := range e.tags {
		c.tags[k] = c.tags[k].insert(e)
	}
}

// drop removes e from every index (e is held).
func (c *Cache) drop(e *entry) {
	delete(c.byID, e.ev.ID)
	if e.key != "" && c.byKey[e.key] == e {
		delete(c.byKey, e.key)
	}
	c.authors[e.ev.PubKey] = dropFrom(c.authors, e.ev.PubKey, e)
	if len(c.authors[e.ev.PubKey]) == 0 {
		delete(c.authors, e.ev.PubKey)
	}
	c.bytes -= e.size
	if e.pinned {
		c.pinnedBytes -= e.size
		return
	}
	c.unlist(e)
}

// unlist removes e (not pinned) from the lists of what is above the global
// floor: all, kinds and tags.
func (c *Cache) unlist(e *entry) {
	c.all = c.all.remove(e)
	c.kinds[e.ev.Kind] = dropFrom(c.kinds, e.ev.Kind, e)
	if len(c.kinds[e.ev.Kind]) == 0 {
		delete(c.kinds, e.ev.Kind)
	}
	for _, k := range e.tags {
		if l := c.tags[k].remove(e); len(l) > 0 {
			c.tags[k] = l
		} else {
			delete(c.tags, k)
		}
	}
}

func dropFrom[K comparable](m map[K]list, k K, e *entry) list { return m[k].remove(e) }

// Loaded is an event the follower loaded for an upsert row, with its JSON.
type Loaded struct {
	Event *nostr.Event
	JSON  []byte
}

// Apply applies a read of outbox rows and moves Seq to last, the highest
// seq read. rows are the rows read (ascending seq, after Seq), where a row
// that repeats the event and op of the row just before it (one row per topic
// of one change) may be left out. loaded holds the events of the upsert rows
// that were visible when loaded (after the rows were committed); an upsert
// row whose event is not in loaded, and every delete row, removes the event;
// an upsert row with an effective key removes whatever other version of that
// key is held, since the key belongs to the row's event from then on. A cache
// not yet filled ignores Apply.
func (c *Cache) Apply(rows []outbox.Row, loaded map[string]Loaded, last int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready || last <= c.seq {
		return
	}
	defer func() {
		c.seq = last
		c.moved()
	}()
	if !c.topicless {
		var hs []uint64
		for _, l := range loaded {
			hs = seenKeys(hs, l.Event)
		}
		c.seen.added(hs)
	}
	c.logRows(rows, loaded)
	for _, r := range rows {
		if r.Seq <= c.seq {
			continue // (held by the fill's snapshot)
		}
		old := c.byID[r.EventID]
		if r.Op != outbox.OpUpsert {
			if old != nil {
				c.drop(old)
			}
			continue
		}
		if r.EffectiveKey != "" {
			if prev := c.byKey[r.EffectiveKey]; prev != nil && prev.ev.ID != r.EventID {
				c.drop(prev)
			}
		}
		l, ok := loaded[r.EventID]
		switch {
		case !ok || protocol.IsPrivateKind(l.Event.Kind):
			if old != nil {
				c.drop(old)
			}
		case old != nil:
			// (one row per topic of one change: held already)
		default:
			e := newEntry(l.Event, l.JSON)
			if c.bounded && e.pos().cmp(c.floor) <= 0 {
				if !c.covered(e) {
					continue // below the floor: not needed to answer
				}
				e.pinned = true // (an author range holds it)
			}
			c.add(e)
		}
	}
	c.evict()
}

// evict drops the oldest events until the cache fits its budget, raising the
// floor past each (an event an author range covers is pinned instead), and
// the least recently used author ranges while they take more than a quarter
// of the budget.
func (c *Cache) evict() {
	for c.bytes > c.maxBytes {
		if c.pinnedBytes > c.maxBytes/4 || len(c.all) == 0 {
			if !c.dropLRURange() {
				return
			}
			continue
		}
		e := c.all[0]
		c.bounded, c.floor = true, e.pos()
		if c.covered(e) {
			c.pin(e)
		} else {
			c.drop(e)
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

// Holds reports whether the cache holds the event with this id.
func (c *Cache) Holds(id string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byID[id] != nil
}

// Hit is one event of an answer, with its JSON.
type Hit struct {
	Event *nostr.Event
	JSON  []byte
}

// Query answers filters (validated by protocol.ValidateFilter: #t values
// normalised, Limit set) for reader v as the store's QuerySnapshot would, at
// unix time now: each filter's Limit applies to its own matches, the union is
// newest first, ties by lowest id, without duplicates. ok is false when the
// cache cannot prove it holds the whole answer (see the package doc): the
// caller asks the database. A filter that could match an event stored
// without a topic (any, when New's topicless; else one of a kind the fill
// found stored so) is answered only when it has a #t condition (such an event
// has no own t tag) or names ids that are all held.
// take, if not nil, is asked for each event's bytes
// in answer order, and the answer stops at its first refusal (stopped), as
// the store's row budget does. An answer that holds an event v may not read
// is not given (ok false).
func (c *Cache) Query(filters []nostr.Filter, v protocol.Viewer, now int64, take func(int) bool) (hits []Hit, seq int64, stopped, ok bool) {
	for _, f := range filters {
		if f.Search != "" {
			return nil, 0, false, false
		}
		if (v.Operator || len(v.Authed) > 0) && !publicKinds(f.Kinds) {
			return nil, 0, false, false
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, 0, false, false
	}
	var out []*entry
	for _, f := range filters {
		es, ok := c.answer(f, now)
		if !ok {
			return nil, 0, false, false
		}
		out = append(out, es...)
	}
	if len(filters) > 1 {
		out = sortUnique(out)
	}
	// An answer that holds an event v may not read (a private group's, a
	// hidden group's state: protocol.Viewer.MayReadGroup) is the database's
	// to give, whose query leaves it out before each filter's limit. The
	// group rule is the relay's, as new as the rows the cache applied.
	if v.Groups != nil && v.Groups.Any() && slices.ContainsFunc(out, func(e *entry) bool { return !v.MayReadGroup(e.ev) }) {
		return nil, 0, false, false
	}
	hits = make([]Hit, 0, len(out))
	for _, e := range out {
		if take != nil && !take(len(e.json)+len(e.ev.ID)+len(e.ev.PubKey)) {
			return hits, c.seq, true, true
		}
		hits = append(hits, Hit{Event: e.ev, JSON: e.json})
	}
	return hits, c.seq, false, true
}

// publicKinds reports whether kinds names kinds and only public ones.
func publicKinds(kinds []int) bool {
	return kinds != nil && !slices.ContainsFunc(kinds, protocol.IsPrivateKind)
}

// answer returns f's matches, newest first, and whether they are provably
// all of them (see Query).
func (c *Cache) answer(f nostr.Filter, now int64) ([]*entry, bool) {
	if f.LimitZero {
		return nil, true
	}
	limit := f.Limit
	if limit <= 0 {
		return nil, false // (validated filters always have one)
	}
	if c.unstored(f) {
		c.seen.proofs.Add(1)
		return nil, true
	}
	scoped := c.scopedOnly(f)
	// Every visible public event f matches above fl is held: the global floor,
	// or lower where author ranges hold more. An entry below fl (pinned for
	// another range) proves nothing, and is not part of an answer but by id.
	fl := c.filterFloor(f)
	above := func(e *entry) bool { return e.pos().cmp(fl) > 0 }
	var out []*entry
	if f.IDs != nil {
		missing := false
		for _, id := range f.IDs {
			e := c.byID[id]
			if e == nil && !c.seen.has(SeenID, id) {
				continue // (stored nowhere)
			}
			if e == nil && !scoped {
				return nil, false // (perhaps stored without a topic)
			}
			missing = missing || e == nil
			if e != nil && visible(e, now) && protocol.Match(f, e.ev) {
				out = append(out, e)
			}
		}
		out = sortUnique(out)
		if !missing { // (every id held: nothing else can match)
			return out[:min(limit, len(out))], true
		}
		out = slices.DeleteFunc(out, func(e *entry) bool { return !above(e) })
	} else if !scoped {
		return nil, false
	} else {
		lists, rest := c.driving(f)
		if fl.cmp(c.globalFloor()) < 0 {
			lists = c.authorLists(f) // (only they hold the pinned entries)
			rest = f
			rest.Authors = nil
		}
		out = merge(lists, limit, func(e *entry) bool { return above(e) && visible(e, now) && protocol.Match(rest, e.ev) })
	}
	ranged := fl.cmp(c.globalFloor()) < 0
	if len(out) >= limit {
		if ranged {
			c.rangeHits.Add(1)
		}
		return out[:limit], true
	}
	// Fewer than limit: complete when nothing the cache lacks can match.
	complete := fl == bottom || (f.Since != nil && int64(*f.Since) > fl.createdAt)
	if complete && ranged {
		c.rangeHits.Add(1)
	}
	return out, complete
}

// scopedOnly reports whether f can match only events that have a topic: it
// has a #t condition (a topic-less event has no own t tag, see
// protocol.TopicRules), or no event may be stored without a topic and none of
// the kinds it can match was found so at the fill.
func (c *Cache) scopedOnly(f nostr.Filter) bool {
	if t, ok := f.Tags["t"]; ok && t != nil {
		return true
	}
	switch {
	case c.topicless:
		return false
	case f.Kinds == nil:
		return len(c.stored) == 0
	}
	return !slices.ContainsFunc(f.Kinds, func(k int) bool { return c.stored[k] })
}

// driving returns the lists whose union holds every cached event f can match,
// picking the smallest such family: authors, one tag's values, kinds, or all;
// and rest, f without the condition those lists were picked by (every entry of
// them meets it, as the lists are filed as protocol.Match reads a filter), for
// the entries met to be matched against.
func (c *Cache) driving(f nostr.Filter) (best []list, rest nostr.Filter) {
	best, rest = []list{c.all}, f
	size := len(c.all)
	try := func(ls []list, without func(*nostr.Filter)) {
		n := 0
		for _, l := range ls {
			n += len(l)
		}
		if n < size {
			best, size, rest = ls, n, f
			without(&rest)
		}
	}
	if f.Authors != nil {
		try(c.authorLists(f), func(r *nostr.Filter) { r.Authors = nil })
	}
	if f.Kinds != nil {
		ls := make([]list, 0, len(f.Kinds))
		for _, k := range f.Kinds {
			if l := c.kinds[k]; len(l) > 0 {
				ls = append(ls, l)
			}
		}
		try(ls, func(r *nostr.Filter) { r.Kinds = nil })
	}
	for name, values := range f.Tags {
		if values == nil {
			continue
		}
		ls := make([]list, 0, len(values))
		for _, v := range values {
			if l := c.tags[tagKey{name, v}]; len(l) > 0 {
				ls = append(ls, l)
			}
		}
		try(ls, func(r *nostr.Filter) {
			r.Tags = nil
			if len(f.Tags) > 1 {
				r.Tags = maps.Clone(f.Tags)
				delete(r.Tags, name)
			}
		})
	}
	return best, rest
}

// authorLists returns the lists of f's authors.
func (c *Cache) authorLists(f nostr.Filter) []list {
	ls := make([]list, 0, len(f.Authors))
	for _, a := range f.Authors {
		if l := c.authors[a]; len(l) > 0 {
			ls = append(ls, l)
		}
	}
	return ls
}

// merge walks lists newest first as one (a k-way merge) and returns the first
// limit entries that keep accepts, once each (an entry in several lists is met
// once per list, one right after the other: no other entry has its pos).
func merge(lists []list, limit int, keep func(*entry) bool) []*entry {
	var out []*entry
	if len(lists) == 1 {
		l := lists[0]
		for i := len(l) - 1; i >= 0 && len(out) < limit; i-- {
			if keep(l[i]) {
				out = append(out, l[i])
			}
		}
		return out
	}
	h := make(cursors, 0, len(lists))
	for _, l := range lists {
		if len(l) > 0 {
			h = append(h, cursor{l, len(l) - 1})
		}
	}
	heap.Init(&h)
	var last *entry
	for len(h) > 0 && len(out) < limit {
		top := &h[0]
		e := top.l[top.i]
		if top.i--; top.i < 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if e == last {
			continue
		}
		last = e
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// cursor is a list being walked backwards, at index i; cursors is a max-heap
// of them by the pos of their current entries.
type cursor struct {
	l list
	i int
}

type cursors []cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return h[i].l[h[i].i].pos().cmp(h[j].l[h[j].i].pos()) > 0 }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(cursor)) }
func (h *cursors) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func visible(e *entry, now int64) bool { return e.expires == 0 || e.expires > now }

// sortUnique sorts entries newest first, ties by lowest id, without duplicates.
func sortUnique(es []*entry) []*entry {
	slices.SortFunc(es, func(a, b *entry) int { return b.pos().cmp(a.pos()) })
	return slices.CompactFunc(es, func(a, b *entry) bool { return a == b })
}
