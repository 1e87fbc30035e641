package store

import (
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/textsearch"
)

// nip50Extensions are the key:value extensions NIP-50 defines for search strings.
// This relay supports none of them; they are removed before parsing, as NIP-50
// asks relays to ignore extensions they do not support.
var nip50Extensions = []string{"include:", "domain:", "language:", "sentiment:", "nsfw:"}

// SearchQuery parses a NIP-50 search string: unsupported extensions are dropped,
// the rest is a textsearch query. ok is false when nothing searchable remains
// (the filter then matches nothing).
func SearchQuery(search string) (textsearch.Query, bool) {
	fields := strings.Fields(search)
	kept := fields[:0]
	for _, f := range fields {
		ext := false
		for _, p := range nip50Extensions {
			if strings.HasPrefix(strings.ToLower(f), p) {
				ext = true
				break
			}
		}
		if !ext {
			kept = append(kept, f)
		}
	}
	q, err := textsearch.ParseQuery(strings.Join(kept, " "))
	return q, err == nil
}

// searchSQL turns a filter with `search` into a query over the search index
// (cn_index.documents, kept by the indexer) joined with the events: where and
// args are the filter's conditions on e (filterSQL); kinds, authors, the time
// range and #t are also applied to the documents so that the index narrows the
// match first. Results are ordered by relevance, then newest first, ties by
// lowest id (NIP-50: relevance replaces created_at ordering); the limit applies.
func searchSQL(f nostr.Filter, where string, args []any) (string, []any, bool) {
	q, ok := SearchQuery(f.Search)
	if !ok {
		return "", nil, false
	}
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	tsq := ph(q.TSQuery())
	conds := []string{"d.tsv @@ " + tsq + "::tsquery", where}
	if topics, ok := f.Tags["t"]; ok {
		conds = append(conds, "d.topics && "+ph(topics)+"::text[]")
	}
	if f.Kinds != nil {
		kinds := make([]int32, len(f.Kinds))
		for i, k := range f.Kinds {
			kinds[i] = int32(k)
		}
		conds = append(conds, "d.kind = ANY("+ph(kinds)+")")
	}
	if f.Authors != nil {
		conds = append(conds, "d.pubkey = ANY("+ph(f.Authors)+")")
	}
	if f.Since != nil {
		conds = append(conds, "d.created_at >= "+ph(int64(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "d.created_at <= "+ph(int64(*f.Until)))
	}
	sql := "SELECT " + eventColumns + " FROM cn_index.documents d JOIN cn_relay.events e ON e.id = d.event_id WHERE " +
		strings.Join(conds, " AND ") +
		" ORDER BY ts_rank(d.tsv, " + tsq + "::tsquery, 1) DESC, e.created_at DESC, e.id"
	if f.Limit > 0 {
		sql += " LIMIT " + ph(f.Limit)
	}
	return sql, args, true
}
