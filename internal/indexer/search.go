package indexer

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/schema"
)

// SearchParams is one search request. Zero values mean "no filter".
type SearchParams struct {
	Query textsearch.Query
	Topic string // a normalised topic id
	// Group is a NIP-29 group id: only the events sent to it (its scope,
	// groups.Scope). A reader's right to read the group is the caller's
	// rule, applied like any other condition on the documents.
	Group  string
	Author string // 64 hex
	Kind   *int
	Since  *int64
	Until  *int64
	Limit  int     // 1..MaxLimit
	After  *Cursor // the previous page's NextCursor
}

// MaxLimit caps SearchParams.Limit.
const MaxLimit = 100

// Hit is one search result.
type Hit struct {
	EventID   string  `json:"event_id"`
	TopicID   string  `json:"topic_id"`
	Kind      int     `json:"kind"`
	Pubkey    string  `json:"pubkey"`
	CreatedAt int64   `json:"created_at"`
	Snippet   string  `json:"snippet"`
	Score     float32 `json:"score"`
}

// Cursor is the position after the last hit of a page. Results are ordered by
// score (relevance) descending, then created_at descending, then event_id
// ascending: a total order, so pages never repeat or skip a document that stays
// in the index.
type Cursor struct {
	Score     float32
	CreatedAt int64
	EventID   string
}

// ErrBadCursor is returned by ParseCursor for anything it did not produce.
var ErrBadCursor = errors.New("malformed cursor")

// String encodes the cursor opaquely (URL-safe).
func (c Cursor) String() string {
	raw := strconv.FormatUint(uint64(math.Float32bits(c.Score)), 16) + "." + strconv.FormatInt(c.CreatedAt, 10) + "." + c.EventID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseCursor decodes Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || !protocol.IsHex64(parts[2]) {
		return Cursor{}, ErrBadCursor
	}
	bits, err1 := strconv.ParseUint(parts[0], 16, 32)
	at, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{Score: math.Float32frombits(uint32(bits)), CreatedAt: at, EventID: parts[2]}, nil
}

// Search returns one page of hits and the cursor of the next page (nil at the
// end). Hits whose event became invisible after it was indexed (the index lags the
// relay by a batch) are skipped; textsearch.Slack extra rows keep the page full.
func Search(ctx context.Context, db querier, p SearchParams, now time.Time) ([]Hit, *Cursor, error) {
	args := []any{p.Query.TSQuery(), now.Unix()}
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	df := textsearch.DocFilter{Since: p.Since, Until: p.Until}
	scope := p.Topic
	if p.Group != "" {
		scope = groups.Scope(p.Group)
	}
	if scope != "" {
		df.Topics = []string{scope}
	}
	if p.Author != "" {
		df.Authors = []string{p.Author}
	}
	if p.Kind != nil {
		df.Kinds = []int32{int32(*p.Kind)}
	}
	conds := textsearch.DocConds("q", "$2", df, ph)
	// The API answers anyone: a private group's events and a hidden group's
	// state are never among the hits (schema.GroupReadableDocSQL).
	conds = append(conds, schema.GroupReadableDocSQL("d.topics", "d.kind"))
	rank := textsearch.RankSQL("q")
	if c := p.After; c != nil {
		s, at, id := ph(c.Score), ph(c.CreatedAt), ph(c.EventID)
		conds = append(conds, fmt.Sprintf("(%[1]s < %[2]s::real OR (%[1]s = %[2]s::real AND (d.created_at < %[3]s OR (d.created_at = %[3]s AND d.event_id > %[4]s))))",
			rank, s, at, id))
	}
	limit := min(max(p.Limit, 1), MaxLimit)
	sql := `
WITH page AS (
	SELECT d.event_id, d.kind, d.pubkey, d.created_at, d.topics, ` + rank + ` AS score
	FROM cn_index.documents d, CAST($1 AS tsquery) q
	WHERE ` + strings.Join(conds, " AND ") + `
	ORDER BY ` + textsearch.OrderSQL("score") + `
	LIMIT ` + ph(limit+1+textsearch.Slack) + `
)
SELECT p.event_id, p.kind, p.pubkey, p.created_at, p.topics, p.score, coalesce(e.content, ''),
       coalesce(` + schema.LiveSQL + `, false)
FROM page p LEFT JOIN cn_relay.events e ON e.id = p.event_id
ORDER BY p.score DESC, p.created_at DESC, p.event_id`
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("search: %w", err)
	}
	type row struct {
		hit     Hit
		topics  []string
		content string
		visible bool
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.hit.EventID, &x.hit.Kind, &x.hit.Pubkey, &x.hit.CreatedAt, &x.topics, &x.hit.Score, &x.content, &x.visible)
		return x, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search: %w", err)
	}
	hits := make([]Hit, 0, limit)
	var next *Cursor
	for _, x := range got {
		if len(hits) == limit { // and more rows follow
			last := hits[limit-1]
			next = &Cursor{Score: last.Score, CreatedAt: last.CreatedAt, EventID: last.EventID}
			break
		}
		if !x.visible {
			continue
		}
		x.hit.TopicID = scope
		if x.hit.TopicID == "" && len(x.topics) > 0 {
			x.hit.TopicID = x.topics[0]
		}
		x.hit.Snippet = textsearch.Snippet(x.content, p.Query, snippetRunes)
		hits = append(hits, x.hit)
	}
	if next == nil && len(got) == limit+1+textsearch.Slack {
		// Too many hidden rows for the slack: a short page, then go on after it.
		last := got[len(got)-1].hit
		next = &Cursor{Score: last.Score, CreatedAt: last.CreatedAt, EventID: last.EventID}
	}
	return hits, next, nil
}

// snippetRunes is the length of a hit's snippet.
const snippetRunes = 160
