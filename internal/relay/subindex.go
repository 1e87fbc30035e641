package relay

import (
	"slices"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/textsearch"
)

// subIndex finds the subscriptions an event may match without testing every
// filter. Each filter is filed under the values of its most selective field: ids,
// else authors, else the values of one single-letter tag (#t, #e, ...), else
// kinds; a filter with none of these is kept in a list tried for every event. An
// event looks up its own id, pubkey, kind and single-letter tag values (topics
// normalised, as protocol.Match compares them), and every candidate is confirmed
// with protocol.Match. A filter filed under field F with
// values V can only match events whose F is in V, so no match is ever missed.
type subIndex struct {
	mu    sync.RWMutex
	keyed map[indexKey]*entrySet
	rest  entrySet
	count int // subscriptions
}

// entrySet is the entries filed under one key (or in rest). An entry filed
// under this key alone (nearly every one) is in one, at its pos; one filed
// under several keys is in many.
type entrySet struct {
	one  []*indexEntry
	many map[*indexEntry]struct{}
}

// put adds e; single says e is filed under this key alone.
func (s *entrySet) put(e *indexEntry, single bool) {
	if single {
		e.pos = int32(len(s.one))
		s.one = append(s.one, e)
		return
	}
	if s.many == nil {
		s.many = make(map[*indexEntry]struct{}, 1)
	}
	s.many[e] = struct{}{}
}

// drop removes e, put with the same single.
func (s *entrySet) drop(e *indexEntry, single bool) {
	if !single {
		delete(s.many, e)
		if len(s.many) == 0 {
			s.many = nil
		}
		return
	}
	i, last := int(e.pos), len(s.one)-1
	s.one[i] = s.one[last]
	s.one[i].pos = int32(i)
	s.one[last] = nil
	s.one = s.one[:last]
	if last == 0 {
		s.one = nil
	} else if cap(s.one) > 64 && last < cap(s.one)/4 {
		s.one = slices.Clip(slices.Clone(s.one)) // (gives the memory back)
	}
}

// len returns the number of entries.
func (s *entrySet) len() int { return len(s.one) + len(s.many) }

// indexEntry is one filter of a filed subscription. Its keys are not kept:
// keys computes them from the filter, the same when it is filed and when it
// is unfiled.
type indexEntry struct {
	sub    *subscription
	filter protocol.LiveFilter // sub.filters[i] without its tag map (some 400 bytes): what a live subscription keeps of it
	search *textsearch.Query   // the filter's NIP-50 search, parsed; nil without one
	never  bool                // matches no event; not filed
	pos    int32               // where it is in its entrySet's one, when filed under one key (or none); under subIndex.mu
}

// matches reports whether ev matches the entry's filter, its search included: a
// live event matches a NIP-50 filter when its text (content, and the title and
// summary of long-form kinds, as the indexer indexes them) matches the query.
func (e *indexEntry) matches(ev *nostr.Event) bool {
	if !e.filter.Match(ev) {
		return false
	}
	return e.search == nil || e.search.Match(protocol.SearchText(ev))
}

type indexDim uint8

const (
	dimID indexDim = iota + 1
	dimAuthor
	dimTag
	dimKind
)

type indexKey struct {
	dim  indexDim
	s    string // id, author, or tag name + "\x00" + value
	kind int
}

func newSubIndex() *subIndex {
	return &subIndex{keyed: make(map[indexKey]*entrySet)}
}

// keys yields the keys the entry's filter is filed under: the values of
// its most selective field (ids, else authors, else the values of one
// single-letter tag, else kinds). A filter with none of these yields none and
// is filed in rest.
func (e *indexEntry) keys(yield func(indexKey) bool) {
	f := &e.filter
	switch {
	case len(f.IDs) > 0:
		for _, id := range f.IDs {
			if !yield(indexKey{dim: dimID, s: id}) {
				return
			}
		}
	case len(f.Authors) > 0:
		for _, a := range f.Authors {
			if !yield(indexKey{dim: dimAuthor, s: a}) {
				return
			}
		}
	case bestTag(f) != nil:
		t := bestTag(f)
		for _, v := range t.Values {
			if !yield(indexKey{dim: dimTag, s: t.Name + "\x00" + v}) {
				return
			}
		}
	case len(f.Kinds) > 0:
		for _, k := range f.Kinds {
			if !yield(indexKey{dim: dimKind, kind: k}) {
				return
			}
		}
	}
}

// keyCount returns how many keys the entry yields (keys), counting a key
// listed twice twice.
func (e *indexEntry) keyCount() int {
	n := 0
	for range e.keys {
		n++
	}
	return n
}

// emptyList reports whether f has a present but empty list, so matches nothing.
func emptyList(f nostr.Filter) bool {
	if (f.IDs != nil && len(f.IDs) == 0) || (f.Authors != nil && len(f.Authors) == 0) ||
		(f.Kinds != nil && len(f.Kinds) == 0) {
		return true
	}
	for _, values := range f.Tags {
		if values != nil && len(values) == 0 {
			return true
		}
	}
	return false
}

