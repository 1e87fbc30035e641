package relay

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// SyncTreeStore is what the relay's NIP-77 fingerprint tree needs of the
// store (store.Reader.SyncTreeItems): every visible public event that has a
// topic, with its kind, expiration, effective key and group, from one
// snapshot that holds the outbox up to seq, and whether any visible public
// event has no topic.
type SyncTreeStore interface {
	SyncTreeItems(ctx context.Context, add func(negentropy.Candidate)) (seq int64, unscoped bool, err error)
}

// negTree is the relay's NIP-77 fingerprint tree: the (created_at, id) of
// exactly the events an anonymous reader may read (the public set: visible,
// that is not deleted, not hidden, not replaced, not expired; not of a private
// kind; not kept from non-members by a private or hidden group,
// protocol.GroupKeepsFrom), as of the outbox seq it has applied (seq). It is
// built from one database snapshot, in the background (beginFill, fillFrom:
// the follower goes on reading rows and delivering events meanwhile; its
// reads are kept and applied on top of the snapshot), and then kept by the
// outbox follower, which applies every read of rows (apply) after it
// refreshed the group rule those rows may change (regroup), as the event
// cache is. A session whose filter the tree covers (no ids, authors, kinds
// or tags: {} or a time window) and whose reader's readable set is the
// public set (an anonymous reader) is served from a snapshot of it (session)
// once it has applied the outbox head read after the NEG-OPEN arrived; every
// other session, and every session while the tree is not ready (being
// filled), reads its items from the database.
//
// Beside the tree it keeps what it needs to follow changes the rows do not
// spell out: the version of each effective key (a newer version replaces
// it), the expirations (an expired event leaves the tree before any session
// is served), and the candidates of every group (the public events of its
// scope, whether its rule keeps them out or not: a group turning private
// takes its events out at once, and back in when it turns public).
//
// Memory: negentropy.TreeNodeBytes (96) per item in the tree, plus about
// negTreeExtraBytes for an event that expires, is replaceable or is in a
// group. It is not bounded by a budget: it is the set a full sync covers,
// and Config.MaxSyncEvents bounds the sessions over it.
type negTree struct {
	mu      sync.Mutex
	ready   bool  // filled (and not given up)
	seq     int64 // the outbox seq applied
	moved   chan struct{}
	tree    *negentropy.Tree
	gate    protocol.GroupGate
	now     func() time.Time
	keys    map[string]treeRec              // effective key -> its held version
	groups  map[string]map[[32]byte]treeRec // group id -> its candidates
	expires expiryHeap
	bulk    []negentropy.Key // during fill: the tree's items, built at its end

	// While a fill is under way (filling, between beginFill and the end of
	// fillFrom), apply keeps the follower's reads (pending, as ops) instead
	// of applying them: fillFrom builds the snapshot's tree off the lock and
	// then applies the kept reads above the snapshot's seq, so the follower
	// (and live delivery behind it) never waits for a fill. pendingFrom is
	// the seq the kept reads start after; pendingLast the last seq kept.
	// Past maxPendingOps the reads are dropped (overflow) and fillFrom
	// starts again from pendingLast.
	filling     bool
	pending     []treeRead
	pendingOps  int
	pendingFrom int64
	pendingLast int64
	overflow    bool
}

// treeOp is one outbox row as the tree applies it: add rec (an upsert of a
// visible public event) or remove it.
type treeOp struct {
	seq int64
	rec treeRec
	add bool
}

// treeRead is one read of rows by the follower, as ops, up to seq last.
type treeRead struct {
	ops  []treeOp
	last int64
}

// maxPendingOps bounds the rows a fill keeps (about 150 bytes each): at a
// thousand rows a second, a fill of 15 minutes.
const maxPendingOps = 1 << 20

// errTreeRestart is fillFrom's answer when its snapshot is older than the
// reads it kept start or it dropped reads: the fill must be done again.
var errTreeRestart = errors.New("negentropy tree: snapshot behind the follower, or too many rows during the fill")

// negTreeExtraBytes is about what an event costs beside its tree node when it
// has an effective key, an expiration or a group (a map entry or a heap
// entry of a treeRec and its share of the map's buckets).
const negTreeExtraBytes = 160

