package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// SyncStore is what NIP-77 needs of the store (package store implements it):
// the (created_at, id) of every stored event matching f that v may read, with
// REQ's visibility, at most max of them, or readpath.ErrTooManySyncItems. It
// asks take for each item before it keeps it (when take is not nil), and
// returns readpath.ErrSyncBudget at the first refusal. The relay reads it
// (Deps.Store) while Config.Negentropy is set.
type SyncStore interface {
	SyncItems(ctx context.Context, f nostr.Filter, v protocol.Viewer, max int, take func(n int) bool) ([]negentropy.Item, error)
}

const (
	reasonNegDisabled = "error: this relay does not serve NIP-77 negentropy sync"
	reasonNegSearch   = "invalid: search filters cannot be synced"
	reasonNegUnknown  = "closed: no open negentropy session with this id"
	reasonNegIdle     = "closed: idle for too long"
	reasonNegFailed   = "error: could not prepare the sync"
	reasonNegBusy     = "rate-limited: too many sync sessions are waiting on this relay, try again in a moment"
	reasonNegConnBusy = "rate-limited: too many of this connection's sync sessions are waiting, close some or try again in a moment"
	reasonNegRate     = "rate-limited: slow down, too many sync messages from your address"
	reasonNegMemory   = "error: the relay is short of memory for sync sessions, try again later"
)

// negItemBytes is what one item of a session costs against its connection's
// sync budget (conn.negMem) while the session lasts: the id's 64 bytes of hex,
// the server's entry and prefix sum for it (negentropy.ServerItemBytes less
// the hex: 56 bytes), the slice of items read from the database (24 bytes
// each, dropped once the server holds them) and slack for slices that grew by
// doubling. A connection's sessions together hold at most MaxSyncEvents items.
const negItemBytes = 160

// negSession is one NIP-77 session of a connection. Its items are read by a
// query goroutine (ready is closed when that ends, whatever the outcome); then
// the connection's reading turn answers each NEG-MSG in order. Exactly one NEG-ERR or
// nothing ends it: whoever marks it closed (endNeg) first sends the final
// message, and every NEG-MSG answer is queued under mu before that, so nothing
// of the session follows its NEG-ERR.
type negSession struct {
	id     string
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc
	ready  chan struct{}

	mu     sync.Mutex
	srv    *negentropy.Server // nil until loaded, and again once closed
	held   int                // bytes of conn.negMem its items hold; given back when it ends
	tree   bool               // served from the tree (held is negTreeSessionBytes)
	items  int                // the items of a session served from the tree
	closed bool
	idle   *time.Timer // ends the session after NegIdleTimeout without a NEG-MSG

	// Set before the session is pushed on the relay's load queue (negQueue):
	// load reads its items (loadNeg); waitBytes is what it is charged while
	// it waits (given back when its load starts, or by endNeg).
	load      func()
	waitBytes int
	// Under the queue's mu: waiting in the queue, since queuedAt.
	waiting  bool
	queuedAt time.Time
}

func negMsg(subID, msg string) []byte {
	b := append([]byte(`["NEG-MSG",`), quote(subID)...)
	b = append(b, ',')
	b = append(b, quote(msg)...)
	return append(b, ']')
}

