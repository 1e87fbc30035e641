package eventcache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/greatroar/blobloom"
	"github.com/nbd-wtf/go-nostr"
)

// # The seen set
//
// Many REQs ask for what this relay never stored: a note by id that an app
// asks every relay for, the replies (#e) or reactions to a note that has none,
// the profile of a key that never wrote here. Their answer is empty, but a
// bounded cache cannot prove it (the event could be older than the floor). The
// seen set can: it is a Bloom filter of the ids, the authors, and the values
// of the single-letter tags but t (the ones the store indexes in event_tags)
// of every event stored, whatever its state (deleted, hidden, pending,
// expired: a superset only costs a database read), except the tag values of
// a replaceable or addressable version that is not its key's effective one
// (the store keeps no event_tags rows for it; it becomes visible again only
// through an upsert row, and Apply then adds its keys). A filter that names ids,
// authors or values of one tag none of which the set holds matches no stored
// event, so its answer is empty.
//
// It is built from a database snapshot in the background (BuildSeen) while
// the follower adds the keys of every event it loads for an upsert row
// (Apply). An event becomes visible only through an upsert row, so a key of a
// visible event is either in the snapshot or added by Apply: BuildSeen's
// registration (under the cache's lock) comes before the snapshot, so a row
// committed after the snapshot is applied after the registration. The set is
// used only when every event has outbox rows (New's topicless false): an
// event stored without a topic after the build would never reach it.
//
// The filter is sized for twice the keys expected (the scan's estimate from
// statistics, or the keys found); once it holds more than that its
// false-positive rate has risen, and BuildSeen's channel tells the builder to
// build it again (the old one answers meanwhile).

// seenSeed keys the hashes: the set lives in one process's memory.
var seenSeed = maphash.MakeSeed()

// Seen fields: the filter field a key belongs to ("#x" for a tag).
const (
	SeenID     = "ids"
	SeenAuthor = "authors"
)

// SeenTag is the field of single-letter tag name (not "t").
func SeenTag(name string) string { return "#" + name }

// seenTagged reports whether the seen set holds the values of tag name.
func seenTagged(name string) bool { return len(name) == 1 && name != "t" }

func seenHash(field string, value []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seenSeed)
	_, _ = h.WriteString(field)
	_ = h.WriteByte(0)
	_, _ = h.Write(value)
	return h.Sum64()
}

func seenHashString(field, value string) uint64 {
	var h maphash.Hash
	h.SetSeed(seenSeed)
	_, _ = h.WriteString(field)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(value)
	return h.Sum64()
}

// seenKeys appends the hashes of ev's keys to hs.
func seenKeys(hs []uint64, ev *nostr.Event) []uint64 {
	hs = append(hs, seenHashString(SeenID, ev.ID), seenHashString(SeenAuthor, ev.PubKey))
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && seenTagged(tag[0]) {
			hs = append(hs, seenHashString(SeenTag(tag[0]), tag[1]))
		}
	}
	return hs
}

// seenSet is the built filter; under Cache.mu.
type seenSet struct {
	f        *blobloom.Filter
	capacity int // keys it was sized for
	keys     int // keys added
}

// seenMinKeys is the least a filter is sized for (a new node's).
const seenMinKeys = 1 << 16

// newSeenSet is an empty set sized for twice keys (at least seenMinKeys).
func newSeenSet(keys int) *seenSet {
	capacity := max(2*keys, seenMinKeys)
	return &seenSet{f: blobloom.NewOptimized(blobloom.Config{Capacity: uint64(capacity), FPRate: 0.01}), capacity: capacity}
}

func (s *seenSet) add(hs []uint64) {
	for _, h := range hs {
		s.f.Add(h)
	}
	s.keys += len(hs)
}

// SeenStats is the seen set's size.
type SeenStats struct {
	Ready bool
	Keys  int // keys added (a key added twice counts twice)
	Bytes int
	// Proofs counts the filters answered empty because the set holds none
	// of their keys.
	Proofs int64
}

