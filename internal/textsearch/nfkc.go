package textsearch

import (
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Most text is already in NFKC, and norm.NFKC.String checks that with a trie
// lookup per rune. nfkc first skips runs of runes known to be stable — in NFKC on
// their own and with a normalisation boundary before them, so that no
// normalisation can reach across them — and hands only the rest to norm.

// stableTableEnd bounds the runes whose stability is looked up in a table computed
// from norm on first use; above it only the ranges in nfkcStable count.
const stableTableEnd = 0x3100

var stableTable = sync.OnceValue(func() *[stableTableEnd / 64]uint64 {
	var t [stableTableEnd / 64]uint64
	var buf [utf8.UTFMax]byte
	for r := rune(0); r < stableTableEnd; r++ {
		if stableByNorm(r, buf[:0]) {
			t[r/64] |= 1 << (r % 64)
		}
	}
	return &t
})

// stableByNorm reports whether norm considers r stable.
func stableByNorm(r rune, buf []byte) bool {
	if !utf8.ValidRune(r) {
		return false
	}
	b := utf8.AppendRune(buf, r)
	return norm.NFKC.Properties(b).BoundaryBefore() && norm.NFKC.IsNormal(b)
}

// nfkcStable reports whether r is known to be stable (see above); false means
// "maybe not". tab is stableTable().
func nfkcStable(r rune, tab *[stableTableEnd / 64]uint64) bool {
	switch {
	case r < utf8.RuneSelf:
		return true
	case r < stableTableEnd:
		return tab[r/64]&(1<<(r%64)) != 0
	case r >= 0x4E00 && r <= 0x9FFF, // CJK Unified Ideographs
		r >= 0x3400 && r <= 0x4DBF,   // CJK Extension A
		r >= 0xAC00 && r <= 0xD7A3,   // Hangul syllables
		r >= 0x1F300 && r <= 0x1FAFF: // emoji and pictographs
		return true
	}
	return false
}

// stableSpan returns the end of the run of stable runes of s starting at i.
func stableSpan(s string, i int, tab *[stableTableEnd / 64]uint64) int {
	for i < len(s) {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !nfkcStable(r, tab) {
			return i
		}
		i += size
	}
	return i
}

// nfkcPiece is the size above which a run of runes that need normalising is
// handed to norm in pieces, so that normalisation can stop at an output limit.
const nfkcPiece = 1 << 10

// nfkcIter splits valid UTF-8 text into consecutive pieces whose NFKC forms,
// concatenated, are the NFKC form of the text: stable pieces, already in NFKC, and
// pieces to normalise. Pieces to normalise start at a rune with a normalisation
// boundary before it and end before one (or at the end), so each can be
// normalised on its own.
type nfkcIter struct {
	s        string
	i        int
	chunkEnd int // end of the run of unstable runes being handed out
	tab      *[stableTableEnd / 64]uint64
}

func newNFKCIter(s string) nfkcIter {
	return nfkcIter{s: s, tab: stableTable()}
}

// next returns the next piece s[start:end] and whether it is stable.
func (it *nfkcIter) next() (start, end int, stable, ok bool) {
	s, i := it.s, it.i
	if i >= len(s) {
		return 0, 0, false, false
	}
	if i < it.chunkEnd {
		return it.chunk(i)
	}
	e := stableSpan(s, i, it.tab)
	if e == len(s) {
		it.i = e
		return i, e, true, true
	}
	// s[e] starts an unstable rune. The rune before it may combine with it, so
	// the piece to normalise starts there; it ends at the next stable rune,
	// which has a boundary before it.
	j := e
	if e > i {
		_, size := utf8.DecodeLastRuneInString(s[i:e])
		j = e - size
	}
	k := e
	for k < len(s) {
		r, size := utf8.DecodeRuneInString(s[k:])
		if nfkcStable(r, it.tab) {
			break
		}
		k += size
	}
	it.chunkEnd = k
	if j > i {
		it.i = j
		return i, j, true, true
	}
	return it.chunk(j)
}

// chunk hands out the next piece of the unstable run s[j:it.chunkEnd]: all of
// it, or a prefix of at least nfkcPiece bytes ending before a boundary.
func (it *nfkcIter) chunk(j int) (start, end int, stable, ok bool) {
	s, k := it.s, it.chunkEnd
	e := k
	if k-j > nfkcPiece {
		for m := j + nfkcPiece; m < k; {
			_, size := utf8.DecodeRuneInString(s[m:]) // 1 inside a rune
			if utf8.RuneStart(s[m]) && norm.NFKC.PropertiesString(s[m:]).BoundaryBefore() {
				e = m
				break
			}
			m += size
		}
	}
	it.i = e
	return j, e, false, true
}

// nfkc returns the NFKC form of valid UTF-8 s, or, when that is longer than
// limit bytes, a prefix of it at least limit bytes long.
func nfkc(s string, limit int) string {
	it := newNFKCIter(s)
	start, end, stable, ok := it.next()
	if !ok || (stable && end == len(s)) {
		return s
	}
	buf := make([]byte, 0, len(s)+len(s)/4)
	// Pieces start at boundaries, so consecutive pieces can be normalised
	// together; short stable pieces join the pending range too, since each call
	// into norm costs about as much as normalising a hundred bytes.
	pending := -1 // start of the range not yet normalised
	for ok && len(buf) < limit {
		if stable && end-start >= 64 {
			if pending >= 0 {
				buf = norm.NFKC.AppendString(buf, s[pending:start])
				pending = -1
			}
			buf = append(buf, s[start:end]...)
		} else {
			if pending < 0 {
				pending = start
			}
			if end-pending >= nfkcPiece {
				buf = norm.NFKC.AppendString(buf, s[pending:end])
				pending = -1
			}
		}
		last := end
		start, end, stable, ok = it.next()
		if pending >= 0 && (!ok || len(buf) >= limit) {
			buf = norm.NFKC.AppendString(buf, s[pending:last])
		}
	}
	return string(buf)
}
