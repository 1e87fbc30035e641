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
// args are the filter's conditions on e (filterSQL); kinds, authors, the time
// range and #t are also applied to the documents so that the index narrows the
// match first. Results are ordered by relevance, then newest first, ties by
// lowest id (NIP-50: relevance replaces created_at ordering); the limit applies.
func searchSQL(f nostr.Filter, where string, args []any) (string, []any, bool) {
	q, ok := protocol.ParseSearch(f.Search)
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
		conds = append(conds, "d.tsv @@ "+ph(textsearch.TopicQuery(topics))+"::tsquery")
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
