package textsearch

import (
	"testing"
)

func addSeeds(f *testing.F) {
	for _, s := range append(nastyStrings(), randomStrings(40, 5)...) {
		if len(s) <= 4096 { // big inputs make the fuzzer crawl
			f.Add(s)
		}
	}
	for _, c := range acceptance {
		f.Add(c.doc)
		f.Add(c.query)
	}
}

// FuzzAnalyze: Analyze never panics, is deterministic and returns a well-formed
// literal within the Postgres limits (Postgres itself checks the same corpus in
// TestPostgresAcceptsEverything).
func FuzzAnalyze(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		out := Analyze(s)
		checkTSVector(t, s, out)
		if Analyze(s) != out {
			t.Fatalf("Analyze(%q) is not deterministic", s)
		}
	})
}

// FuzzParseQuery: ParseQuery never panics; a result is valid UTF-8 and a
// well-formed tsquery (balanced quotes and parentheses, escaped lexemes, a
// positive term first) or ErrNoTerms. Snippet with it stays within its limits.
func FuzzParseQuery(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkParseQuery(t, s)
		q, err := ParseQuery(s)
		if err == nil {
			for _, max := range []int{1, 3, 40} {
				checkSnippet(t, s, q, max)
			}
		}
	})
}
