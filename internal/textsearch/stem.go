package textsearch

import (
	"hash/maphash"
	"strings"
	"sync/atomic"

	"github.com/kljensen/snowball/english"
)

// The Snowball stemmer allocates and costs about half a microsecond per word, and
// words repeat a lot, so stems are remembered in a small direct-mapped cache: a
// fixed array of slots, each holding the last word hashed to it. It is lock-free,
// bounded (at most stemCacheSlots entries of at most 64-byte words) and only ever
// returns what english.Stem would.
const stemCacheSlots = 1 << 14

type stemEntry struct{ word, stem string }

var (
	stemSeed  = maphash.MakeSeed()
	stemCache [stemCacheSlots]atomic.Pointer[stemEntry]
)

// stem returns the English Snowball stem of word, a lower-case ASCII word.
func stem(word string) string {
	slot := &stemCache[maphash.String(stemSeed, word)&(stemCacheSlots-1)]
	if e := slot.Load(); e != nil && e.word == word {
		return e.stem
	}
	s := english.Stem(word, true)
	// Clone: word may be a substring of a large document.
	w := strings.Clone(word)
	if s == word {
		s = w
	}
	slot.Store(&stemEntry{word: w, stem: s})
	return s
}
