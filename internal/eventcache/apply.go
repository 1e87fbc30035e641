package eventcache

import (
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

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
