package textsearch

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseQuery(t *testing.T) {
	cases := []struct{ in, tsq, str string }{
		{"東京", "'東京'", "東京"},
		{"東", "'東':*", "東"},
		{"ー", "'ー':*", "ー"},
		{"東京タワー", "'東京' <-> '京タ' <-> 'タワ' <-> 'ワー'", "東京タワー"},
		{"run", "'run'", "run"},
		{"Running", "'run'", "running"},
		{"city", "'citi'", "city"},
		{"a", "'a'", "a"},
		{"7", "'7'", "7"},
		{"42", "'42'", "42"},
		{"\"running quickly\"", "'run' <-> 'quick'", "\"running quickly\""},
		{"“running quickly”", "'run' <-> 'quick'", "\"running quickly\""},
		{"\"東 京\"", "'東':* <-> '京':*", "\"東 京\""},
		{"\"unterminated phrase", "'untermin' <-> 'phrase'", "\"unterminated phrase\""},
		{"e-mail", "'e' <-> 'mail'", "e-mail"},
		{"東京tower", "'東京' <-> 'tower'", "東京tower"},
		{"tower東京", "'tower' <-> '東京'", "tower東京"},
		{"#nostr 🎉", "'nostr'", "#nostr"},
		{"  東京   tomorrow  ", "'東京' & 'tomorrow'", "東京 tomorrow"},
		{"東京\u3000tomorrow", "'東京' & 'tomorrow'", "東京 tomorrow"},
		{"foo foo FOO", "'foo'", "foo"},
		{"foo\"bar baz\"qux", "'foo' & ( 'bar' <-> 'baz' ) & 'qux'", "foo \"bar baz\" qux"},
		{"-foo bar", "'bar' & !'foo'", "bar -foo"},
		{"bar -\"new york\" -東京タワー", "'bar' & !( 'new' <-> 'york' ) & !( '東京' <-> '京タ' <-> 'タワ' <-> 'ワー' )", "bar -\"new york\" -東京タワー"},
		{"foo -foo", "'foo' & !'foo'", "foo -foo"},
		{"a-b", "'a' <-> 'b'", "a-b"},
		{"- foo", "'foo'", "foo"},
		{"foo -", "'foo'", "foo"},
		{"it's", "'it'", "it's"},
		{"ＴＯＫＹＯ", "'tokyo'", "tokyo"},
		{"ｶﾀｶﾅ", "'カタ' <-> 'タカ' <-> 'カナ'", "カタカナ"},
		{"x\\y", "'x' <-> 'y'", "x\\y"},
		{"don't", "'dont'", "don't"},
		{"run*", "'run':*", "run*"},
		{"東京 runn*", "'東京' & 'runn':*", "東京 runn*"},
		{"\"run*\"", "'run'", "\"run*\""},
		{"a*", "'a'", "a*"},
	}
	for _, c := range cases {
		q, err := ParseQuery(c.in)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.in, err)
			continue
		}
		if q.TSQuery() != c.tsq || q.String() != c.str {
			t.Errorf("ParseQuery(%q)\n got %s | %s\nwant %s | %s", c.in, q.TSQuery(), q.String(), c.tsq, c.str)
		}
		if err := checkTSQuery(q.TSQuery()); err != nil {
			t.Errorf("ParseQuery(%q) = %s: %v", c.in, q.TSQuery(), err)
		}
	}
	for _, s := range noTerms {
		if q, err := ParseQuery(s); !errors.Is(err, ErrNoTerms) {
			t.Errorf("ParseQuery(%q) = %q, %v; want ErrNoTerms", s, q.TSQuery(), err)
		}
	}
}

func TestParseQueryInvariants(t *testing.T) {
	for _, s := range append(nastyStrings(), randomStrings(5000, 3)...) {
		checkParseQuery(t, s)
	}
	// The query is cut to 1 KiB.
	q, err := ParseQuery(strings.Repeat("ab ", 1000) + "zz")
	if err != nil || strings.Contains(q.TSQuery(), "zz") {
		t.Errorf("long query: %v, %q", err, q.TSQuery())
	}
}

func checkParseQuery(t *testing.T, s string) {
	t.Helper()
	q, err := ParseQuery(s)
	if err != nil {
		if !errors.Is(err, ErrNoTerms) {
			t.Fatalf("ParseQuery(%q): unexpected error %v", s, err)
		}
		if q.TSQuery() != "" || q.String() != "" {
			t.Fatalf("ParseQuery(%q): error with a query %q", s, q.TSQuery())
		}
		return
	}
	if !utf8.ValidString(q.TSQuery()) || !utf8.ValidString(q.String()) {
		t.Fatalf("ParseQuery(%q): invalid UTF-8 %q %q", s, q.TSQuery(), q.String())
	}
	if err := checkTSQuery(q.TSQuery()); err != nil {
		t.Fatalf("ParseQuery(%q) = %q: %v", s, q.TSQuery(), err)
	}
	if strings.HasPrefix(q.TSQuery(), "!") {
		t.Fatalf("ParseQuery(%q) = %q: no positive term first", s, q.TSQuery())
	}
	if q.String() == "" {
		t.Fatalf("ParseQuery(%q): empty String()", s)
	}
	if again, _ := ParseQuery(s); again.TSQuery() != q.TSQuery() || again.String() != q.String() {
		t.Fatalf("ParseQuery(%q) is not deterministic", s)
	}
}

func TestCheckTSQuery(t *testing.T) {
	for _, bad := range []string{"", "'a", "'a' &", "( 'a'", "'a' <-> ", "''", "'a\\'", "'a' | 'b'", "!"} {
		if checkTSQuery(bad) == nil {
			t.Errorf("checkTSQuery(%q) accepted", bad)
		}
	}
	for _, good := range []string{"'a'", "'a':*", "'a''b'", "'a\\\\b'", "'a' & !( 'b' <-> 'c':* )"} {
		if err := checkTSQuery(good); err != nil {
			t.Errorf("checkTSQuery(%q): %v", good, err)
		}
	}
}
