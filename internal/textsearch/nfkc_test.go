package textsearch

import (
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestNFKCStableRanges checks every rune nfkcStable accepts against norm.
func TestNFKCStableRanges(t *testing.T) {
	tab := stableTable()
	var buf [utf8.UTFMax]byte
	n := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if nfkcStable(r, tab) {
			n++
			if !stableByNorm(r, buf[:0]) {
				t.Errorf("nfkcStable(%U) but norm disagrees", r)
			}
		}
	}
	t.Logf("%d stable runes", n)
}

func TestNFKC(t *testing.T) {
	for _, s := range append(nastyStrings(), randomStrings(5000, 6)...) {
		if !utf8.ValidString(s) {
			continue
		}
		if got, want := nfkc(s, 1<<30), norm.NFKC.String(s); got != want {
			t.Fatalf("nfkc(%+q) = %+q, want %+q", truncate(s), truncate(got), truncate(want))
		}
	}
}

func FuzzNFKC(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got, want := nfkc(s, 1<<30), norm.NFKC.String(s); got != want {
			t.Fatalf("nfkc(%+q) = %+q, want %+q", s, got, want)
		}
	})
}