// treeRec is a candidate as the tree's side indexes hold it.
type treeRec struct {
	ts      int64
	id      [32]byte
	kind    int
	expires int64 // 0: none
	key     string
	group   string
	grouped bool
}

type expiryHeap []treeRec

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(treeRec)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newNegTree(gate protocol.GroupGate, now func() time.Time) *negTree {
	t := &negTree{moved: make(chan struct{}), gate: gate, now: now}
	t.reset()
	return t
}

func (t *negTree) reset() {
	t.ready, t.seq = false, 0
	t.tree = negentropy.NewTree()
	t.keys = map[string]treeRec{}
	t.groups = map[string]map[[32]byte]treeRec{}
	t.expires = nil
}

// fill replaces the tree's content with a snapshot's candidates (read),
// without the group rule (regroupAll applies it and makes the
// tree ready), holding the tree's lock throughout: fillFrom fills a new
// tree with it. It returns the snapshot's seq. A snapshot that holds an event
// without a topic leaves the tree off: it cannot follow such events.
func (t *negTree) fill(read func(add func(negentropy.Candidate)) (int64, bool, error)) (int64, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
	now := t.now().Unix()
	t.bulk = []negentropy.Key{}
	seq, unscoped, err := read(func(c negentropy.Candidate) {
		id, ok := negentropy.ParseID(c.ID)
		if !ok {
			return
		}
		t.add(treeRec{ts: c.CreatedAt, id: id, kind: c.Kind, expires: c.Expires, key: c.Key, group: c.Group, grouped: c.Grouped}, now, false)
	})
	t.tree.Build(t.bulk)
	t.bulk = nil
	if err != nil || unscoped {
		t.reset()
		return 0, unscoped, err
	}
	t.seq = seq
	return seq, false, nil
}

// regroupAll applies the group rule (the gate, loaded after the fill) to
// every group's candidates and makes a filled tree answer.
func (t *negTree) regroupAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now().Unix()
	for g := range t.groups {
		t.regroupLocked(g, now)
	}
	t.ready = true
	t.movedLocked()
}

// regroup applies the group rule, as the gate has it now, to the candidates
// of groups ids: called by the follower for the groups whose rule a read of
// rows may change, after it refreshed the gate and before it applies them.
func (t *negTree) regroup(ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now().Unix()
	for _, g := range ids {
		t.regroupLocked(g, now)
	}
}

func (t *negTree) regroupLocked(g string, now int64) {
	for _, r := range t.groups[g] {
		switch {
		case r.expires != 0 && r.expires <= now:
			t.tree.Delete(r.ts, r.id)
			delete(t.groups[g], r.id)
		case t.public(r):
			t.tree.Insert(r.ts, r.id)
		default:
			t.tree.Delete(r.ts, r.id)
		}
	}
}

// public reports whether an anonymous reader may read r as far as its group
// goes (protocol.Viewer.MayReadGroup with the gate).
func (t *negTree) public(r treeRec) bool {
	if !r.grouped || t.gate == nil || !t.gate.Any() {
		return true
	}
	private, hidden, _ := t.gate.Rule(r.group, nil)
	return !protocol.GroupKeepsFrom(private, hidden, r.kind)
}

// add files candidate r (visible, public kind, with a topic) at unix time
// now: in place of another version of its effective key, and in the tree
// unless it expired or its group keeps it out (when gated: the rule is
// applied later otherwise).
func (t *negTree) add(r treeRec, now int64, gated bool) {
	if r.key != "" {
		if old, ok := t.keys[r.key]; ok && old.id != r.id {
			t.remove(old)
		}
	}
	if r.expires != 0 && r.expires <= now {
		t.remove(r)
		return
	}
	// (held already: a row repeated for another topic, or again)
	held := t.tree.Has(r.ts, r.id)
	if r.key != "" {
		t.keys[r.key] = r
	}
	if r.grouped {
		m := t.groups[r.group]
		if m == nil {
			m = map[[32]byte]treeRec{}
			t.groups[r.group] = m
		}
		_, in := m[r.id]
		held = held || in
		m[r.id] = r
	}
	if r.expires != 0 && !held {
		heap.Push(&t.expires, r)
	}
	switch {
	case t.bulk != nil: // (a snapshot: one version per key, each event once)
		t.bulk = append(t.bulk, negentropy.Key{TS: r.ts, ID: r.id})
	case !gated || t.public(r):
		t.tree.Insert(r.ts, r.id)
	default:
		t.tree.Delete(r.ts, r.id)
	}
}

