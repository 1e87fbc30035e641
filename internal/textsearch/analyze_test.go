package textsearch

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

func TestAnalyze(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"🎉🎉 !!! ???", ""},
		{"\x00\xff・…", ""},
		{"東", "'東':1"},
		{"東京", "'京':1 '東京':1"},
		{"昨日は東京タワーに行った",
			"'た':11 'った':11 'に行':9 'は東':3 'タワ':6 'ワー':7 'ーに':8 '京タ':5 '日は':2 '昨日':1 '東京':4 '行っ':10"},
		{"The runners were running quickly to the cities",
			"'citi':8 'quick':5 'run':4 'runner':2 'the':1,7 'to':6 'were':3"},
		{"Meetup at 東京 tomorrow 🎉 #nostr", "'at':2 'meetup':1 'nostr':5 'tomorrow':4 '京':3 '東京':3"},
		{"it's a \\ back'slash", "'a':2 'backslash':3 'it':1"},
		{"ＴＯＫＹＯ ｶﾀｶﾅ", "'tokyo':1 'カタ':2 'カナ':4 'タカ':3 'ナ':4"},
		{"東京tower2024年", "'tower2024':2 '京':1 '年':3 '東京':1"},
		{"東京・大阪", "'京':1 '大阪':2 '東京':1 '阪':2"},
		{"e-mail mp3 café 123", "'123':5 'café':4 'e':1 'mail':2 'mp3':3"},
		{"don’t DON'T 'quoted' rock'n'roll", "'dont':1,2 'quot':3 'rocknrol':4"},
		{"葛\U000E0100飾 祝\uFE0F hy\u00ADphen", "'hyphen':3 '祝':2 '葛飾':1 '飾':1"},
		{"ｶﾞｲﾄﾞ", "'イド':2 'ガイ':1 'ド':2"},
		{"a\u0301b x \u0301y", "'x':2 'y':3 'áb':1"},
		{"1️⃣ #️⃣", "'1':1"},
		{"々", "'々':1"},
		{"ΣΟΦΙΑ", "'σοφια':1"},
		{strings.Repeat("x", 65), "'" + strings.Repeat("x", 64) + "':1"},
		{strings.Repeat("é", 40), "'" + strings.Repeat("é", 32) + "':1"},
	}
	for _, c := range cases {
		if got := Analyze(c.in); got != c.want {
			t.Errorf("Analyze(%q)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestAnalyzeStems(t *testing.T) {
	for word, want := range map[string]string{
		"running": "run", "runs": "run", "runner": "runner", "cities": "citi", "city": "citi",
		"quickly": "quick", "generously": "generous", "relational": "relat", "happy": "happi",
		"johns": "john", "the": "the", "having": "have", "was": "was", "news": "news",
	} {
		if got, _ := wordLexeme(word, new([]byte)); got != want {
			t.Errorf("stem(%q) = %q, want %q", word, got, want)
		}
		// Twice: the second comes from the cache.
		if got := stem(word); got != want || got != english.Stem(word, true) {
			t.Errorf("cached stem(%q) = %q, want %q", word, got, want)
		}
	}
}

// checkTSVector checks the structure of an Analyze literal and its limits.
func checkTSVector(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Analyze(%q): invalid UTF-8 %q", truncate(in), truncate(out))
	}
	if out == "" {
		return
	}
	total, prev := 0, ""
	for rest := out; rest != ""; {
		if rest[0] != '\'' {
			t.Fatalf("Analyze(%q): entry does not start with a quote: %q", truncate(in), truncate(rest))
		}
		var lex strings.Builder
		i := 1
		for ; ; i++ {
			if i >= len(rest) {
				t.Fatalf("Analyze(%q): unterminated lexeme", truncate(in))
			}
			if c := rest[i]; c == '\'' || c == '\\' {
				if i+1 < len(rest) && rest[i+1] == c {
					lex.WriteByte(c)
					i++
					continue
				}
				if c == '\\' {
					t.Fatalf("Analyze(%q): lone backslash", truncate(in))
				}
				break
			}
			lex.WriteByte(rest[i])
		}
		l := lex.String()
		if l == "" || len(l) > maxWordBytes || strings.ContainsRune(l, 0) {
			t.Fatalf("Analyze(%q): bad lexeme %q", truncate(in), l)
		}
		if l <= prev {
			t.Fatalf("Analyze(%q): lexemes out of order: %q after %q", truncate(in), l, prev)
		}
		prev = l
		total += len(l)
		rest = rest[i+1:]
		if !strings.HasPrefix(rest, ":") {
			t.Fatalf("Analyze(%q): no positions after %q", truncate(in), l)
		}
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		positions := strings.Split(rest[1:end], ",")
		if len(positions) > maxPositionsPerLex {
			t.Fatalf("Analyze(%q): %d positions for %q", truncate(in), len(positions), l)
		}
		last := 0
		for _, p := range positions {
			n, err := strconv.Atoi(p)
			if err != nil || n <= last || n > maxPosition {
				t.Fatalf("Analyze(%q): bad position %q after %d for %q", truncate(in), p, last, l)
			}
			last = n
		}
		rest = rest[end:]
		if rest != "" {
			if rest[0] != ' ' || len(rest) == 1 {
				t.Fatalf("Analyze(%q): bad separator", truncate(in))
			}
			rest = rest[1:]
		}
	}
	if total > maxTotalLexBytes {
		t.Fatalf("Analyze(%q): %d lexeme bytes", truncate(in), total)
	}
}

func TestAnalyzeInvariants(t *testing.T) {
	for _, s := range append(nastyStrings(), randomStrings(5000, 2)...) {
		out := Analyze(s)
		checkTSVector(t, s, out)
		if again := Analyze(s); again != out {
			t.Fatalf("Analyze(%q) is not deterministic", truncate(s))
		}
	}
}

func TestAnalyzeLimits(t *testing.T) {
	// Positions stop at 16383.
	out := Analyze(strings.Repeat("東", 70000))
	if want := "'東':16383 '東東':1,2,3,"; !strings.HasPrefix(out, "'東':16383 '東東':1,2,3,") {
		t.Errorf("got %q…, want prefix %q", out[:40], want)
	}
	if n := strings.Count(out, ","); n != maxPositionsPerLex-1 {
		t.Errorf("%d positions, want %d", n+1, maxPositionsPerLex)
	}
	// Content after 64 KiB is ignored.
	s := strings.Repeat(" ", maxContentBytes-1) + "ab"
	if got := Analyze(s); got != "'a':1" {
		t.Errorf("word across the 64 KiB limit: %q", got)
	}
	if got := Analyze(strings.Repeat(" ", maxContentBytes) + "hidden"); got != "" {
		t.Errorf("text after 64 KiB analysed: %q", got)
	}
	// Words: the last position written is 16383.
	var b strings.Builder
	for i := range 20000 {
		b.WriteString(strconv.Itoa(i % 100))
		b.WriteByte(' ')
	}
	out = Analyze(b.String())
	checkTSVector(t, "20000 numbers", out)
	if !strings.Contains(out, "'82':83,183,") || !strings.Contains(out, ",16283,16383 ") {
		t.Errorf("missing positions in %q", out)
	}
}

func TestCutAt(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"東京", 4, "東"}, {"東京", 3, "東"}, {"東京", 2, ""},
		{"\xff\xff\xff\xff\xff", 3, "\xff\xff\xff"},
	} {
		if got := cutAt(c.s, c.n); got != c.want {
			t.Errorf("cutAt(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