// negErrMsg is ["NEG-ERR", subID, reason] with extra elements (numbers) after.
func negErrMsg(subID, reason string, extra ...int) []byte {
	b := append([]byte(`["NEG-ERR",`), quote(subID)...)
	b = append(b, ',')
	b = append(b, quote(reason)...)
	for _, n := range extra {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// onNegOpen opens (or replaces: the old session of the id is closed first,
// silently) a NIP-77 session over the events filter selects that this
// connection may read. The initial message is checked before anything is
// read from the database; the items are read by a query goroutine, which then
// answers the initial message.
func (c *conn) onNegOpen(subID string, filter nostr.Filter, msg string) {
	c.closeNeg(subID)
	if c.r.sync == nil {
		c.enqueue(negErrMsg(subID, reasonNegDisabled))
		return
	}
	if err := negentropy.Check(msg); err != nil {
		if errors.Is(err, negentropy.ErrUnsupportedVersion) {
			// The protocol's answer: our version alone, so that the client can
			// open again with it. No session is opened (nothing was read).
			c.enqueue(negMsg(subID, negentropy.VersionReply))
			return
		}
		c.enqueue(negErrMsg(subID, "invalid: "+err.Error()))
		return
	}
	if filter.Search != "" {
		c.enqueue(negErrMsg(subID, reasonNegSearch))
		return
	}
	filters, reason := c.checkRead([]nostr.Filter{filter})
	if reason != "" {
		c.enqueue(negErrMsg(subID, reason))
		return
	}
	c.mu.Lock()
	if c.subs.len()+len(c.negs()) >= c.r.lv().MaxSubscriptions {
		c.mu.Unlock()
		c.enqueue(negErrMsg(subID, reasonTooManySubs))
		return
	}
	ctx, cancel := c.childContext(0)
	s := &negSession{id: subID, ctx: ctx, cancel: cancel, ready: make(chan struct{})}
	x := c.extra()
	if x.negs == nil {
		x.negs = make(map[string]*negSession, 1)
	}
	x.negs[subID] = s
	c.mu.Unlock()
	v := c.viewer()
	if c.r.negTree != nil && treeCovers(filters[0], v) {
		// (a query slot of the connection: the tree reads the outbox head)
		if !c.startQuery(func() { c.treeOrQueue(s, filters[0], v, msg) }) {
			c.endNeg(s)
			close(s.ready)
		}
		return
	}
	c.queueLoad(s, filters[0], v, msg)
}

// treeOrQueue serves s from the fingerprint tree, or, when the tree is not
// current, queues it to read its items.
func (c *conn) treeOrQueue(s *negSession, f nostr.Filter, v protocol.Viewer, msg string) {
	if c.treeNeg(s, f, msg) {
		close(s.ready)
		return
	}
	c.queueLoad(s, f, v, msg)
}

// queueLoad has s read its items (loadNeg) once one of the relay's
// MaxSyncLoads slots is its, in its turn (negQueue); meanwhile it is charged
// negQueuedBytes and its initial message to the connection's sync budget
// (beyond the budget's own limit, which is for items: MaxQueuedSyncsPerConn
// bounds what a connection's waiting sessions hold; never beyond the relay's).
// It answers NEG-ERR at once when the queue is full (rate-limited) or the
// relay's budget cannot hold that much (error).
func (c *conn) queueLoad(s *negSession, f nostr.Filter, v protocol.Viewer, msg string) {
	s.load = func() { c.loadNeg(s, f, v, msg) }
	s.waitBytes = negQueuedBytes + len(msg)
	if c.negMem.Take(s.waitBytes, c.negMem.Limit(), true) != wsconn.Taken {
		c.failNeg(s, negErrMsg(s.id, reasonNegMemory))
		close(s.ready)
		return
	}
	switch c.r.negLoads.push(c, s) {
	case loadStarted, loadWaiting:
		return
	case connQueueFull:
		c.r.m.negQueueRefused.WithLabelValues("connection").Inc()
		c.failNeg(s, negErrMsg(s.id, reasonNegConnBusy))
	case relayQueueFull:
		c.r.m.negQueueRefused.WithLabelValues("relay").Inc()
		c.failNeg(s, negErrMsg(s.id, reasonNegBusy))
	}
	c.negMem.Give(s.waitBytes)
	close(s.ready)
}

// loadNeg reads the session's items and answers the initial message, or ends
// the session with NEG-ERR: blocked (with the limit as the 4th element) when
// more than MaxSyncEvents events match or the connection's sessions would
// hold more than MaxSyncEvents items together; error when the relay's memory
// budget is full. It runs in one of the relay's MaxSyncLoads slots
// (negQueue.push), which it frees once the session's first answer is queued
// (or it ended), so that a connection's sessions answer in the order their
// loads were granted (a slot freed before the answer let the next session's
// answer overtake it). The items are
// charged to the connection's sync budget as they are read, and stay charged
// until the session ends.
func (c *conn) loadNeg(s *negSession, f nostr.Filter, v protocol.Viewer, msg string) {
	defer close(s.ready)
	c.negMem.Give(s.waitBytes) // (it waits no more)
	defer c.r.negLoads.done()  // after the first answer is queued (deferred calls run last first)
	held, refused := 0, wsconn.Taken
	defer func() { c.negMem.Give(held) }() // unless the session took them (held = 0)
	ctx, cancel := context.WithTimeout(s.ctx, c.r.lv().QueryTimeout)
	take := func(int) bool {
		if refused = c.negMem.Take(negItemBytes, c.negMem.Limit(), false); refused != wsconn.Taken {
			return false
		}
		held += negItemBytes
		return true
	}
	start := time.Now()
	items, err := c.r.sync.SyncItems(ctx, f, v, c.r.cfg.MaxSyncEvents, take)
	cancel()
	c.r.m.querySeconds.WithLabelValues("neg").Observe(time.Since(start).Seconds())
	if err != nil {
		c.negMem.Give(held) // before the NEG-ERR, which needs room too
		held = 0
		if s.ctx.Err() != nil {
			return // closed, replaced, or the connection ended
		}
		switch {
		case errors.Is(err, readpath.ErrTooManySyncItems):
			c.failNeg(s, negErrMsg(s.id, fmt.Sprintf("blocked: more than %d events match, sync with narrower filters", c.r.cfg.MaxSyncEvents),
				c.r.cfg.MaxSyncEvents))
		case errors.Is(err, readpath.ErrSyncBudget) && refused == wsconn.ConnFull:
			c.failNeg(s, negErrMsg(s.id, fmt.Sprintf("blocked: this connection's sync sessions would hold more than %d events together, close one or sync with narrower filters", c.r.cfg.MaxSyncEvents),
				c.r.cfg.MaxSyncEvents))
		case errors.Is(err, readpath.ErrSyncBudget):
			c.failNeg(s, negErrMsg(s.id, reasonNegMemory))
		case errors.Is(err, context.DeadlineExceeded):
			c.failNeg(s, negErrMsg(s.id, reasonQueryTimeout))
		default:
			c.logger().Warn("negentropy query failed", "sub", s.id, "err", err)
			c.failNeg(s, negErrMsg(s.id, reasonQueryFailed))
		}
		return
	}
	srv, err := negentropy.NewServer(items, c.r.cfg.NegFrameLimit)
	items = nil
	if err != nil {
		c.logger().Warn("negentropy session failed", "sub", s.id, "err", err)
		c.failNeg(s, negErrMsg(s.id, reasonNegFailed))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.srv, s.held, held = srv, held, 0
	s.mu.Unlock()
	c.reconcileNeg(s, msg)
}

// onNegMsg answers one NEG-MSG of an open session, in order: it waits until
// the session's items are loaded (a client waits for the session's first
// answer before it sends one; one sent earlier waits for the session's turn
// in the load queue, and the connection's further messages behind it, until
// the session or the connection ends). NEG-MSGs draw on the
// client address's REQ rate (ReqRatePerIP): one over it ends its session.
func (c *conn) onNegMsg(subID, msg string) {
	c.mu.Lock()
	s := c.negs()[subID]
	c.mu.Unlock()
	if s == nil {
		c.enqueue(negErrMsg(subID, reasonNegUnknown))
		return
	}
	if ok, _ := c.r.reqsPerIP.Allow(c.key); !ok {
		c.closeNeg(subID)
		c.enqueue(negErrMsg(subID, reasonNegRate))
		return
	}
	select {
	case <-s.ready:
	case <-s.ctx.Done(): // ended, or the connection is closing: nothing to answer
		return
	}
	c.reconcileNeg(s, msg)
}

// reconcileNeg runs one round, once one of the relay's NegConcurrency slots is
// free (it gives up when the session or the connection ends first). A message
// the library may not see (see negentropy.Check), or any failure of it, ends
// the session with NEG-ERR; nothing else is affected.
func (c *conn) reconcileNeg(s *negSession, msg string) {
	select {
	case c.r.negSlots <- struct{}{}:
	case <-s.ctx.Done(): // (a child of the connection's)
		return
	}
	defer func() { <-c.r.negSlots }()
	s.mu.Lock()
	if s.closed || s.srv == nil {
		s.mu.Unlock()
		return // ended meanwhile; its final message, if any, was sent
	}
	out, err := s.srv.Reconcile(msg)
	if err != nil {
		s.mu.Unlock()
		if errors.Is(err, negentropy.ErrPanic) {
			c.logger().Warn("negentropy library panicked on a checked message", "sub", s.id, "err", err)
			err = errors.New("could not reconcile this message")
		}
		c.failNeg(s, negErrMsg(s.id, "invalid: "+err.Error()))
		return
	}
	c.enqueue(negMsg(s.id, out))
	if s.idle == nil {
		s.idle = time.AfterFunc(c.r.cfg.NegIdleTimeout, func() { c.failNeg(s, negErrMsg(s.id, reasonNegIdle)) })
	} else {
		s.idle.Reset(c.r.cfg.NegIdleTimeout)
	}
	s.mu.Unlock()
}

// failNeg ends s and sends its final message, unless something ended it first.
func (c *conn) failNeg(s *negSession, final []byte) {
	if c.endNeg(s) {
		c.enqueue(final)
	}
}

// endNeg ends s: it forgets it, stops its timer, cancels its query and drops its
// items, giving their bytes back to the connection's sync budget. It reports
// whether this call ended it (the first one does).
func (c *conn) endNeg(s *negSession) bool {
	c.mu.Lock()
	if negs := c.negs(); negs[s.id] == s {
		delete(negs, s.id)
	}
	c.mu.Unlock()
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.srv = nil
	c.negMem.Give(s.held)
	s.held = 0
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	s.cancel()
	if c.r.negLoads.remove(c, s) { // (after cancel: see negQueue.push)
		c.negMem.Give(s.waitBytes)
		close(s.ready) // (its load never runs)
	}
	return first
}

// closeNeg ends the session subID, if open, without a message (NEG-CLOSE, or
// a NEG-OPEN reusing the id), and waits until its query goroutine has ended.
func (c *conn) closeNeg(subID string) {
	c.mu.Lock()
	s := c.negs()[subID]
	c.mu.Unlock()
	if s == nil {
		return
	}
	c.endNeg(s)
	<-s.ready
}