// remove takes r out of the tree and the side indexes (its expiration stays
// in the heap, which ignores what is gone; an event added again while it is
// there has it twice, until it passes).
func (t *negTree) remove(r treeRec) {
	t.tree.Delete(r.ts, r.id)
	if r.key != "" && t.keys[r.key].id == r.id {
		delete(t.keys, r.key)
	}
	if r.grouped {
		if m := t.groups[r.group]; m != nil {
			delete(m, r.id)
			if len(m) == 0 {
				delete(t.groups, r.group)
			}
		}
	}
}

// expireLocked takes out every event whose expiration is at or before now
// (schema.VisibleSQL: visible while expires_at > now).
func (t *negTree) expireLocked(now int64) {
	for len(t.expires) > 0 && t.expires[0].expires <= now {
		r := heap.Pop(&t.expires).(treeRec)
		t.remove(r)
	}
}

// apply applies (once the tree is ready) a read of outbox rows (ascending seq, every row: the rows of
// each topic of a change included) whose events, as loaded after the rows
// committed, are byID (the visible ones), and moves seq to last. A row at or
// below seq is held by the snapshot already. An upsert row whose event is
// loaded, of a public kind, is added (in place of another version of its
// key); any other row's event is removed, from its group too when the row is
// of a group's scope. While a fill is under way it keeps the read for the
// fill to apply (it never waits for the fill); otherwise, before the tree is
// ready, it does nothing.
func (t *negTree) apply(rows []outbox.Row, byID map[string]*nostr.Event, last int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ready {
		if t.filling {
			t.keepLocked(treeOps(rows, byID), last)
		}
		return
	}
	t.applyLocked(treeOps(rows, byID), last)
}

// active reports whether the tree is filled or being filled: whether apply
// uses the rows' events. A tree whose fill ended without a tree (unscoped)
// is inactive for good (only the follower's start begins a fill).
func (t *negTree) active() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready || t.filling
}

// treeOps turns a read of rows (see apply) into ops; rows are not kept.
func treeOps(rows []outbox.Row, byID map[string]*nostr.Event) []treeOp {
	ops := make([]treeOp, 0, len(rows))
	for _, row := range rows {
		id, ok := negentropy.ParseID(row.EventID)
		if !ok {
			continue
		}
		r := treeRec{ts: row.CreatedAt, id: id, kind: row.Kind, key: row.EffectiveKey}
		r.group, r.grouped = strings.CutPrefix(row.TopicID, groups.ScopePrefix)
		ev := byID[row.EventID]
		if row.Op != outbox.OpUpsert || ev == nil || protocol.IsPrivateKind(ev.Kind) {
			ops = append(ops, treeOp{seq: row.Seq, rec: r})
			continue
		}
		r.ts, r.kind, r.key = int64(ev.CreatedAt), ev.Kind, protocol.EffectiveKey(ev)
		r.group, r.grouped = protocol.GroupOf(ev)
		if exp, ok := protocol.Expiration(ev); ok {
			r.expires = max(exp, 1)
		}
		ops = append(ops, treeOp{seq: row.Seq, rec: r, add: true})
	}
	return ops
}

// applyLocked applies ops (a read up to last) to the tree, skipping those at
// or below its seq, and moves seq to last.
func (t *negTree) applyLocked(ops []treeOp, last int64) {
	if last <= t.seq {
		return
	}
	now := t.now().Unix()
	for _, op := range ops {
		if op.seq <= t.seq {
			continue
		}
		if op.add {
			t.add(op.rec, now, true)
		} else {
			t.remove(op.rec)
		}
	}
	t.seq = last
	t.movedLocked()
}

// keepLocked keeps a read for the fill under way, or drops it past
// maxPendingOps (the fill then starts again).
func (t *negTree) keepLocked(ops []treeOp, last int64) {
	t.pendingLast = last
	if t.overflow || t.pendingOps+len(ops) > maxPendingOps {
		t.overflow, t.pending, t.pendingOps = true, nil, 0
		return
	}
	t.pending = append(t.pending, treeRead{ops: ops, last: last})
	t.pendingOps += len(ops)
}

