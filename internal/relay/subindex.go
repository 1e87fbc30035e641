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
	keyed map[indexKey]map[*indexEntry]struct{}
	rest  map[*indexEntry]struct{}
	count int // subscriptions
}

type indexEntry struct {
	sub    *subscription
	filter protocol.LiveFilter // sub.filters[i] without its tag map (some 400 bytes): what a live subscription keeps of it
	search *textsearch.Query   // the filter's NIP-50 search, parsed; nil without one
	keys   []indexKey          // empty: filed in rest (unless never)
	never  bool                // matches no event; not filed
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
	return &subIndex{keyed: make(map[indexKey]map[*indexEntry]struct{}), rest: make(map[*indexEntry]struct{})}
}

// keysFor picks the field a filter is filed under. never reports a filter that
// matches nothing (a present but empty list), which is not filed at all.
func keysFor(f nostr.Filter) (keys []indexKey, never bool) {
	if emptyList(f) {
		return nil, true
	}
	switch {
	case len(f.IDs) > 0:
		for _, id := range f.IDs {
			keys = append(keys, indexKey{dim: dimID, s: id})
		}
	case len(f.Authors) > 0:
		for _, a := range f.Authors {
			keys = append(keys, indexKey{dim: dimAuthor, s: a})
		}
	case bestTag(f) != "":
		name := bestTag(f)
		for _, v := range f.Tags[name] {
			keys = append(keys, indexKey{dim: dimTag, s: name + "\x00" + v})
		}
	case len(f.Kinds) > 0:
		for _, k := range f.Kinds {
			keys = append(keys, indexKey{dim: dimKind, kind: k})
		}
	}
	return keys, false
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

// bestTag is the single-letter tag of f with the fewest values ("" if none).
func bestTag(f nostr.Filter) string {
	best, n := "", 0
	for name, values := range f.Tags {
		if len(name) != 1 || len(values) == 0 {
			continue
		}
		if best == "" || len(values) < n || (len(values) == n && name < best) {
			best, n = name, len(values)
		}
	}
	return best
}

// add files every filter of s.
func (x *subIndex) add(s *subscription) {
	entries := make([]*indexEntry, len(s.filters))
	for i, f := range s.filters {
		keys, never := keysFor(f)
		e := &indexEntry{sub: s, filter: detach(protocol.NewLiveFilter(f)), keys: keys, never: never}
		if f.Search != "" {
			q, ok := protocol.ParseSearch(f.Search)
			e.search, e.never = &q, never || !ok
		}
		entries[i] = e
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s.entries = entries
	for _, e := range entries {
		if e.never {
			continue
		}
		if len(e.keys) == 0 {
			x.rest[e] = struct{}{}
			continue
		}
		for _, k := range e.keys {
			set := x.keyed[k]
			if set == nil {
				set = make(map[*indexEntry]struct{}, 1)
				x.keyed[k] = set
			}
			set[e] = struct{}{}
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
	for _, e := range s.entries {
		if e.never {
			continue
		}
		if len(e.keys) == 0 {
			delete(x.rest, e)
			continue
		}
		for _, k := range e.keys {
			set := x.keyed[k]
			delete(set, e)
			if len(set) == 0 {
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
	try := func(set map[*indexEntry]struct{}) {
		for e := range set {
			if _, ok := seen[e.sub]; ok {
				continue
			}
			if e.matches(ev) {
				if seen == nil {
					seen = make(map[*subscription]struct{})
				}
				seen[e.sub] = struct{}{}
				out = append(out, e.sub)
			}
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
	try(x.rest)
	return out
}

// matchesSub reports whether ev matches one of s's filters (as matching
// would file it for s).
func (x *subIndex) matchesSub(s *subscription, ev *nostr.Event) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, e := range s.entries {
		if !e.never && e.matches(ev) {
			return true
		}
	}
	return false
}
