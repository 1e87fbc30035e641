package negentropy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"iter"
	"math/bits"
	"slices"

	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// sum is a negentropy fingerprint accumulator: the sum of ids read as
// little-endian 256-bit numbers, mod 2^256, in four little-endian limbs.
type sum [4]uint64

func idSum(id *[32]byte) sum {
	return sum{binary.LittleEndian.Uint64(id[0:]), binary.LittleEndian.Uint64(id[8:]),
		binary.LittleEndian.Uint64(id[16:]), binary.LittleEndian.Uint64(id[24:])}
}

func (a sum) add(b sum) sum {
	var c uint64
	a[0], c = bits.Add64(a[0], b[0], 0)
	a[1], c = bits.Add64(a[1], b[1], c)
	a[2], c = bits.Add64(a[2], b[2], c)
	a[3], _ = bits.Add64(a[3], b[3], c)
	return a
}

func (a sum) sub(b sum) sum {
	var c uint64
	a[0], c = bits.Sub64(a[0], b[0], 0)
	a[1], c = bits.Sub64(a[1], b[1], c)
	a[2], c = bits.Sub64(a[2], b[2], c)
	a[3], _ = bits.Sub64(a[3], b[3], c)
	return a
}

// fingerprint is the protocol's fingerprint of count items whose ids sum to
// s: the first 16 bytes of SHA-256(s as 32 little-endian bytes ||
// varint(count)), in hex. (go-nostr's vector storage computes the same, but
// for a carry it drops when a 32-bit word and its carry-in overflow
// together, which random ids practically never meet; this is the reference
// design's exact sum.)
func (s sum) fingerprint(count int) string {
	buf := make([]byte, 32, 32+10)
	for i, l := range s {
		binary.LittleEndian.PutUint64(buf[8*i:], l)
	}
	buf = append(buf, lib.EncodeVarInt(count)...)
	h := sha256.Sum256(buf)
	return hex.EncodeToString(h[:lib.FingerprintSize])
}

// boundKey decodes a bound into a comparable key: its timestamp and its id
// prefix as bytes (comparing bytes compares the lowercase hex the library
// compares). ok is false for the infinite bound.
func boundKey(b lib.Bound) (ts int64, prefix []byte, ok bool) {
	if b.Timestamp == lib.InfiniteBound.Timestamp {
		return 0, nil, false
	}
	p, err := hex.DecodeString(b.ID)
	if err != nil {
		// (a bound's id comes from Check'd bytes: even-length hex; an odd
		// length cannot happen, keep what decodes)
		p, _ = hex.DecodeString(b.ID[:len(b.ID)&^1])
	}
	return int64(b.Timestamp), p, true
}

// sorted is a lib.Storage over a fixed set of items with prefix sums, so
// that a range's fingerprint is O(1), where go-nostr's vector storage adds
// up the range's ids on every call (CPU growing with items x rounds). It
// costs sortedItemBytes per item.
type sorted struct {
	items  []lib.Item
	prefix []sum // prefix[i]: the sum of items[:i]
}

// sortedItemBytes is what sorted holds per item: the item (a timestamp and a
// string header, 24 bytes), its 64 bytes of hex and a prefix sum (32).
const sortedItemBytes = 24 + 64 + 32

func newSorted(items []Item) *sorted {
	s := &sorted{items: make([]lib.Item, len(items)), prefix: make([]sum, len(items)+1)}
	for i, it := range items {
		s.items[i] = lib.Item{Timestamp: it.CreatedAt, ID: it.ID}
	}
	slices.SortFunc(s.items, lib.ItemCompare)
	var id [32]byte
	for i, it := range s.items {
		_, _ = hex.Decode(id[:], []byte(it.ID))
		s.prefix[i+1] = s.prefix[i].add(idSum(&id))
	}
	return s
}

func (s *sorted) Size() int { return len(s.items) }

func (s *sorted) Range(begin, end int) iter.Seq2[int, lib.Item] {
	return func(yield func(int, lib.Item) bool) {
		for i := begin; i < end; i++ {
			if !yield(i, s.items[i]) {
				return
			}
		}
	}
}

func (s *sorted) FindLowerBound(begin, end int, bound lib.Bound) int {
	idx, _ := slices.BinarySearchFunc(s.items[begin:end], bound.Item, lib.ItemCompare)
	return begin + idx
}

func (s *sorted) GetBound(idx int) lib.Bound {
	if idx < len(s.items) {
		return lib.Bound{Item: s.items[idx]}
	}
	return lib.InfiniteBound
}

func (s *sorted) Fingerprint(begin, end int) string {
	return s.prefix[end].sub(s.prefix[begin]).fingerprint(end - begin)
}

// compareKey orders (ts, id) against a bound's (bts, prefix) as the library
// orders items and bounds.
func compareKey(ts int64, id *[32]byte, bts int64, prefix []byte) int {
	switch {
	case ts < bts:
		return -1
	case ts > bts:
		return 1
	}
	return bytes.Compare(id[:], prefix)
}