// beginFill starts a fill: from now on, until fillFrom makes the tree ready
// (or finds the store cannot have one, or endFill), apply keeps the reads
// of rows after seq from, which is where the follower's next read starts.
// The follower calls it before it reads rows, in its own goroutine.
func (t *negTree) beginFill(from int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
	t.filling, t.pending, t.pendingOps, t.overflow = true, nil, 0, false
	t.pendingFrom, t.pendingLast = from, from
}

// endFill ends a fill without a tree (it stays not ready).
func (t *negTree) endFill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.filling, t.pending, t.pendingOps, t.overflow = false, nil, 0, false
}

// fillFrom fills the tree from a snapshot (read, seq S) without holding the
// tree's lock (apply keeps the follower's reads meanwhile), then, under the
// lock, puts it in place, applies the kept reads above S (in seq order, with
// the group rule as the gate has it now), applies the group rule to every
// group's candidates and makes the tree ready: it is then as current as the
// follower's last read. It returns errTreeRestart, keeping the reads from
// the last one kept on, when S is below pendingFrom (rows between would be
// missing) or reads were dropped; the caller calls it again. A snapshot
// holding an event without a topic ends the fill without a tree (unscoped).
func (t *negTree) fillFrom(read func(add func(negentropy.Candidate)) (int64, bool, error)) (int64, bool, error) {
	nt := newNegTree(t.gate, t.now)
	seq, unscoped, err := nt.fill(read)
	t.mu.Lock()
	defer t.mu.Unlock()
	restart := func() {
		t.pending, t.pendingOps, t.overflow, t.pendingFrom = nil, 0, false, t.pendingLast
	}
	switch {
	case err != nil:
		restart()
		return 0, false, err
	case unscoped:
		t.filling, t.pending, t.pendingOps, t.overflow = false, nil, 0, false
		return 0, true, nil
	case seq < t.pendingFrom || t.overflow:
		restart()
		return 0, false, errTreeRestart
	}
	t.tree, t.keys, t.groups, t.expires, t.seq = nt.tree, nt.keys, nt.groups, nt.expires, seq
	for _, r := range t.pending {
		t.applyLocked(r.ops, r.last)
	}
	t.filling, t.pending, t.pendingOps = false, nil, 0
	now := t.now().Unix()
	for g := range t.groups {
		t.regroupLocked(g, now)
	}
	t.ready = true
	t.movedLocked()
	return t.seq, false, nil
}

func (t *negTree) movedLocked() {
	close(t.moved)
	t.moved = make(chan struct{})
}

// snapshot waits until the tree is ready and has applied the outbox up to
// seq, for at most wait or until done, then takes out what expired by now
// and returns a snapshot of it; ok is false when it did not get there.
func (t *negTree) snapshot(seq int64, wait time.Duration, done <-chan struct{}) (*negentropy.Snapshot, bool) {
	var timer *time.Timer
	for {
		t.mu.Lock()
		if t.ready && t.seq >= seq {
			t.expireLocked(t.now().Unix())
			s := t.tree.Snapshot()
			t.mu.Unlock()
			return s, true
		}
		ch := t.moved
		t.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return nil, false
		case <-done:
			return nil, false
		}
	}
}

// len returns the number of items in the tree, or -1 when it is not ready.
func (t *negTree) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ready {
		return -1
	}
	return t.tree.Len()
}

// treeCovers reports whether the tree answers a session of filter f for
// viewer v: f has no ids, authors, kinds, tags or search (since and until
// only), and v reads exactly the public set (anonymous).
func treeCovers(f nostr.Filter, v protocol.Viewer) bool {
	return f.IDs == nil && f.Authors == nil && f.Kinds == nil && len(f.Tags) == 0 && f.Search == "" &&
		!v.Operator && !v.AllGroups && len(v.Authed) == 0
}

// window returns the ranks of s that f's since and until select.
func window(s *negentropy.Snapshot, f nostr.Filter) (lo, hi int) {
	lo, hi = 0, s.Len()
	if f.Since != nil {
		lo = s.RankTime(int64(*f.Since))
	}
	if f.Until != nil && int64(*f.Until) < 1<<62 {
		hi = s.RankTime(int64(*f.Until) + 1)
	}
	return lo, max(lo, hi)
}

