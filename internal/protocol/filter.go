package protocol

import (
	"maps"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// Reasons returned by ValidateFilter, each a NIP-01 CLOSED message with its prefix.
const (
	ReasonFilterTooManyValues = "invalid: too many values in a filter list"
	ReasonFilterBadID         = "invalid: ids must be 64 lowercase hex characters"
	ReasonFilterBadAuthor     = "invalid: authors must be 64 lowercase hex characters"
	ReasonFilterBadKind       = "invalid: kinds must be between 0 and 65535"
	ReasonFilterSinceAfter    = "invalid: since is after until"
	ReasonFilterNegativeLimit = "invalid: limit must not be negative"
	ReasonFilterBadTagValue   = "invalid: #e and #p values must be 64 lowercase hex characters"
	ReasonFilterTagTooLong    = "invalid: tag value too long"
	ReasonFilterBadText       = "invalid: tag values must be valid UTF-8 without NUL characters"
	ReasonFilterTagName       = "unsupported: only single-letter tag filters (#a-#z, #A-#Z) are supported"
	ReasonFilterSearch        = "unsupported: search (NIP-50) is not enabled on this relay"
	ReasonFilterSearchTooLong = "invalid: search string too long"
	ReasonTopicFilterRequired = "restricted: every filter needs #t with at least one topic"
)

// ValidateFilter checks a REQ or COUNT filter and returns the filter to run, or a
// CLOSED reason (a ReasonFilter* constant, ReasonTopicFilterRequired or
// ReasonTopicNotEnabled).
// The input is not modified.
//
// Checks, first failure wins: each list has at most MaxFilterValues values; ids and
// authors are exact 64-character lowercase hex (NIP-01: no prefixes), as are #e and #p
// values; kinds are 0..65535; since <= until when both are set; limit is not negative;
// search is refused; tag filters are single letters; tag values fit
// MaxTagValueBytes and are valid UTF-8 without NUL; #t has at least one topic when
// RequireTopicInREQ (unless the filter asks only for identity kinds), and every
// topic is enabled (AllowedTopics).
//
// The returned filter has #t values normalised (NormalizeTopic), deduplicated, empty
// ones dropped; tag entries whose list is nil removed; and a limit: `limit:0`
// (LimitZero) stays 0, meaning no stored events, live ones only; an absent limit
// becomes DefaultLimit; a larger one becomes MaxLimit. A present but empty list
// (`"ids":[]`, or #t whose values all normalise to "") matches nothing. Validating a
// returned filter again gives it back unchanged.
//
// On failure the returned filter matches nothing (ids is an empty list, limit:0), so
// using it by mistake leaks nothing.
func ValidateFilter(in nostr.Filter, l Limits) (nostr.Filter, string) {
	if r := checkFilter(in, l); r != "" {
		return nostr.Filter{IDs: []string{}, LimitZero: true}, r
	}
	f := in.Clone()
	for name, values := range f.Tags {
		if values == nil {
			delete(f.Tags, name)
		}
	}
	if topics, ok := f.Tags["t"]; ok {
		norm := make([]string, 0, len(topics))
		for _, v := range topics {
			if t := NormalizeTopic(v); t != "" && !slices.Contains(norm, t) {
				norm = append(norm, t)
			}
		}
		f.Tags["t"] = norm
	}
	if l.RequireTopicInREQ && len(f.Tags["t"]) == 0 && !identityOnly(f) {
		return nostr.Filter{IDs: []string{}, LimitZero: true}, ReasonTopicFilterRequired
	}
	for _, t := range f.Tags["t"] {
		if l.MaxTagValueBytes > 0 && len(t) > l.MaxTagValueBytes {
			return nostr.Filter{IDs: []string{}, LimitZero: true}, ReasonFilterTagTooLong
		}
		if l.AllowedTopics != nil && !l.AllowedTopics[t] {
			return nostr.Filter{IDs: []string{}, LimitZero: true}, ReasonTopicNotEnabled
		}
	}
	if len(f.Tags) == 0 {
		f.Tags = nil
	}
	if f.Limit == 0 && f.LimitZero {
		return f, ""
	}
	f.LimitZero = false
	if f.Limit == 0 {
		switch {
		case l.DefaultLimit > 0:
			f.Limit = l.DefaultLimit
		case l.MaxLimit > 0:
			f.Limit = l.MaxLimit
		}
	}
	if l.MaxLimit > 0 && f.Limit > l.MaxLimit {
		f.Limit = l.MaxLimit
	}
	return f, ""
}

// checkFilter runs the checks that do not need normalisation.
func checkFilter(f nostr.Filter, l Limits) string {
	if max := l.MaxFilterValues; max > 0 {
		if len(f.IDs) > max || len(f.Authors) > max || len(f.Kinds) > max {
			return ReasonFilterTooManyValues
		}
		for _, values := range f.Tags {
			if len(values) > max {
				return ReasonFilterTooManyValues
			}
		}
	}
	for _, id := range f.IDs {
		if !isLowerHex(id, 64) {
			return ReasonFilterBadID
		}
	}
	for _, pk := range f.Authors {
		if !isLowerHex(pk, 64) {
			return ReasonFilterBadAuthor
		}
	}
	for _, k := range f.Kinds {
		if k < 0 || k > 65535 {
			return ReasonFilterBadKind
		}
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return ReasonFilterSinceAfter
	}
	if f.Limit < 0 {
		return ReasonFilterNegativeLimit
	}
	if f.Search != "" {
		if !l.Search {
			return ReasonFilterSearch
		}
		if l.MaxSearchBytes > 0 && len(f.Search) > l.MaxSearchBytes {
			return ReasonFilterSearchTooLong
		}
	}
	// Sorted names make the reported failure independent of map order.
	for _, name := range slices.Sorted(maps.Keys(f.Tags)) {
		values := f.Tags[name]
		if values == nil {
			continue
		}
		if !isSingleLetter(name) {
			return ReasonFilterTagName
		}
		for _, v := range values {
			if l.MaxTagValueBytes > 0 && len(v) > l.MaxTagValueBytes {
				return ReasonFilterTagTooLong
			}
			if !cleanText(v) {
				return ReasonFilterBadText
			}
			if (name == "e" || name == "p") && !isLowerHex(v, 64) {
				return ReasonFilterBadTagValue
			}
		}
	}
	return ""
}

// identityOnly reports whether f asks only for identity kinds, which belong to no
// community topic and so are exempt from RequireTopicInREQ.
func identityOnly(f nostr.Filter) bool {
	if len(f.Kinds) == 0 {
		return false
	}
	for _, k := range f.Kinds {
		if !IsIdentityKind(k) {
			return false
		}
	}
	return true
}

// Match reports whether ev matches f under NIP-01: every condition that f sets holds.
// A list that is nil is no condition; a present list (even empty) needs the event's
// value in it: ids, authors, kinds, and for each #x at least one `x` tag whose first
// value is in the list. since <= created_at <= until. For #t the event's tag values
// are normalised (NormalizeTopic, empty ones ignored) before comparing, and f's #t
// values are taken as given: they are normalised when f comes from ValidateFilter.
// #t matches the `t` tags of every kind, identity events included (NIP-51
// interests, a profile's hashtags), as NIP-01 says. Topics an event inherits
// (TopicRules) and the person scope are not `t` tags: #t matches only the
// event's own, as NIP-01 says and as clients check.
// limit and search play no part (ValidateFilter refuses search).
//
// This is the reference matcher: live fan-out uses it and the SQL query engine is
// tested against it.
func Match(f nostr.Filter, ev *nostr.Event) bool {
	if ev == nil || !matchFields(f.IDs, f.Authors, f.Kinds, f.Since, f.Until, ev) {
		return false
	}
	for name, values := range f.Tags {
		if values == nil {
			continue
		}
		if !hasTagValue(ev, name, values) {
			return false
		}
	}
	return true
}

// matchFields is Match's test of everything but the tags.
func matchFields(ids, authors []string, kinds []int, since, until *nostr.Timestamp, ev *nostr.Event) bool {
	if ids != nil && !slices.Contains(ids, ev.ID) {
		return false
	}
	if authors != nil && !slices.Contains(authors, ev.PubKey) {
		return false
	}
	if kinds != nil && !slices.Contains(kinds, ev.Kind) {
		return false
	}
	if since != nil && ev.CreatedAt < *since {
		return false
	}
	if until != nil && ev.CreatedAt > *until {
		return false
	}
	return true
}

// LiveFilter is a filter as Match applies it (limit and search left out), in
// less memory than a nostr.Filter, whose tag map costs some 400 bytes for a
// single tag: for a filter held as long as a subscription lives (the relay's
// live fan-out). Its Match answers as Match on the filter it was made from.
// It shares that filter's slices and strings, which neither writes to.
type LiveFilter struct {
	IDs, Authors []string
	Kinds        []int
	Since, Until *nostr.Timestamp
	Tags         []TagValues // the tag conditions (a nil list is none and is left out)
}

// TagValues is one tag condition of a LiveFilter: a `Name` tag whose first
// value is in Values.
type TagValues struct {
	Name   string
	Values []string
}

// NewLiveFilter returns f as a LiveFilter.
func NewLiveFilter(f nostr.Filter) LiveFilter {
	lf := LiveFilter{IDs: f.IDs, Authors: f.Authors, Kinds: f.Kinds, Since: f.Since, Until: f.Until}
	for name, values := range f.Tags {
		if values != nil {
			lf.Tags = append(lf.Tags, TagValues{Name: name, Values: values})
		}
	}
	return lf
}

// Match reports whether ev matches the filter, as Match does.
func (f *LiveFilter) Match(ev *nostr.Event) bool {
	if ev == nil || !matchFields(f.IDs, f.Authors, f.Kinds, f.Since, f.Until, ev) {
		return false
	}
	for _, t := range f.Tags {
		if !hasTagValue(ev, t.Name, t.Values) {
			return false
		}
	}
	return true
}

// hasTagValue reports whether ev has a tag `name` whose first value is in values.
func hasTagValue(ev *nostr.Event, name string, values []string) bool {
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != name {
			continue
		}
		v := tag[1]
		if name == "t" {
			if v = NormalizeTopic(v); v == "" {
				continue
			}
		}
		if slices.Contains(values, v) {
			return true
		}
	}
	return false
}
