package textsearch

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// pieces are fragments random test strings are made of: every class of
// character the analyser treats specially, tsquery syntax, and broken UTF-8.
var pieces = []string{
	"a", "Z", "run", "running", "cities", "don't", "’", "'", "''", "\\", "\\\\", "\"", "“", "”",
	"-", " ", "  ", "\t", "\n", "\u3000", "\x00", "\xff", "\xc3", "\xe6\x9d", "東", "京", "タワー",
	"ー", "・", "々", "ゝ", "ｶ", "ﾞ", "ﾟ", "\u3099", "\u0301", "\u0308", "\uFE0F", "\U000E0100",
	"\u00AD", "\u200B", "\u200D", "\uFEFF", "\u20E3", "🎉", "👨‍👩‍👧", "#", "é", "ß", "İ", "Σ", "ς",
	"ﬃ", "①", "㍿", "ﷺ", "ﷻ", "ＴＯ", "１２", "1", "2024", "서울", "ㄱ", "ᄀ", "\u1161", "(", ")",
	":", "*", ":*", "&", "|", "!", "<->", "<2>", "A:B", "\U0001F1EF\U0001F1F5", "\uE000", "\uFFFF",
	"\U00020BB7", "Ⅻ", "½", "²", "ǅ", "ﾀﾜｰ", "\u0600", "𝐀", "ﬀ", "«", "»", "e-mail", "ö",
}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(24)
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomStrings(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, n)
	for i := range out {
		out[i] = randomString(r)
	}
	return out
}

// nastyStrings are hand-picked edge cases, including the size limits.
func nastyStrings() []string {
	var unique strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&unique, "w%063d ", i) // 64-byte distinct words
	}
	var uniqueLong strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&uniqueLong, "%0100d ", i) // truncated to 64 bytes
	}
	var cjk strings.Builder
	for i := range 30000 {
		cjk.WriteRune(rune(0x4E00 + i%20000))
	}
	return []string{
		"", " ", "\x00", "\xff", "'", "''", "\\", "'\\'", "it's a \\ back'slash", "\"", "“”",
		"🎉🎉 !!! ???", "東", "ー", "ーー", "・", "東・京", "a", "A", "I", "'s", "s'", "'a'",
		"e-mail", "東京tower", "tower東京", "run\"ning quick", "\"unterminated 東京 run",
		"-", "--foo bar", "-\"x\" y", "foo -bar -\"baz qux\"", "a b c d e f g",
		"東\u3099\u3099\u3099京", "東" + strings.Repeat("\u0301", 5000) + "京",
		"a" + strings.Repeat("\u0301", 5000), strings.Repeat("\u0301", 100),
		strings.Repeat("a", 5000), strings.Repeat("東", 70000), strings.Repeat("ab ", 40000),
		strings.Repeat("ha ", 20000), strings.Repeat("\U0001F389", 20000),
		strings.Repeat("ﷺ", 30000), strings.Repeat("㍿", 30000), strings.Repeat("ﬃ ", 30000),
		strings.Repeat("東京 ", 20000), strings.Repeat("\xff", 100000),
		unique.String(), uniqueLong.String(), cjk.String(),
		strings.Repeat("x", 64) + "y", strings.Repeat("é", 40), strings.Repeat("'", 100),
		strings.Repeat("a'", 1000), strings.Repeat("\\", 1000),
		"ΟΔΟΣ οδος", "İstanbul", "straße STRASSE", "ǅemal",
	}
}

// checkTSQuery reports whether s is a well-formed tsquery in the subset of the
// syntax ParseQuery produces:
//
//	and    = unary { " & " unary }
//	unary  = [ "!" ] ( phrase | "( " phrase " )" )
//	phrase = lexeme { " <-> " lexeme }
//	lexeme = "'" { char | "''" | "\\\\" } "'" [ ":*" ]
func checkTSQuery(s string) error {
	p := &tsqParser{s: s}
	if err := p.and(); err != nil {
		return err
	}
	if p.i != len(s) {
		return fmt.Errorf("trailing input at %d: %q", p.i, s[p.i:])
	}
	return nil
}

type tsqParser struct {
	s string
	i int
}

func (p *tsqParser) eat(tok string) bool {
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *tsqParser) and() error {
	for {
		if err := p.unary(); err != nil {
			return err
		}
		if !p.eat(" & ") {
			return nil
		}
	}
}

func (p *tsqParser) unary() error {
	p.eat("!")
	if p.eat("( ") {
		if err := p.phrase(); err != nil {
			return err
		}
		if !p.eat(" )") {
			return fmt.Errorf("unclosed parenthesis at %d", p.i)
		}
		return nil
	}
	return p.phrase()
}

func (p *tsqParser) phrase() error {
	for {
		if err := p.lexeme(); err != nil {
			return err
		}
		if !p.eat(" <-> ") {
			return nil
		}
	}
}

func (p *tsqParser) lexeme() error {
	if !p.eat("'") {
		return fmt.Errorf("expected ' at %d", p.i)
	}
	n := 0
	for {
		if p.i >= len(p.s) {
			return fmt.Errorf("unterminated lexeme")
		}
		c := p.s[p.i]
		switch {
		case c == '\'' && p.i+1 < len(p.s) && p.s[p.i+1] == '\'', c == '\\' && p.i+1 < len(p.s) && p.s[p.i+1] == '\\':
			p.i += 2
		case c == '\\':
			return fmt.Errorf("lone backslash at %d", p.i)
		case c == '\'':
			p.i++
			if n == 0 {
				return fmt.Errorf("empty lexeme at %d", p.i)
			}
			p.eat(":*")
			return nil
		default:
			p.i++
		}
		n++
	}
}
