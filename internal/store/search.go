package store

import (
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/textsearch"
)

// searchSQL turns a filter with `search` into a query over the search index
// (cn_index.documents, kept by the indexer) joined with the events: where and
// args are the filter's conditions on e (filterSQL, $1 is now). Results are
// ordered by relevance, then newest first, ties by lowest id (NIP-50: relevance
// replaces created_at ordering); the limit applies.
//
// Every field but tags other than #t can be checked on the documents, so the
// usual filter is ranked and cut to its limit there, and only that page is joined
// with the events, whose conditions (visibility above all) are checked again: a
// document whose event was deleted a moment ago, before the indexer caught up,
// never shows up (textsearch.Slack extra documents keep the page full). A filter with other tags (#p, #e, ...)
// is joined with the events before the limit.
func searchSQL(f nostr.Filter, where string, args []any) (string, []any, bool) {
	q, ok := protocol.ParseSearch(f.Search)
	if !ok {
		return "", nil, false
	}
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	tsq := ph(q.TSQuery()) + "::tsquery"
	otherTags := false
	for name := range f.Tags {
		otherTags = otherTags || name != "t"
	}
	df := textsearch.DocFilter{IDs: f.IDs, Authors: f.Authors}
	if topics, ok := f.Tags["t"]; ok {
		df.Topics = append([]string{}, topics...) // never nil: "#t" present is a condition
	}
	if f.Kinds != nil {
		df.Kinds = int32s(f.Kinds)
	}
	if f.Since != nil {
		since := int64(*f.Since)
		df.Since = &since
	}
	if f.Until != nil {
		until := int64(*f.Until)
		df.Until = &until
	}
	conds := textsearch.DocConds(tsq, "$1", df, ph)
	limit, inner := "", ""
	if f.Limit > 0 {
		limit = " LIMIT " + ph(f.Limit)
		inner = " LIMIT " + ph(f.Limit+textsearch.Slack)
	}
	rank := textsearch.RankSQL(tsq)
	if otherTags {
		return "SELECT " + eventColumns + " FROM cn_index.documents d JOIN cn_relay.events e ON e.id = d.event_id WHERE " +
			strings.Join(append(conds, where), " AND ") +
			" ORDER BY " + rank + " DESC, e.created_at DESC, e.id" + limit, args, true
	}
	return "SELECT " + eventColumns + " FROM (SELECT d.event_id, d.created_at, " + rank + " AS score" +
		" FROM cn_index.documents d WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY " + textsearch.OrderSQL("score") + inner + ") p" +
		" JOIN cn_relay.events e ON e.id = p.event_id WHERE " + where +
		" ORDER BY p.score DESC, p.created_at DESC, p.event_id" + limit, args, true
}
