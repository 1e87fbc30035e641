package textsearch

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoTerms is returned by ParseQuery when the query has nothing searchable: it is
// empty, holds only punctuation, symbols or emoji, or only negated terms.
var ErrNoTerms = errors.New("textsearch: query has no searchable terms")

// Query is a parsed search query. The zero Query matches nothing useful; its
// TSQuery is "" (an empty tsquery).
type Query struct {
	tsquery string
	str     string
	needles []string // lexemes and words of positive terms, for Snippet
	terms   []qterm  // positive terms first, for Match
}

// TSQuery returns the tsquery literal, to be passed as $n::tsquery. Postgres
// always accepts it.
func (q Query) TSQuery() string { return q.tsquery }

// String returns the normalised query (NFKC, lower case, one space between
// terms, phrases in double quotes, negated terms with a leading -), for logs.
func (q Query) String() string { return q.str }

// qtok is one query operand.
type qtok struct {
	lex    string
	prefix bool
}

// qterm is one term of a query: a word group or a quoted phrase.
type qterm struct {
	neg    bool
	quoted bool
	text   string // normalised, lower case, for String
	toks   []qtok
	words  []string // cleaned words before stemming, for Snippet
	tsq    string
}

// ParseQuery turns a user's search string into a Query, following the query
// syntax in the package documentation. It returns ErrNoTerms when nothing in q is
// searchable. It never panics.
func ParseQuery(q string) (Query, error) {
	s := normalize(q, maxQueryBytes, maxQueryBytes*4)
	var terms []qterm
	var scratch []byte
	seen := map[string]bool{}
	add := func(text string, neg, quoted bool) {
		t := analyzeTerm(text, neg, quoted, &scratch)
		key := t.tsq
		if neg {
			key = "!" + key
		}
		if len(t.toks) == 0 || seen[key] {
			return
		}
		seen[key] = true
		terms = append(terms, t)
	}

	afterSpace := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += size
			afterSpace = true
			continue
		}
		neg := false
		if r == '-' && afterSpace && i+1 < len(s) {
			if r2, size2 := utf8.DecodeRuneInString(s[i+1:]); !unicode.IsSpace(r2) {
				neg = true
				i++
				r, size = r2, size2
			}
		}
		afterSpace = false
		if isQuote(r) {
			start := i + size
			end := indexQuote(s[start:])
			if end < 0 {
				add(s[start:], neg, true)
				break
			}
			end += start
			add(s[start:end], neg, true)
			_, qsize := utf8.DecodeRuneInString(s[end:])
			i = end + qsize
			continue
		}
		start := i
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) || isQuote(r) {
				break
			}
			i += size
		}
		add(s[start:i], neg, false)
	}

	// Positive terms first, then negated ones.
	slices.SortStableFunc(terms, func(a, b qterm) int {
		switch {
		case a.neg == b.neg:
			return 0
		case b.neg:
			return -1
		default:
			return 1
		}
	})
	if len(terms) == 0 || terms[0].neg {
		return Query{}, ErrNoTerms
	}

	var tsq, str strings.Builder
	var needles []string
	for i, t := range terms {
		if i > 0 {
			tsq.WriteString(" & ")
			str.WriteByte(' ')
		}
		if len(t.toks) > 1 && (t.neg || len(terms) > 1) {
			if t.neg {
				tsq.WriteByte('!')
			}
			tsq.WriteString("( ")
			tsq.WriteString(t.tsq)
			tsq.WriteString(" )")
		} else {
			if t.neg {
				tsq.WriteByte('!')
			}
			tsq.WriteString(t.tsq)
		}
		if t.neg {
			str.WriteByte('-')
		}
		if t.quoted {
			str.WriteByte('"')
			str.WriteString(t.text)
			str.WriteByte('"')
		} else {
			str.WriteString(t.text)
		}
		if !t.neg {
			for _, k := range t.toks {
				needles = append(needles, k.lex)
			}
			needles = append(needles, t.words...)
		}
	}
	slices.Sort(needles)
	needles = slices.Compact(needles)
	return Query{tsquery: tsq.String(), str: str.String(), needles: needles, terms: terms}, nil
}

func isQuote(r rune) bool { return r == '"' || r == '“' || r == '”' }

// indexQuote returns the byte index of the first quote in s, or -1.
func indexQuote(s string) int {
	return strings.IndexFunc(s, isQuote)
}

// analyzeTerm analyses the normalised text of one term.
func analyzeTerm(text string, neg, quoted bool, scratch *[]byte) qterm {
	t := qterm{neg: neg, quoted: quoted, text: strings.Join(strings.Fields(strings.ToLower(text)), " ")}
	lastWord := -1
	it := runIter{s: text}
	for {
		kind, run, ok := it.next()
		if !ok {
			break
		}
		if kind == runWord {
			lex, word := wordLexeme(run, scratch)
			lastWord = len(t.toks)
			t.toks = append(t.toks, qtok{lex: lex})
			if word != lex {
				t.words = append(t.words, word)
			}
			continue
		}
		ci := charIter{s: run}
		ps, pe, ok := ci.next()
		if !ok {
			continue
		}
		bigrams := 0
		for {
			cs, ce, ok := ci.next()
			if !ok {
				break
			}
			t.toks = append(t.toks, qtok{lex: bigram(run, ps, pe, cs, ce)})
			ps, pe = cs, ce
			bigrams++
		}
		if bigrams == 0 {
			t.toks = append(t.toks, qtok{lex: run[ps:pe], prefix: true})
		}
	}
	// Words match by their stem, which covers inflections (running, runs -> run);
	// a trailing '*' asks for a prefix match of the last word (run* -> runner).
	// Prefix matches are opt-in: on a GIN index they cost several times more.
	if !quoted && lastWord >= 0 && strings.HasSuffix(text, "*") && utf8.RuneCountInString(t.toks[lastWord].lex) >= 2 {
		t.toks[lastWord].prefix = true
	}
	var b []byte
	for i, k := range t.toks {
		if i > 0 {
			b = append(b, " <-> "...)
		}
		b = appendQuoted(b, k.lex)
		if k.prefix {
			b = append(b, ":*"...)
		}
	}
	t.tsq = string(b)
	return t
}
