package textsearch

import (
	"context"
	"github.com/kukuri/communitynode/internal/pgtest"
	"math/rand/v2"
	"testing"
)

// TestMatchAgreesWithPostgres checks Query.Match against Postgres's own
// evaluation of Analyze(doc)::tsvector @@ TSQuery(): on the acceptance table and
// on random documents and queries built from a small mixed-script vocabulary, so
// that phrases, prefixes and negations hit often.
func TestMatchAgreesWithPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	ctx := context.Background()
	type pair struct{ doc, query string }
	var pairs []pair
	for _, c := range acceptance {
		pairs = append(pairs, pair{c.doc, c.query})
	}
	vocab := []string{"東京", "タワー", "東", "京都", "北京大学", "学", "running", "run", "runs", "city", "cities", "new", "york",
		"ramen", "ー", "서울", "ＴＯＫＹＯ", "tokyo", "🎉", "#nostr", "nostr", "it's", "a", "b"}
	rng := rand.New(rand.NewPCG(11, 12))
	pick := func(n int, sep func() string) string {
		s := ""
		for i := range n {
			if i > 0 {
				s += sep()
			}
			s += vocab[rng.IntN(len(vocab))]
		}
		return s
	}
	docSep := func() string { return []string{" ", "", "、", " "}[rng.IntN(4)] }
	querySep := func() string { return []string{" ", "", " -", " \""}[rng.IntN(4)] }
	for range 1500 {
		pairs = append(pairs, pair{pick(1+rng.IntN(12), docSep), pick(1+rng.IntN(3), querySep)})
	}
	checked := 0
	for _, p := range pairs {
		q, err := ParseQuery(p.query)
		if err != nil {
			if q.Match(p.doc) {
				t.Errorf("zero query matched %q", p.doc)
			}
			continue
		}
		var want bool
		if err := conn.QueryRow(ctx, "SELECT $1::tsvector @@ $2::tsquery", Analyze(p.doc), q.TSQuery()).Scan(&want); err != nil {
			t.Fatalf("doc %q query %q: %v", p.doc, p.query, err)
		}
		if got := q.Match(p.doc); got != want {
			t.Errorf("doc %q query %q (%s): Match = %v, Postgres says %v", p.doc, p.query, q.TSQuery(), got, want)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("only %d pairs checked", checked)
	}
}
