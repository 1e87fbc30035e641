package negentropy

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"iter"
	"math/rand/v2"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// Tree is a set of items ordered as negentropy orders them, (created_at, id),
// in which every node holds its subtree's item count and id sum (mod 2^256),
// so that the fingerprint and count of any range, the rank of any bound and
// the item at any rank cost O(log n) (the reference design's B-tree does the
// same with wider nodes).
//
// It is persistent: Insert and Delete copy the O(log n) nodes on their path
// and never change a node a Snapshot can reach, so a Snapshot is an
// immutable view, safe for concurrent readers while the Tree goes on
// changing, and holds in memory only the nodes the Tree has since replaced.
// A Tree itself is for one goroutine (callers lock).
//
// It is a treap with random priorities (expected depth O(log n) whatever the
// ids: an author cannot grind ids to unbalance it). Memory: TreeNodeBytes per
// item.
type Tree struct {
	root *node
	rng  *rand.PCG
}

// TreeNodeBytes is what a Tree holds per item: one 96-byte node (key 40,
// sum 32, count and priority 8, two pointers 16), a Go size class exactly.
const TreeNodeBytes = 96

type node struct {
	ts    int64
	id    [32]byte
	sum   sum // of the subtree's ids
	n     int32
	prio  uint32
	left  *node
	right *node
}

func (x *node) count() int {
	if x == nil {
		return 0
	}
	return int(x.n)
}

func (x *node) total() sum {
	if x == nil {
		return sum{}
	}
	return x.sum
}

// fix recomputes x's count and sum from its children (x is a fresh copy).
func (x *node) fix() *node {
	x.n = int32(1 + x.left.count() + x.right.count())
	x.sum = idSum(&x.id).add(x.left.total()).add(x.right.total())
	return x
}

func (x *node) clone() *node {
	c := *x
	return &c
}

