package textsearch

// This file is the one place that builds SQL over cn_index.documents, the
// search index kept by internal/indexer: NIP-50 REQs (internal/store) and
// /v1/search (internal/indexer) rank, filter and page documents d with the
// same conditions, the same ts_rank and the same slack.

// Slack is how many documents beyond a page a search ranks, so that events
// hidden since they were indexed (the index lags the relay by a batch) do not
// shorten the page: the caller joins the page with the events and drops the
// ones that are no longer visible.
const Slack = 16

// RankSQL is the relevance of document d for the tsquery expression q:
// ts_rank normalised by the document length (flag 1), so that a long article
// does not outrank a short note just by repeating words.
func RankSQL(q string) string { return "ts_rank(d.tsv, " + q + ", 1)" }

// OrderSQL orders ranked documents (score is RankSQL's value, as an SQL
// expression): by relevance, then newest first, then by lowest id. It is a
// total order, so pages never repeat or skip a document that stays indexed.
func OrderSQL(score string) string { return score + " DESC, d.created_at DESC, d.event_id" }

// DocFilter is what a search asks of the documents besides matching its
// query. Zero values mean "no condition".
type DocFilter struct {
	Topics  []string // in any of them (normalised topic ids)
	IDs     []string
	Kinds   []int32
	Authors []string
	Since   *int64 // created_at at or after
	Until   *int64 // created_at at or before
}

// DocConds returns the conditions on document d: it matches the tsquery
// expression q, it has not expired as of now (an SQL expression of unix
// seconds), and it meets f. arg adds a query argument and returns its
// placeholder.
func DocConds(q, now string, f DocFilter, arg func(any) string) []string {
	conds := []string{"d.tsv @@ " + q, "(d.expires_at IS NULL OR d.expires_at > " + now + ")"}
	if f.Topics != nil {
		conds = append(conds, "d.tsv @@ "+arg(TopicQuery(f.Topics))+"::tsquery")
	}
	if f.IDs != nil {
		conds = append(conds, "d.event_id"+oneOf(f.IDs, arg))
	}
	if f.Kinds != nil {
		conds = append(conds, "d.kind"+oneOf(f.Kinds, arg))
	}
	if f.Authors != nil {
		conds = append(conds, "d.pubkey"+oneOf(f.Authors, arg))
	}
	if f.Since != nil {
		conds = append(conds, "d.created_at >= "+arg(*f.Since))
	}
	if f.Until != nil {
		conds = append(conds, "d.created_at <= "+arg(*f.Until))
	}
	return conds
}

// oneOf is " = $n" for one value, " = ANY($n)" for several.
func oneOf[T any](vs []T, arg func(any) string) string {
	if len(vs) == 1 {
		return " = " + arg(vs[0])
	}
	return " = ANY(" + arg(vs) + ")"
}