// bestTag is the single-letter tag condition of f with the fewest values,
// the first name in order among those (nil if none).
func bestTag(f *protocol.LiveFilter) *protocol.TagValues {
	var best *protocol.TagValues
	for i := range f.Tags {
		t := &f.Tags[i]
		if len(t.Name) != 1 || len(t.Values) == 0 {
			continue
		}
		if best == nil || len(t.Values) < len(best.Values) || (len(t.Values) == len(best.Values) && t.Name < best.Name) {
			best = t
		}
	}
	return best
}

// add files every filter of s. A subscription of one filter holds its entry
// itself (subscription.one).
func (x *subIndex) add(s *subscription) {
	var entries []indexEntry
	if len(s.filters) == 1 {
		entries = s.one[:]
	} else {
		entries = make([]indexEntry, len(s.filters))
	}
	for i, f := range s.filters {
		e := &entries[i]
		*e = indexEntry{sub: s, filter: detach(protocol.NewLiveFilter(f)), never: emptyList(f)}
		if f.Search != "" {
			q, ok := protocol.ParseSearch(f.Search)
			e.search, e.never = &q, e.never || !ok
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s.entries = entries
	for i := range entries {
		e := &entries[i]
		if e.never {
			continue
		}
		n := e.keyCount()
		if n == 0 {
			x.rest.put(e, true)
			continue
		}
		for k := range e.keys {
			set := x.keyed[k]
			if set == nil {
				set = &entrySet{}
				x.keyed[k] = set
			}
			set.put(e, n == 1)
		}
	}
	x.count++
}

// detach returns f with its strings copied into one allocation of their own
// (in new slices; f's are the subscription's filters', which its query reads):
// a filter's strings are slices of the REQ message they were parsed from,
// which a live subscription would otherwise keep whole for its life.
func detach(f protocol.LiveFilter) protocol.LiveFilter {
	// Every string of f, in one order: first written into the arena, then
	// re-sliced from it.
	var strs []*string
	ids := slices.Clone(f.IDs)
	authors := slices.Clone(f.Authors)
	for i := range ids {
		strs = append(strs, &ids[i])
	}
	for i := range authors {
		strs = append(strs, &authors[i])
	}
	var tags []protocol.TagValues
	if f.Tags != nil {
		tags = make([]protocol.TagValues, len(f.Tags))
		for i, t := range f.Tags {
			tags[i] = protocol.TagValues{Name: t.Name, Values: slices.Clone(t.Values)}
			strs = append(strs, &tags[i].Name)
			for j := range tags[i].Values {
				strs = append(strs, &tags[i].Values[j])
			}
		}
	}
	n := 0
	for _, s := range strs {
		n += len(*s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range strs {
		b.WriteString(*s)
	}
	arena, at := b.String(), 0
	for _, s := range strs {
		l := len(*s)
		*s = arena[at : at+l]
		at += l
	}
	f.IDs, f.Authors, f.Tags = ids, authors, tags
	return f
}

// remove unfiles s and reports whether it was filed.
func (x *subIndex) remove(s *subscription) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.entries == nil {
		return false
	}
	for i := range s.entries {
		e := &s.entries[i]
		if e.never {
			continue
		}
		n := e.keyCount()
		if n == 0 {
			x.rest.drop(e, true)
			continue
		}
		for k := range e.keys {
			set := x.keyed[k]
			if set == nil {
				continue // (a key listed twice: dropped the first time)
			}
			set.drop(e, n == 1)
			if set.len() == 0 {
				delete(x.keyed, k)
			}
		}
	}
	s.entries = nil
	x.count--
	return true
}

// size returns the number of filed subscriptions.
func (x *subIndex) size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.count
}

// matching appends to out every filed subscription with a filter that matches ev,
// each once.
func (x *subIndex) matching(ev *nostr.Event, out []*subscription) []*subscription {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var seen map[*subscription]struct{}
	tryOne := func(e *indexEntry) {
		if _, ok := seen[e.sub]; ok {
			return
		}
		if e.matches(ev) {
			if seen == nil {
				seen = make(map[*subscription]struct{})
			}
			seen[e.sub] = struct{}{}
			out = append(out, e.sub)
		}
	}
	try := func(set *entrySet) {
		if set == nil {
			return
		}
		for _, e := range set.one {
			tryOne(e)
		}
		for e := range set.many {
			tryOne(e)
		}
	}
	try(x.keyed[indexKey{dim: dimID, s: ev.ID}])
	try(x.keyed[indexKey{dim: dimAuthor, s: ev.PubKey}])
	for _, tag := range ev.Tags {
		if len(tag) < 2 || len(tag[0]) != 1 {
			continue
		}
		v := tag[1]
		if tag[0] == "t" { // filters hold normalised topics; see protocol.Match
			v = protocol.NormalizeTopic(v)
		}
		try(x.keyed[indexKey{dim: dimTag, s: tag[0] + "\x00" + v}])
	}
	try(x.keyed[indexKey{dim: dimKind, kind: ev.Kind}])
	try(&x.rest)
	return out
}

// matchesSub reports whether ev matches one of s's filters (as matching
// would file it for s).
func (x *subIndex) matchesSub(s *subscription, ev *nostr.Event) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for i := range s.entries {
		if e := &s.entries[i]; !e.never && e.matches(ev) {
			return true
		}
	}
	return false
}