// negTreeSessionBytes is what a session served from the tree is charged to
// its connection's sync budget: it holds no items, only a snapshot (the
// nodes the tree replaces while the session lasts stay reachable from it)
// and the library's state.
const negTreeSessionBytes = 64 << 10

// negTreeWait bounds the read of the outbox head after a NEG-OPEN arrived,
// and then the wait for the tree to apply it; past either, the session reads
// its items from the database instead (which, for a session the tree
// covers, costs more than the wait: up to MaxSyncEvents rows).
const negTreeWait = 5 * time.Second

// treeNeg serves session s (filter f, an anonymous reader: treeCovers) from
// the tree, and reports whether it did (answered the initial message or
// ended the session); false: the tree is not ready (a fill is under way,
// or it is off), or the outbox head could not be read or the tree did not
// apply it, within negTreeWait each, and the caller reads the items. The session sees every event committed before the head read
// here, which is read after the NEG-OPEN arrived (a read of its own: the
// REQs' shared read, heads, gives up after cacheWait). Its items count
// towards the connection's MaxSyncEvents as a loaded session's do (NEG-ERR
// "blocked: ..." as theirs).
func (c *conn) treeNeg(s *negSession, f nostr.Filter, msg string) bool {
	if c.r.negTree.len() < 0 { // (being filled: not worth a wait)
		c.r.m.negTreeMisses.Inc()
		return false
	}
	hctx, cancel := context.WithTimeout(s.ctx, negTreeWait)
	head, err := c.r.follower.feed.Head(hctx)
	cancel()
	if err != nil {
		if s.ctx.Err() != nil {
			return true
		}
		c.r.m.negTreeMisses.Inc()
		return false
	}
	snap, ok := c.r.negTree.snapshot(head, negTreeWait, s.ctx.Done())
	if !ok {
		if s.ctx.Err() != nil {
			return true
		}
		c.r.m.negTreeMisses.Inc()
		return false
	}
	lo, hi := window(snap, f)
	n := hi - lo
	if n > c.r.cfg.MaxSyncEvents {
		c.failNeg(s, negErrMsg(s.id, fmt.Sprintf("blocked: more than %d events match, sync with narrower filters", c.r.cfg.MaxSyncEvents),
			c.r.cfg.MaxSyncEvents))
		return true
	}
	// The connection's other sessions: tree sessions' items, loaded ones'
	// charges.
	c.mu.Lock()
	sessions := make([]*negSession, 0, len(c.negs()))
	for _, o := range c.negs() {
		if o != s {
			sessions = append(sessions, o)
		}
	}
	c.mu.Unlock()
	others := 0
	for _, o := range sessions {
		o.mu.Lock()
		if o.tree {
			others += o.items
		} else {
			others += o.held / negItemBytes
		}
		o.mu.Unlock()
	}
	if others+n > c.r.cfg.MaxSyncEvents {
		c.failNeg(s, negErrMsg(s.id, fmt.Sprintf("blocked: this connection's sync sessions would hold more than %d events together, close one or sync with narrower filters", c.r.cfg.MaxSyncEvents),
			c.r.cfg.MaxSyncEvents))
		return true
	}
	if c.negMem.Take(negTreeSessionBytes, c.negMem.Limit(), false) != wsconn.Taken {
		c.failNeg(s, negErrMsg(s.id, reasonNegMemory))
		return true
	}
	srv, err := negentropy.NewTreeServer(snap.Window(lo, hi), c.r.cfg.NegFrameLimit)
	if err != nil {
		c.negMem.Give(negTreeSessionBytes)
		c.logger().Warn("negentropy session failed", "sub", s.id, "err", err)
		c.failNeg(s, negErrMsg(s.id, reasonNegFailed))
		return true
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.negMem.Give(negTreeSessionBytes)
		return true
	}
	s.srv, s.held, s.items, s.tree = srv, negTreeSessionBytes, n, true
	s.mu.Unlock()
	c.r.m.negTreeSessions.Inc()
	c.reconcileNeg(s, msg)
	return true
}
