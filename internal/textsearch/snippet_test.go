package textsearch

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 20)
	cases := []struct {
		content, query string
		max            int
		want           string
	}{
		{"昨日は東京タワーに行った", "タワー", 100, "昨日は東京タワーに行った"},
		{"昨日は東京タワーに行った", "タワー", 7, "…東京タワー…"},
		{"The runners were running quickly to the cities", "city", 20, "…to the cities"},
		{"The runners were running quickly to the cities", "RUN", 12, "The runners…"},
		{long + "needle in the haystack " + long, "needle", 30, "…sit amet needle in the…"},
		{long + "ＮＥＥＤＬＥ in the haystack " + long, "needle", 30, "…sit amet ＮＥＥＤＬＥ in the…"},
		{long + "ｶﾀｶﾅ here " + long, "カタカナ", 20, "…amet ｶﾀｶﾅ here…"},
		{"no match here at all, just text", "zebra", 10, "no match…"},
		{"no match", "zebra", 10, "no match"},
		{"  lots\n\n\tof   white space  ", "of", 50, "lots of white space"},
		{"abc", "abc", 1, "…"},
		{"a", "abc", 1, "a"},
		{"abcdef", "abc", 1, "…"},
		{"abcdef", "def", 1, "…"},
		{"abcdef", "def", 2, "…"},
		{"abcdef", "def", 3, "…d…"},
		{"abcdef", "def", 4, "…def"},
		{"abc", "abc", 0, ""},
		{"brunch, then running", "run", 12, "…running"},
		{"brunch", "run", 12, "brunch"},
		{"東京で友達とランチ", "ランチ", 6, "…達とランチ"},
		{"bad \xff\xfe bytes and a needle", "needle", 100, "bad \uFFFD bytes and a needle"},
	}
	for _, c := range cases {
		q, _ := ParseQuery(c.query)
		got := Snippet(c.content, q, c.max)
		if got != c.want {
			t.Errorf("Snippet(%q, %q, %d) = %q, want %q", truncate(c.content), c.query, c.max, got, c.want)
		}
	}
	if got := Snippet("zero query", Query{}, 4); got != "zer…" {
		t.Errorf("zero Query: %q", got)
	}
}

func TestSnippetInvariants(t *testing.T) {
	queries := []Query{{}}
	for _, s := range []string{"東", "run", "a", "東京タワー", "\"x y\"", "é"} {
		q, err := ParseQuery(s)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q)
	}
	for i, s := range append(nastyStrings(), randomStrings(3000, 4)...) {
		q := queries[i%len(queries)]
		for _, max := range []int{-1, 0, 1, 2, 3, 5, 40, 200} {
			checkSnippet(t, s, q, max)
		}
	}
}

func checkSnippet(t *testing.T, content string, q Query, max int) {
	t.Helper()
	got := Snippet(content, q, max)
	if !utf8.ValidString(got) {
		t.Fatalf("Snippet(%q, %q, %d) = %q: invalid UTF-8", truncate(content), q, max, got)
	}
	if n := utf8.RuneCountInString(got); n > max && !(max < 0 && n == 0) {
		t.Fatalf("Snippet(%q, %q, %d) = %q: %d runes", truncate(content), q, max, got, n)
	}
	if strings.TrimSpace(content) != "" && max > 0 && got == "" && strings.IndexFunc(content, func(r rune) bool { return !isBlank(r) }) >= 0 {
		t.Fatalf("Snippet(%q, %q, %d) is empty", truncate(content), q, max)
	}
}
