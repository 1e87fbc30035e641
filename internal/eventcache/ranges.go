package eventcache

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// # Author ranges
//
// A bounded cache holds the newest events of the whole relay, so "the newest
// 20 of one author" is answered from it only when that author wrote 20 events
// above the floor: on a large relay, most authors did not. Author ranges hold
// more of the authors that readers ask for: when the database answers an
// author filter (authors, perhaps kinds, and a limit; nothing else), its
// answer is every visible public event of those authors (of those kinds)
// down to its last event, or of all time when it came short of the limit.
// Learn files that answer as a range per (author, kind) or (author, any kind):
//
//	every visible public event of the author (of the kind) newer than the
//	range's floor is held
//
// and keeps the range's events below the global floor as pinned entries
// (held in byID, byKey and the authors' lists, not in the kind, tag and
// all lists, which hold only what is above the global floor). The follower
// keeps them as it keeps the rest (Apply): an upsert of a ranged author's
// event above the range's floor is taken even below the global floor.
//
// Learn takes an answer read at seq S only when the cache has applied S and
// no row applied after S touches it: the cache remembers the last rows it
// applied (rowLog), with the author of each event they named when it knew it;
// an answer whose seq is older than the log, or which a later row changed
// (one of its events, or any event of its authors made visible), is not
// taken. Pinned entries and ranges take at most a quarter of the byte budget;
// beyond it the least recently used ranges are dropped, with the pinned
// entries only they covered.

// anyKind is the kind of a range over every kind of its author.
const anyKind = -1

// rangeKey names a range: an author's events of one kind, or of any kind.
type rangeKey struct {
	author string
	kind   int
}

// authorRange is what the cache holds of one rangeKey (see Author ranges).
type authorRange struct {
	floor pos          // every visible public event of the key above it is held
	used  atomic.Int64 // the cache's tick when an answer last used it (LRU)
}

// rangeCost is what a range is charged, besides its pinned entries.
const rangeCost = 256

// maxLearnAuthors and maxLearnLimit bound the filters Learn takes (it holds
// the cache's lock while it files an answer).
const (
	maxLearnAuthors = 256
	maxLearnLimit   = 500
)

// bottom is below every event: a range floored there holds all of its key.
var bottom = pos{createdAt: math.MinInt64}

// below returns the pos just below p: the next older possible event (same
// created_at, the least greater id).
func below(p pos) pos { return pos{p.createdAt, p.id + "\x00"} }

// logSize is how many applied rows the cache remembers for Learn.
const logSize = 4096

// loggedRow is an applied outbox row: its seq, its event, and the event's
// author when the cache knew it (loaded, or held) — "" otherwise.
type loggedRow struct {
	seq    int64
	id     string
	author string
}

// rowLog is a ring of the last logSize rows applied. Every row applied with a
// seq above since is in it.
type rowLog struct {
	rows  []loggedRow
	next  int
	since int64
}

func (l *rowLog) reset(seq int64) { *l = rowLog{since: seq} }

func (l *rowLog) add(r loggedRow) {
	if len(l.rows) < logSize {
		l.rows = append(l.rows, r)
		return
	}
	l.since = l.rows[l.next].seq
	l.rows[l.next] = r
	l.next = (l.next + 1) % logSize
}

// touches reports whether a row applied after seq names one of ids or an
// event of one of authors, or whether the log cannot tell (seq before it).
// It reads the rows after seq only, newest first.
func (l *rowLog) touches(seq int64, ids map[string]bool, authors map[string]bool) bool {
	if seq < l.since {
		return true
	}
	for i := range l.rows {
		r := l.rows[(l.next-1-i+2*len(l.rows))%len(l.rows)]
		if r.seq <= seq {
			return false
		}
		if ids[r.id] || authors[r.author] {
			return true
		}
	}
	return false
}

// Learnable reports whether a filter's answer says what a range holds:
// authors (at most maxLearnAuthors), perhaps public kinds, and a limit (at
// most maxLearnLimit); no ids, tags, since, until or search.
func Learnable(f nostr.Filter) bool {
	return len(f.Authors) > 0 && len(f.Authors) <= maxLearnAuthors && f.IDs == nil && len(f.Tags) == 0 &&
		f.Since == nil && f.Until == nil && f.Search == "" && !f.LimitZero && f.Limit > 0 && f.Limit <= maxLearnLimit &&
		(f.Kinds == nil || publicKinds(f.Kinds))
}