// seenState is the cache's seen set and its build; under Cache.mu.
type seenState struct {
	set      *seenSet // nil until the first build ends
	building []uint64 // non-nil while a build runs: the keys Apply added since it registered
	full     chan struct{}
	fullOnce sync.Once
	proofs   atomic.Int64 // (counted under the read lock)
}

// added records keys Apply met; under Cache.mu (write).
func (s *seenState) added(hs []uint64) {
	if s.building != nil {
		s.building = append(s.building, hs...)
	}
	if s.set != nil {
		s.set.add(hs)
		if s.set.keys > s.set.capacity && s.full != nil {
			s.fullOnce.Do(func() { close(s.full) })
		}
	}
}

// has reports whether the set may hold the key; false only when it is ready
// and surely does not.
func (s *seenState) has(field, value string) bool {
	return s.set == nil || s.set.f.Has(seenHashString(field, value))
}

// SeenScan streams the keys of every stored event (see the seen set) from one
// snapshot that begins after it is called: key gets a field (SeenID,
// SeenAuthor, SeenTag) and a value, which it must not keep. Before the first
// key it may call size once with an estimate of how many keys follow, so that
// the set is made at its size and takes each key as it comes; without one the
// keys' hashes are held (8 bytes each) until the scan ends.
type SeenScan func(size func(keys int), key func(field string, value []byte)) error

// BuildSeen builds the seen set from scan, replacing the one in use when it
// ends; the cache keeps answering meanwhile. The set is sized for twice the
// larger of scan's estimate and the keys the set in use has taken (an estimate
// from stale statistics is corrected by the next build). It returns a channel
// closed when the new set has taken more keys than it was sized for: the
// caller should build it again then. A cache that may hold topic-less events
// (New's topicless) has no use for a seen set: BuildSeen returns a nil
// channel.
func (c *Cache) BuildSeen(scan SeenScan) (full <-chan struct{}, err error) {
	if c.topicless {
		return nil, nil
	}
	c.mu.Lock()
	c.seen.building = make([]uint64, 0, 64)
	prev := 0
	if c.seen.set != nil {
		prev = c.seen.set.keys
	}
	c.mu.Unlock()
	var set *seenSet // (the builder's own until it is installed)
	var hs []uint64  // the hashes, while no estimate came
	err = scan(func(keys int) {
		if set == nil && len(hs) == 0 {
			set = newSeenSet(max(keys, prev))
		}
	}, func(field string, value []byte) {
		if h := seenHash(field, value); set != nil {
			set.f.Add(h)
			set.keys++
		} else {
			hs = append(hs, h)
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.seen.building = nil
		return nil, err
	}
	if set == nil {
		set = newSeenSet(max(len(hs)+len(c.seen.building), prev))
	}
	set.add(hs)
	set.add(c.seen.building)
	c.seen.building = nil
	c.seen.set = set
	ch := make(chan struct{})
	c.seen.full, c.seen.fullOnce = ch, sync.Once{}
	if set.keys > set.capacity {
		c.seen.fullOnce.Do(func() { close(ch) })
	}
	return ch, nil
}

// SeenStats returns the seen set's size now.
func (c *Cache) SeenStats() SeenStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := SeenStats{Proofs: c.seen.proofs.Load()}
	if s := c.seen.set; s != nil {
		st.Ready, st.Keys, st.Bytes = true, s.keys, int(s.f.NumBits()/8)
	}
	return st
}

// unstored reports whether f provably matches no stored event: it names ids,
// authors, or values of one tag but t, and the seen set holds none of them.
// Under Cache.mu (read).
func (c *Cache) unstored(f nostr.Filter) bool {
	if c.seen.set == nil {
		return false
	}
	none := func(field string, values []string) bool {
		if len(values) == 0 {
			return false
		}
		for _, v := range values {
			if c.seen.has(field, v) {
				return false
			}
		}
		return true
	}
	if none(SeenID, f.IDs) || none(SeenAuthor, f.Authors) {
		return true
	}
	for name, values := range f.Tags {
		if seenTagged(name) && none(SeenTag(name), values) {
			return true
		}
	}
	return false
}
