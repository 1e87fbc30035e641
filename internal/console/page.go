package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Paging (issue 47: with 672 groups the whole list was 644 KB and the page
// 540,000 DOM nodes). Every list the console serves comes a page at a time:
// at most limit rows in the list's stable order, and the cursor of the next
// page. A cursor is the sort key of a page's last row (keyset paging, never
// OFFSET), so a page costs the same wherever it is in the list, and a row
// added or removed between two reads neither repeats nor hides another.
const (
	// DefaultLimit is the rows of a page when the request names no limit.
	DefaultLimit = 50
	// MaxLimit bounds the rows of one page.
	MaxLimit = 200
	// GroupPreview is how many members, pending requests and invite codes a
	// group in the list carries (each with its whole count); the group's own
	// view (?group=ID) pages through its members.
	GroupPreview = 20
	// MaxSearch bounds a search text.
	MaxSearch = 128
)

// Page is one page of a list: its rows in the list's order, and the cursor
// that reads the next page ("" when this page is the last).
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// PageQuery is a list request's paging: limit (1..MaxLimit), after (the
// cursor of the page to read, "" for the first) and q (a search, "" for none).
type PageQuery struct {
	Limit int
	After string
	Q     string
}

// parsePage reads ?limit=, ?after= and ?q= (whichever the list takes). A
// limit that is not an integer from 1 to MaxLimit, or a search longer than
// MaxSearch, is a bad request; the cursor is checked by the list.
func parsePage(r *http.Request) (PageQuery, error) {
	v := r.URL.Query()
	p := PageQuery{Limit: DefaultLimit, After: v.Get("after"), Q: strings.TrimSpace(v.Get("q"))}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return p, badRequest("limit must be an integer from 1 to " + strconv.Itoa(MaxLimit))
		}
		p.Limit = n
	}
	if len(p.Q) > MaxSearch {
		return p, badRequest("q must be at most " + strconv.Itoa(MaxSearch) + " bytes")
	}
	return p, nil
}

// timeCursor is a cursor of a list sorted by a time, then a key: the time in
// unix microseconds, a dot, the key.
func timeCursor(t time.Time, key string) string {
	return strconv.FormatInt(t.UnixMicro(), 10) + "." + key
}

// timeAfter reads a page's after cursor of timeCursor's form whose key
// passes valid: nil and "" for the first page (after == ""), a bad request
// when after is not such a cursor.
func timeAfter(after string, valid func(string) bool) (*time.Time, string, error) {
	if after == "" {
		return nil, "", nil
	}
	t, key, ok := parseTimeCursor(after, valid)
	if !ok {
		return nil, "", badRequest("after must be the next cursor of the page before")
	}
	return &t, key, nil
}

// pageOf makes the page of rows read with a limit one above limit: the first
// limit rows and, when there was one more, Next = cursor(i) of the last row
// kept (rows[i]). Items is never nil, so that it is [] in JSON.
func pageOf[T any](rows []T, limit int, cursor func(i int) string) Page[T] {
	p := Page[T]{Items: rows}
	if len(rows) > limit {
		p.Items, p.Next = rows[:limit], cursor(limit-1)
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

// parseTimeCursor reads a timeCursor whose key passes valid.
func parseTimeCursor(s string, valid func(string) bool) (time.Time, string, bool) {
	at, key, ok := strings.Cut(s, ".")
	if !ok || !valid(key) {
		return time.Time{}, "", false
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil || us < 0 {
		return time.Time{}, "", false
	}
	return time.UnixMicro(us).UTC(), key, true
}

// isHex reports whether s is 1 to n lower-case hex characters.
func isHex(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isPubkey(s string) bool { return len(s) == 64 && isHex(s, 64) }

// isToken reports whether s is 1 to 128 of a-z, A-Z, 0-9, '-' and '_' (a
// NIP-43 invite's id).
func isToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// likePattern escapes s for LIKE and ILIKE (backslash is the escape).
func likePattern(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