// Learn files the database's answer to f, read in the snapshot of outbox seq
// seq for a reader who may see every public event, as author ranges (see
// Author ranges). answer is in the store's order (newest first), with every
// event whole (tags, content, sig) and its JSON. It reports whether it took
// the answer; one it cannot prove current is left.
func (c *Cache) Learn(f nostr.Filter, answer []Loaded, seq int64) bool {
	if !Learnable(f) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready || !c.bounded || seq > c.seq || !c.scopedOnly(f) {
		return false
	}
	floor := bottom
	if len(answer) >= f.Limit {
		last := answer[f.Limit-1].Event
		floor = below(pos{int64(last.CreatedAt), last.ID})
		answer = answer[:f.Limit]
	}
	if floor.cmp(c.floor) >= 0 {
		return false // (the global floor holds as much)
	}
	ids := make(map[string]bool, len(answer))
	for _, l := range answer {
		if protocol.IsPrivateKind(l.Event.Kind) || !slices.Contains(f.Authors, l.Event.PubKey) {
			return false
		}
		if e := c.byID[l.Event.ID]; e == nil && newPos(l.Event).cmp(c.floor) > 0 {
			return false // (above the floor, so held unless changed since: not current)
		}
		ids[l.Event.ID] = true
	}
	authors := make(map[string]bool, len(f.Authors))
	for _, a := range f.Authors {
		authors[a] = true
	}
	delete(authors, "") // (a row whose author the cache did not know)
	if seq < c.seq && c.log.touches(seq, ids, authors) {
		return false
	}
	kinds := f.Kinds
	if kinds == nil {
		kinds = []int{anyKind}
	}
	tick := c.tick.Add(1)
	for _, a := range f.Authors {
		for _, k := range kinds {
			key := rangeKey{a, k}
			r := c.ranges[key]
			if r == nil {
				r = &authorRange{floor: floor}
				c.ranges[key] = r
				c.pinnedBytes += rangeCost
				c.bytes += rangeCost
			}
			if floor.cmp(r.floor) < 0 {
				r.floor = floor
			}
			r.used.Store(tick)
		}
	}
	for _, l := range answer {
		if c.byID[l.Event.ID] == nil {
			e := newEntry(l.Event, l.JSON)
			e.pinned = true
			c.add(e)
		}
	}
	c.evict()
	return true
}

func newPos(ev *nostr.Event) pos { return pos{int64(ev.CreatedAt), ev.ID} }

// globalFloor is the floor above which every visible public event is held;
// bottom for an unbounded cache.
func (c *Cache) globalFloor() pos {
	if !c.bounded {
		return bottom
	}
	return c.floor
}

// rangeFloor is the floor of what the cache holds of author's events of
// kind (anyKind: of every kind): the lowest of the global floor and of its
// ranges' floors. Under c.mu (read).
func (c *Cache) rangeFloor(author string, kind int, tick int64) pos {
	fl := c.globalFloor()
	for _, k := range [2]int{anyKind, kind} {
		if r := c.ranges[rangeKey{author, k}]; r != nil {
			r.used.Store(tick)
			if r.floor.cmp(fl) < 0 {
				fl = r.floor
			}
		}
		if kind == anyKind {
			break
		}
	}
	return fl
}

// filterFloor is the floor of what the cache holds of f's matches: every
// visible public event f matches above it is held.
func (c *Cache) filterFloor(f nostr.Filter) pos {
	g := c.globalFloor()
	if f.Authors == nil || len(c.ranges) == 0 {
		return g
	}
	tick := c.tick.Add(1)
	kinds := f.Kinds
	if kinds == nil {
		kinds = []int{anyKind}
	}
	fl := bottom
	for _, a := range f.Authors {
		for _, k := range kinds {
			if p := c.rangeFloor(a, k, tick); p.cmp(fl) > 0 {
				fl = p
			}
			if fl == g {
				return g
			}
		}
	}
	return fl
}

// covered reports whether a range holds e (not above the global floor).
func (c *Cache) covered(e *entry) bool {
	for _, k := range [2]int{anyKind, e.ev.Kind} {
		if r := c.ranges[rangeKey{e.ev.PubKey, k}]; r != nil && e.pos().cmp(r.floor) > 0 {
			return true
		}
	}
	return false
}

// pin keeps e, which the global floor passed, for the range that covers it:
// out of the lists that hold only what is above the global floor.
func (c *Cache) pin(e *entry) {
	c.unlist(e)
	e.pinned = true
	c.pinnedBytes += e.size
}

// dropLRURange drops the least recently used range, and the pinned entries
// that no other range covers. It reports false when there is none.
func (c *Cache) dropLRURange() bool {
	var oldest rangeKey
	var used int64 = math.MaxInt64
	for k, r := range c.ranges {
		if u := r.used.Load(); u < used {
			oldest, used = k, u
		}
	}
	if used == math.MaxInt64 {
		return false
	}
	delete(c.ranges, oldest)
	c.pinnedBytes -= rangeCost
	c.bytes -= rangeCost
	var gone []*entry
	for _, e := range c.authors[oldest.author] {
		if !e.pinned {
			break // (pinned entries are below the global floor: first)
		}
		if !c.covered(e) {
			gone = append(gone, e)
		}
	}
	for _, e := range gone {
		c.drop(e)
	}
	return true
}

// logRows remembers the rows of an Apply (see rowLog); before they are
// applied, so that a deleted event's author is still known.
func (c *Cache) logRows(rows []outbox.Row, loaded map[string]Loaded) {
	for _, r := range rows {
		if r.Seq <= c.seq {
			continue
		}
		author := ""
		if l, ok := loaded[r.EventID]; ok {
			author = l.Event.PubKey
		} else if e := c.byID[r.EventID]; e != nil {
			author = e.ev.PubKey
		}
		c.log.add(loggedRow{seq: r.Seq, id: r.EventID, author: author})
	}
}
