package relay

import (
	"context"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// subscription is one REQ of one connection: its normalised filters, registered in
// the relay's subIndex from before its query runs until it is closed.
//
// Ordering promise: the client receives the stored events, then EOSE, then live
// events. Live matches that arrive while the query runs are held in pending and
// sent right after EOSE, minus those the query already returned; so an event
// committed around the time of the REQ is delivered at least once and usually
// exactly once (a live copy that arrives after EOSE is not checked against the
// stored ones; clients deduplicate by id anyway).
type subscription struct {
	conn    *conn
	id      string
	filters []nostr.Filter
	entries []*indexEntry // owned by subIndex

	ctx    context.Context // cancelled when the subscription closes
	cancel context.CancelFunc
	done   chan struct{} // closed when its query goroutine has ended

	mu           sync.Mutex
	closed       bool
	live         bool          // stored events and EOSE are queued; deliver directly
	pending      []pendingLive // live matches held until EOSE
	pendingBytes int           // the total length of their JSON
}

type pendingLive struct {
	id   string
	json []byte
}

func newSubscription(c *conn, id string, filters []nostr.Filter) *subscription {
	ctx, cancel := context.WithCancel(c.ctx)
	return &subscription{conn: c, id: id, filters: filters, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// deliver hands a live event to the subscription without ever blocking: it is
// queued on the connection, or held until EOSE. It reports whether the event was
// taken. A connection that cannot keep up is closed as too slow.
func (s *subscription) deliver(id string, evJSON []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if !s.live {
		if len(s.pending) > 0 && (len(s.pending) >= s.conn.maxPendingMsgs() || s.pendingBytes+len(evJSON) > s.conn.maxPendingBytes()) {
			s.conn.tooSlow()
			return false
		}
		s.pending = append(s.pending, pendingLive{id: id, json: evJSON})
		s.pendingBytes += len(evJSON)
		return true
	}
	return s.conn.enqueue(eventMsg(s.id, evJSON))
}

// replay sends the stored events and EOSE, then the live events held meanwhile,
// and switches the subscription to direct delivery. It waits for room in the send
// queue (leaving headroom for live traffic) and gives up when the subscription or
// the connection closes.
func (s *subscription) replay(stored []*nostr.Event) {
	c := s.conn
	seen := make(map[string]struct{}, len(stored))
	for _, ev := range stored {
		seen[ev.ID] = struct{}{}
		if !c.enqueueBulk(s.ctx, eventMsg(s.id, eventJSON(ev))) {
			return
		}
	}
	if !c.enqueueBulk(s.ctx, eoseMsg(s.id)) {
		return
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		held := s.pending
		s.pending, s.pendingBytes = nil, 0
		if len(held) == 0 {
			s.live = true
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, p := range held {
			if _, dup := seen[p.id]; dup {
				continue
			}
			if !c.enqueueBulk(s.ctx, eventMsg(s.id, p.json)) {
				return
			}
		}
	}
}

// close stops all delivery to the subscription and cancels its query. It does not
// wait for the query goroutine; see conn.closeSub.
func (s *subscription) close() {
	s.mu.Lock()
	s.closed = true
	s.pending, s.pendingBytes = nil, 0
	s.mu.Unlock()
	s.cancel()
}
