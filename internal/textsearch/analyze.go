package textsearch

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// token is one lexeme occurrence.
type token struct {
	lex string
	pos int32
}

// sortKey orders tokens without touching their strings in the common case:
// key holds the first 8 bytes of the lexeme (big-endian, zero-padded; lexemes
// never contain NUL, so this keeps byte order), idx the token's index (tokens are
// appended in position order).
type sortKey struct {
	key uint64
	idx int32
}

// analyzer holds the reusable buffers of one Analyze call.
type analyzer struct {
	toks    []token
	keys    []sortKey
	out     []byte
	scratch []byte
}

var analyzers = sync.Pool{New: func() any { return new(analyzer) }}

// Analyze returns the tsvector literal (the input syntax of type tsvector, e.g.
// 'bar':2,5 'foo':1) of content, following the rules in the package
// documentation. Lexemes are sorted and each is written once with all its
// positions, which is also the form Postgres prints, so
// Analyze(s)::tsvector::text = Analyze(s). Content without anything indexable
// gives "", a valid empty tsvector.
//
// Analyze is deterministic and safe for any input: invalid UTF-8, NULs, emoji and
// huge strings (only the first 64 KiB are read). It never panics, and Postgres
// accepts every literal it returns.
func Analyze(content string) string {
	s := normalize(content, maxContentBytes, maxNormalizedBytes)
	a := analyzers.Get().(*analyzer)
	defer a.release()
	a.tokenize(s)
	return a.encode()
}

func (a *analyzer) release() {
	clear(a.toks) // drop references into the analysed text
	a.toks = a.toks[:0]
	if cap(a.toks) > 4096 || cap(a.keys) > 4096 || cap(a.out) > 64<<10 {
		return // keep the pool small; huge inputs are rare
	}
	analyzers.Put(a)
}

func (a *analyzer) add(lex string, pos int32) {
	a.toks = append(a.toks, token{lex: lex, pos: pos})
}

// tokenize appends the tokens of normalised text s.
func (a *analyzer) tokenize(s string) {
	var pos int32
	it := runIter{s: s}
	for pos < maxPosition {
		kind, text, ok := it.next()
		if !ok {
			return
		}
		if kind == runWord {
			pos++
			lex, _ := wordLexeme(text, &a.scratch)
			a.add(lex, pos)
			continue
		}
		ci := charIter{s: text}
		ps, pe, ok := ci.next()
		if !ok {
			continue // cannot happen: a CJK run starts with a character
		}
		bigrams := 0
		for pos < maxPosition {
			cs, ce, ok := ci.next()
			if !ok {
				break
			}
			pos++
			a.add(bigram(text, ps, pe, cs, ce), pos)
			ps, pe = cs, ce
			bigrams++
		}
		if bigrams == 0 {
			pos++ // a one-character run: the unigram has its own position
		}
		a.add(text[ps:pe], pos)
	}
}

// encode writes the tokens as a tsvector literal: sorted (byte order, as Postgres
// sorts), each lexeme once with its distinct positions in increasing order.
func (a *analyzer) encode() string {
	toks := a.toks
	if len(toks) == 0 {
		return ""
	}
	keys := a.keys[:0]
	for i, t := range toks {
		keys = append(keys, sortKey{key: prefixKey(t.lex), idx: int32(i)})
	}
	slices.SortFunc(keys, func(x, y sortKey) int {
		if x.key != y.key {
			return cmp.Compare(x.key, y.key)
		}
		if x.key&0xff != 0 { // both lexemes are longer than 7 bytes
			if c := strings.Compare(toks[x.idx].lex, toks[y.idx].lex); c != 0 {
				return c
			}
		}
		return cmp.Compare(x.idx, y.idx)
	})
	a.keys = keys
	out := a.out[:0]
	total := 0
	for i := 0; i < len(keys); {
		lex := toks[keys[i].idx].lex
		j := i + 1
		for j < len(keys) && keys[j].key == keys[i].key && toks[keys[j].idx].lex == lex {
			j++
		}
		group := keys[i:j]
		i = j
		if len(lex) > maxLexemeBytes || total+len(lex) > maxTotalLexBytes {
			continue // cannot happen with the limits above; never hand Postgres an error
		}
		total += len(lex)
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = appendQuoted(out, lex)
		out = append(out, ':')
		n := 0
		last := int32(-1)
		for _, k := range group {
			pos := toks[k.idx].pos
			if pos == last {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendInt(out, int64(pos), 10)
			last = pos
			if n++; n == maxPositionsPerLex {
				break
			}
		}
	}
	a.out = out
	return string(out)
}

// prefixKey returns the first 8 bytes of lex as a big-endian number, zero-padded.
func prefixKey(lex string) uint64 {
	if len(lex) >= 8 {
		return binary.BigEndian.Uint64([]byte(lex[:8]))
	}
	var b [8]byte
	copy(b[:], lex)
	return binary.BigEndian.Uint64(b[:])
}

// appendQuoted appends lex in single quotes, doubling ' and \ (valid in both
// tsvector and tsquery input).
func appendQuoted(dst []byte, lex string) []byte {
	dst = append(dst, '\'')
	for i := 0; i < len(lex); i++ {
		switch c := lex[i]; c {
		case '\'', '\\':
			dst = append(dst, c, c)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\'')
}