func (x *node) cmp(ts int64, id *[32]byte) int {
	switch {
	case x.ts < ts:
		return -1
	case x.ts > ts:
		return 1
	}
	for i := range x.id {
		if x.id[i] != id[i] {
			if x.id[i] < id[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{rng: rand.NewPCG(rand.Uint64(), rand.Uint64())}
}

// Len returns the number of items.
func (t *Tree) Len() int { return t.root.count() }

// ParseID decodes a 64-character lowercase hex id; ok is false for anything
// else.
func ParseID(s string) (id [32]byte, ok bool) {
	if !IsID(s) {
		return id, false
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err == nil
}

// Has reports whether (ts, id) is in the tree.
func (t *Tree) Has(ts int64, id [32]byte) bool {
	for x := t.root; x != nil; {
		switch c := x.cmp(ts, &id); {
		case c == 0:
			return true
		case c > 0:
			x = x.left
		default:
			x = x.right
		}
	}
	return false
}

// Insert adds (ts, id); it reports false, changing nothing, when it is held.
func (t *Tree) Insert(ts int64, id [32]byte) bool {
	if t.Has(ts, id) {
		return false
	}
	t.root = insert(t.root, &node{ts: ts, id: id, prio: uint32(t.rng.Uint64())})
	return true
}

func insert(x, nw *node) *node {
	if x == nil {
		return nw.fix()
	}
	if nw.prio > x.prio {
		nw.left, nw.right = split(x, nw.ts, &nw.id)
		return nw.fix()
	}
	c := x.clone()
	if x.cmp(nw.ts, &nw.id) > 0 {
		c.left = insert(x.left, nw)
	} else {
		c.right = insert(x.right, nw)
	}
	return c.fix()
}

// split returns the items of x below (ts, id) and those from it on, copying
// the nodes on the way.
func split(x *node, ts int64, id *[32]byte) (l, r *node) {
	if x == nil {
		return nil, nil
	}
	c := x.clone()
	if x.cmp(ts, id) < 0 {
		c.right, r = split(x.right, ts, id)
		return c.fix(), r
	}
	l, c.left = split(x.left, ts, id)
	return l, c.fix()
}

// merge joins l and r, every item of l below every item of r.
func merge(l, r *node) *node {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		c := l.clone()
		c.right = merge(l.right, r)
		return c.fix()
	default:
		c := r.clone()
		c.left = merge(l, r.left)
		return c.fix()
	}
}

// Delete removes (ts, id); it reports false, changing nothing, when it is
// not held.
func (t *Tree) Delete(ts int64, id [32]byte) bool {
	if !t.Has(ts, id) {
		return false
	}
	t.root = del(t.root, ts, &id)
	return true
}

func del(x *node, ts int64, id *[32]byte) *node {
	switch c := x.cmp(ts, id); {
	case c == 0:
		return merge(x.left, x.right)
	case c > 0:
		y := x.clone()
		y.left = del(x.left, ts, id)
		return y.fix()
	default:
		y := x.clone()
		y.right = del(x.right, ts, id)
		return y.fix()
	}
}

// Snapshot returns an immutable view of the tree as it is now.
func (t *Tree) Snapshot() *Snapshot { return &Snapshot{root: t.root} }

// Snapshot is an immutable view of a Tree (see Tree); safe for concurrent use.
type Snapshot struct {
	root *node
}

// Len returns the number of items.
func (s *Snapshot) Len() int { return s.root.count() }

// Rank returns the number of items below (ts, id-prefix) in the library's
// order (a shorter prefix sorts before the ids it begins).
func (s *Snapshot) rank(ts int64, prefix []byte) int {
	r := 0
	for x := s.root; x != nil; {
		if compareKey(x.ts, &x.id, ts, prefix) < 0 {
			r += x.left.count() + 1
			x = x.right
		} else {
			x = x.left
		}
	}
	return r
}

// RankTime returns the number of items whose created_at is below ts.
func (s *Snapshot) RankTime(ts int64) int { return s.rank(ts, nil) }

// prefixSum returns the sum of the ids of the first k items.
func (s *Snapshot) prefixSum(k int) sum {
	var acc sum
	for x := s.root; x != nil && k > 0; {
		if l := x.left.count(); k <= l {
			x = x.left
		} else {
			acc = acc.add(x.left.total()).add(idSum(&x.id))
			k -= l + 1
			x = x.right
		}
	}
	return acc
}

// at returns the item of rank k (< Len).
func (s *Snapshot) at(k int) *node {
	for x := s.root; x != nil; {
		switch l := x.left.count(); {
		case k < l:
			x = x.left
		case k == l:
			return x
		default:
			k -= l + 1
			x = x.right
		}
	}
	return nil
}

// walk yields the items of ranks [from, to) of subtree x, whose first item
// has rank base, in order.
func walk(x *node, base, from, to int, yield func(int, *node) bool) bool {
	if x == nil || from >= to || base >= to || base+x.count() <= from {
		return true
	}
	l := x.left.count()
	if !walk(x.left, base, from, to, yield) {
		return false
	}
	if i := base + l; i >= from && i < to {
		if !yield(i, x) {
			return false
		}
	}
	return walk(x.right, base+l+1, from, to, yield)
}

// Window returns a negentropy storage over the items of ranks [lo, hi) (as
// given by RankTime: a time window), for a Server (NewTreeServer).
func (s *Snapshot) Window(lo, hi int) lib.Storage {
	lo = min(max(lo, 0), s.Len())
	hi = min(max(hi, lo), s.Len())
	return &window{s: s, lo: lo, hi: hi}
}

// window is lib.Storage over ranks [lo, hi) of a snapshot: every call is
// O(log n) (Range: plus the items yielded).
type window struct {
	s      *Snapshot
	lo, hi int
}

func (w *window) Size() int { return w.hi - w.lo }

func (w *window) Range(begin, end int) iter.Seq2[int, lib.Item] {
	return func(yield func(int, lib.Item) bool) {
		walk(w.s.root, 0, w.lo+begin, w.lo+end, func(i int, x *node) bool {
			return yield(i-w.lo, lib.Item{Timestamp: nostr.Timestamp(x.ts), ID: hex.EncodeToString(x.id[:])})
		})
	}
}

func (w *window) FindLowerBound(begin, end int, bound lib.Bound) int {
	r := w.hi
	if ts, prefix, ok := boundKey(bound); ok {
		r = w.s.rank(ts, prefix)
	}
	return min(max(r-w.lo, begin), end)
}

func (w *window) GetBound(idx int) lib.Bound {
	if idx < 0 || w.lo+idx >= w.hi {
		return lib.InfiniteBound
	}
	x := w.s.at(w.lo + idx)
	return lib.Bound{Item: lib.Item{Timestamp: nostr.Timestamp(x.ts), ID: hex.EncodeToString(x.id[:])}}
}

func (w *window) Fingerprint(begin, end int) string {
	return w.s.prefixSum(w.lo + end).sub(w.s.prefixSum(w.lo + begin)).fingerprint(end - begin)
}

// Candidate is a stored event as a relay's tree needs it (store
// SyncTreeItems): its key, its kind, its NIP-40 expiration (0: none), its
// effective key (replaceable and addressable events; "" else) and the NIP-29
// group whose scope it is stored in, if any (Grouped; protocol.GroupOf).
type Candidate struct {
	CreatedAt int64
	ID        string
	Kind      int
	Expires   int64
	Key       string
	Group     string
	Grouped   bool
}

// Key is an item of a Tree in binary: its created_at and id.
type Key struct {
	TS int64
	ID [32]byte
}

// Build replaces the tree's items with keys (in any order; duplicates are
// dropped) in O(n log n) for the sort and O(n) for the tree, without the
// garbage of n Inserts. It sorts keys in place.
func (t *Tree) Build(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(a.TS, b.TS); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	keys = slices.CompactFunc(keys, func(a, b Key) bool { return a == b })
	nodes := make([]node, len(keys)) // one allocation: 96 bytes per item
	for i, k := range keys {
		nodes[i].ts, nodes[i].id = k.TS, k.ID
	}
	var build func(lo, hi int) *node
	build = func(lo, hi int) *node {
		if lo >= hi {
			return nil
		}
		mid := lo + (hi-lo)/2
		x := &nodes[mid]
		x.left, x.right = build(lo, mid), build(mid+1, hi)
		return x.fix()
	}
	root := build(0, len(nodes))
	// Priorities: n random ones, highest first in breadth-first order, so
	// that every parent's is at least its children's (a treap).
	prios := make([]uint32, len(nodes))
	for i := range prios {
		prios[i] = uint32(t.rng.Uint64())
	}
	slices.SortFunc(prios, func(a, b uint32) int { return cmp.Compare(b, a) })
	queue := make([]*node, 0, len(nodes))
	if root != nil {
		queue = append(queue, root)
	}
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		x.prio = prios[i]
		if x.left != nil {
			queue = append(queue, x.left)
		}
		if x.right != nil {
			queue = append(queue, x.right)
		}
	}
	t.root = root
}
