package eventcache

import (
	"container/heap"
	"maps"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

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
	for i, f := range filters {
		es, ok := c.answer(f, now)
		if !ok {
			return nil, 0, false, false
		}
		if i == 0 {
			out = es // (a lone filter's answer is the answer: no copy)
		} else {
			out = append(out, es...)
		}
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
	out := make([]*entry, 0, min(limit, mergeCap))
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

// mergeCap bounds the room merge makes for its answer at once (a filter's
// limit may be far above what the lists hold).
const mergeCap = 128

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
