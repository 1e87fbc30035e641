package textsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	maxContentBytes    = 64 << 10  // content analysed
	maxNormalizedBytes = 128 << 10 // normalised text tokenised
	maxQueryBytes      = 1 << 10   // query analysed
	maxWordBytes       = 64        // longer words are truncated
	maxCharBytes       = 16        // a CJK character: base rune plus marks
	maxPosition        = 16383     // Postgres MAXENTRYPOS-1
	maxPositionsPerLex = 256       // Postgres MAXNUMPOS
	maxLexemeBytes     = 2046      // Postgres MAXSTRLEN
	maxTotalLexBytes   = 1<<20 - 1 // Postgres MAXSTRPOS
)

// class is the role a rune plays in segmentation.
type class uint8

const (
	clsSep    class = iota // separates runs, not indexed
	clsWord                // letter or digit of a word run
	clsCJK                 // character of a CJK run
	clsMark                // combining mark: continues the current run
	clsIgnore              // format character: skipped, does not separate
	clsApos                // apostrophe: joins two word parts, else separates
)

var asciiClass = func() (t [128]class) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clsWord
		t[c-'a'+'A'] = clsWord
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clsWord
	}
	t['\''] = clsApos
	return t
}()

// classify returns the class of r, a rune of NFKC-normalised text.
func classify(r rune) class {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	// Fast paths for the common CJK blocks.
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs
		r >= 0x3041 && r <= 0x3096, // Hiragana letters
		r >= 0x309D && r <= 0x309F, // ゝゞゟ
		r >= 0x30A1 && r <= 0x30FA, // Katakana letters
		r >= 0x30FC && r <= 0x30FF, // ー ヽヾヿ
		r >= 0xAC00 && r <= 0xD7A3, // Hangul syllables
		r >= 0x3400 && r <= 0x4DBF, // CJK Extension A
		r >= 0x3031 && r <= 0x3035: // 〱〲〳〴〵
		return clsCJK
	case r == 0x2019: // ’
		return clsApos
	case r == 0x200B: // ZERO WIDTH SPACE
		return clsSep
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r == 0x034F: // variation selectors, CGJ
		return clsIgnore
	}
	if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
		return clsCJK
	}
	if unicode.IsLetter(r) || unicode.IsNumber(r) {
		return clsWord
	}
	if unicode.In(r, unicode.Mn, unicode.Mc) {
		return clsMark
	}
	if unicode.Is(unicode.Cf, r) {
		return clsIgnore
	}
	return clsSep
}

// cutAt returns s cut to at most n bytes, at a rune start.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	if n < utf8.UTFMax {
		return ""
	}
	return s[:n] // invalid UTF-8: any cut will do
}

// normalize applies the input limit, makes s valid UTF-8 (invalid bytes become
// spaces), NFKC-normalises it and cuts the result to outLimit bytes. It does not
// lower-case.
func normalize(s string, limit, outLimit int) string {
	s = cutAt(s, limit)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, " ")
	}
	return cutAt(nfkc(s, outLimit), outLimit)
}

type runKind uint8

const (
	runWord runKind = iota + 1
	runCJK
)

// runIter splits normalised text into word and CJK runs.
type runIter struct {
	s string
	i int
}

// next returns the next run. The run's text may contain ignorable characters, and
// for word runs apostrophes and upper case; see cleanWord.
func (it *runIter) next() (kind runKind, text string, ok bool) {
	s := it.s
	i := it.i
	var c class
	var size int
	// Skip separators; a run starts with a word or CJK character.
	for i < len(s) {
		var r rune
		r, size = runeAt(s, i)
		c = classify(r)
		if c == clsWord || c == clsCJK {
			break
		}
		i += size
	}
	if i >= len(s) {
		it.i = i
		return 0, "", false
	}
	start := i
	want := clsWord
	kind = runWord
	if c == clsCJK {
		want, kind = clsCJK, runCJK
	}
	i += size
	for i < len(s) {
		var r rune
		r, size = runeAt(s, i)
		c = classify(r)
		if c == want || c == clsMark || c == clsIgnore {
			i += size
			continue
		}
		if c == clsApos && want == clsWord && i+size < len(s) {
			r2, _ := utf8.DecodeRuneInString(s[i+size:])
			if classify(r2) == clsWord {
				i += size
				continue
			}
		}
		break
	}
	it.i = i
	return kind, s[start:i], true
}

// charIter yields the characters of a CJK run: a base rune plus the combining
// marks that follow it (at most maxCharBytes), skipping ignorable characters.
type charIter struct {
	s string
	i int
}

func (c *charIter) next() (start, end int, ok bool) {
	s := c.s
	i := c.i
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		cl := classify(r)
		if cl != clsIgnore && cl != clsMark {
			break
		}
		i += size // ignorables, and marks beyond maxCharBytes
	}
	if i >= len(s) {
		c.i = i
		return 0, 0, false
	}
	start = i
	_, size := utf8.DecodeRuneInString(s[i:])
	i += size
	end = i
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if classify(r) != clsMark || i+size-start > maxCharBytes {
			break
		}
		i += size
		end = i
	}
	c.i = i
	return start, end, true
}

// bigram returns the lexeme of two consecutive characters of run text.
func bigram(text string, ps, pe, cs, ce int) string {
	if pe == cs {
		return text[ps:ce]
	}
	return text[ps:pe] + text[cs:ce]
}

// cleanWord lower-cases the text of a word run and drops apostrophes and
// ignorable characters. It returns text itself when nothing changes.
func cleanWord(text string, scratch *[]byte) string {
	ascii := true
	dirty := false
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b >= utf8.RuneSelf {
			ascii = false
			break
		}
		if b == '\'' || (b >= 'A' && b <= 'Z') {
			dirty = true
		}
	}
	if ascii && !dirty {
		return text
	}
	if !ascii {
		for _, r := range text {
			if c := classify(r); c == clsApos || c == clsIgnore || unicode.ToLower(r) != r {
				dirty = true
				break
			}
		}
		if !dirty {
			return text
		}
	}
	buf := (*scratch)[:0]
	for _, r := range text {
		switch classify(r) {
		case clsApos, clsIgnore:
			continue
		}
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
	}
	*scratch = buf
	return string(buf)
}

// wordLexeme returns the lexeme of a word run, and the cleaned word before
// stemming.
func wordLexeme(text string, scratch *[]byte) (lex, word string) {
	word = cleanWord(text, scratch)
	if len(word) > maxWordBytes {
		word = cutAt(word, maxWordBytes)
		return word, word
	}
	if len(word) < 3 {
		return word, word
	}
	for i := 0; i < len(word); i++ {
		if b := word[i]; b < 'a' || b > 'z' {
			return word, word
		}
	}
	return stem(word), word
}

// runeAt decodes the rune that starts at s[i], with its size (ASCII without
// a call).
func runeAt(s string, i int) (rune, int) {
	if s[i] < utf8.RuneSelf {
		return rune(s[i]), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}
