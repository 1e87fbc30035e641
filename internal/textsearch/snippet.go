package textsearch

import (
	"bytes"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

const ellipsis = "…"

// Snippet returns a plain-text excerpt of content of at most maxRunes runes
// (counting the "…" marks) around the first place where a word, stem or CJK lexeme
// of q's positive terms occurs, or from the beginning of content when none does
// (or q is the zero Query). Matching compares NFKC-normalised, lower-cased text,
// prefers occurrences of words and stems at the start of a word ("run" shows
// "running" rather than "brunch") and looks at the first 64 KiB of content only.
// Runs of white space and control characters become one space, the excerpt is
// trimmed, and "…" marks each end where content was cut. Up to a third of the
// excerpt precedes the match (more when the match is near the end), and the
// excerpt avoids starting or ending inside a word when white space is near.
//
// Snippet never panics and always returns valid UTF-8 (invalid bytes of content
// become U+FFFD, one per run of invalid bytes). It returns "" if maxRunes < 1.
func Snippet(content string, q Query, maxRunes int) string {
	if maxRunes < 1 {
		return ""
	}
	s := content
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	m := 0
	if len(q.needles) > 0 {
		if i := findFirst(cutAt(s, maxContentBytes), q.needles); i > 0 {
			m = i
		}
	}
	return excerpt(s, m, maxRunes)
}

// findFirst returns the byte offset in s (valid UTF-8) of the earliest place at
// which one of needles occurs after NFKC normalisation and lower-casing, or -1.
// The offset is exact in text that normalisation leaves alone, else the start of
// the normalised piece holding the match.
func findFirst(s string, needles []string) int {
	// seg maps buf[norm:] back to s[orig:]; linear segments map byte for byte.
	type seg struct {
		norm, orig int
		linear     bool
	}
	var segs []seg
	buf := make([]byte, 0, len(s)+16)
	var ni norm.Iter
	it := newNFKCIter(s)
	for len(buf) < maxNormalizedBytes {
		start, end, stable, ok := it.next()
		if !ok {
			break
		}
		if !stable {
			ni.InitString(norm.NFKC, s[start:end])
			for !ni.Done() {
				segs = append(segs, seg{norm: len(buf), orig: start + ni.Pos()})
				for _, r := range string(ni.Next()) {
					buf = utf8.AppendRune(buf, unicode.ToLower(r))
				}
			}
			continue
		}
		segs = append(segs, seg{norm: len(buf), orig: start, linear: true})
		for i, r := range s[start:end] {
			if r < utf8.RuneSelf {
				if 'A' <= r && r <= 'Z' {
					r += 'a' - 'A'
				}
				buf = append(buf, byte(r))
				continue
			}
			l := unicode.ToLower(r)
			if utf8.RuneLen(l) != utf8.RuneLen(r) {
				// Not byte for byte: this rune gets its own segment.
				segs = append(segs, seg{norm: len(buf), orig: start + i})
				buf = utf8.AppendRune(buf, l)
				segs = append(segs, seg{norm: len(buf), orig: start + i + utf8.RuneLen(r), linear: true})
				continue
			}
			buf = utf8.AppendRune(buf, l)
		}
	}
	// Prefer matches at the start of a word (a stem matches the start of its
	// words; "run" should find "running", not "brunch"); CJK matches anywhere.
	best := earliest(buf, needles, true)
	if best < 0 {
		best = earliest(buf, needles, false)
	}
	if best < 0 {
		return -1
	}
	k := sort.Search(len(segs), func(k int) bool { return segs[k].norm > best }) - 1
	if k < 0 {
		return 0
	}
	if segs[k].linear {
		return segs[k].orig + best - segs[k].norm
	}
	return segs[k].orig
}

// earliest returns the first index in buf of any of needles, or -1. With
// wordStart, a needle that begins with a word character only counts where the
// preceding rune is not part of a word.
func earliest(buf []byte, needles []string, wordStart bool) int {
	best := -1
	for _, n := range needles {
		limit := len(buf)
		if best >= 0 {
			limit = min(len(buf), best+len(n)-1)
		}
		first, _ := utf8.DecodeRuneInString(n)
		check := wordStart && classify(first) == clsWord
		for from := 0; from < limit; {
			i := bytes.Index(buf[from:limit], []byte(n))
			if i < 0 {
				break
			}
			i += from
			if check && i > 0 {
				if prev, _ := utf8.DecodeLastRune(buf[:i]); classify(prev) == clsWord || classify(prev) == clsMark {
					from = i + 1
					continue
				}
			}
			best = i
			break
		}
	}
	return best
}

func isBlank(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// excerpt returns at most maxRunes (≥ 1) runes of s (valid UTF-8) starting about
// a third of maxRunes before byte offset m, preferring to cut at white space.
func excerpt(s string, m, maxRunes int) string {
	lead := min(maxRunes/3, max(maxRunes-3, 0)) // leave room for "…" + a rune + "…"
	// When the rest of s fits, show more of what precedes m instead.
	after := 0
	for i := m; i < len(s) && after < maxRunes; after++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if after < maxRunes {
		lead = maxRunes - 1 - after
	}
	start := m
	for k := 0; k < lead && start > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:start])
		start -= size
	}
	// Do not start in the middle of a word if white space follows before m.
	if start > 0 && start < m {
		if r, _ := utf8.DecodeLastRuneInString(s[:start]); !isBlank(r) {
			if i := strings.IndexFunc(s[start:m], isBlank); i >= 0 {
				start += i
			}
		}
	}
	leftCut := false
	for i := start; i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !isBlank(r) {
			leftCut = true
			break
		}
		i -= size
	}
	budget := maxRunes
	if leftCut {
		budget--
	}
	// Collect up to budget+1 display runes: blanks collapsed, none leading or
	// trailing. matchAt is the index in out of the rune at m.
	out := make([]rune, 0, min(budget+1, len(s)-start+1))
	matchAt := -1
	pending := false
	for i, r := range s[start:] {
		if len(out) > budget {
			break
		}
		if isBlank(r) {
			pending = len(out) > 0
			continue
		}
		if pending {
			pending = false
			if out = append(out, ' '); len(out) > budget {
				break
			}
		}
		if matchAt < 0 && start+i >= m {
			matchAt = len(out)
		}
		out = append(out, r)
	}
	rightCut := len(out) > budget
	if rightCut {
		budget--
		if budget <= 0 {
			return ellipsis
		}
		midWord := out[budget] != ' ' && out[budget-1] != ' '
		out = out[:budget]
		if midWord {
			// Cut at the last space instead, if that keeps most of the text after
			// the match.
			if p := lastSpace(out); p > matchAt && p >= len(out)*2/3 {
				out = out[:p]
			}
		}
		for len(out) > 0 && out[len(out)-1] == ' ' {
			out = out[:len(out)-1]
		}
	}
	if len(out) == 0 && (leftCut || rightCut) {
		return ellipsis
	}
	var b strings.Builder
	b.Grow(len(out)*3 + 2*len(ellipsis))
	if leftCut {
		b.WriteString(ellipsis)
	}
	for _, r := range out {
		b.WriteRune(r)
	}
	if rightCut {
		b.WriteString(ellipsis)
	}
	return b.String()
}

func lastSpace(rs []rune) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == ' ' {
			return i
		}
	}
	return -1
}
