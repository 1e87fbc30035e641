package store

import (
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
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
// never shows up (textsearch.Slack extra documents keep the page full). #h
// (search within NIP-29 groups) is checked on the documents too
// (groupDocCond), then exactly on the page's events like every condition of
// where, the reader's visibility (protocol.Viewer) included. A filter with
// other tags (#p, #e, ...) is joined with the events before the limit.
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
		otherTags = otherTags || (name != "t" && name != "h")
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
	if ids, ok := f.Tags["h"]; ok {
		conds = append(conds, groupDocCond(ids, ph))
	}
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

// groupDocCond is #h on documents: the document is in the scope of one of the
// groups ids (groups.Scope: an event sent to a group is indexed under its
// scope, never under a topic), or of an identity kind, which can carry an h
// tag without belonging to the group (protocol.IsGroupEvent) and is left to
// the exact #h check on the events. It only narrows what is ranked; where
// decides.
func groupDocCond(ids []string, ph func(any) string) string {
	scopes := make([]string, 0, len(ids))
	for _, id := range ids {
		scopes = append(scopes, groups.Scope(id))
	}
	return "(d.tsv @@ " + ph(textsearch.TopicQuery(scopes)) + "::tsquery OR " + identityKindSQL("d.kind", ph) + ")"
}

// identityKindSQL is protocol.IsIdentityKind of the kind column col, in SQL.
func identityKindSQL(col string, ph func(any) string) string {
	return col + " IN (0, 3) OR " + col + " BETWEEN 10000 AND 19999 OR " + col + " = ANY(" + ph(identityAddressableKinds) + ")"
}

// identityAddressableKinds are the addressable kinds protocol.IsIdentityKind
// counts (the replaceable ones are 0, 3 and 10000-19999).
var identityAddressableKinds = func() []int32 {
	var ks []int32
	for k := 30000; k < 40000; k++ {
		if protocol.IsIdentityKind(k) {
			ks = append(ks, int32(k))
		}
	}
	return ks
}()
