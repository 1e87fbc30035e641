package relay

import (
	"context"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// subscription is one REQ of one connection: its normalised filters, registered in
// the relay's subIndex from before its query runs until it is closed.
//
// Ordering promise: the client receives the stored events, then EOSE, then live
// events. Delivery promise: each matching event exactly once per subscription,
// across the stored part and the live part. The outbox seq orders both: the
// query runs in one snapshot and reports the highest outbox seq it holds
// (readpath.Result.Seq), and a live event comes with the seq of the outbox row
// that made it visible (follower); a live event whose seq the snapshot holds is
// skipped, whether it arrives before EOSE (it is held until then) or long
// after (a follower behind the snapshot), since the query saw it or its later
// state. Nothing is missed: the subscription is filed before its query starts,
// so an event whose row is above the snapshot is read by the follower after the
// filing and fanned out to it. A stored part read on a read replica may lie
// below what the follower had read at the filing: before EOSE it is made the
// primary's answer at the primary's outbox head read after the filing, which
// becomes the snapshot (Relay.handoff). An event that becomes visible again
// after the snapshot (a replaceable version whose successor was deleted: a new
// upsert row) is delivered again; an ordinary event has one upsert and arrives
// once.
// Ephemeral events have no seq and are always delivered.
type subscription struct {
	conn    *conn
	next    *subscription // the connection's subList; under conn.mu
	id      string
	head    []byte         // eventHead(id), the start of its EVENT messages
	filters []nostr.Filter // read by its query; nil once the query has ended (endQuery)
	// authed is who reads, when the reader has authenticated (nil: no one
	// has; see viewer): private kinds are delivered to their parties only.
	authed *protocol.Viewer
	// withheld is nil for nearly every subscription: see subWithheld.
	withheld *subWithheld
	entries  []indexEntry  // owned by subIndex; nil while not filed
	one      [1]indexEntry // entries, for a subscription of one filter

	// cancel cancels the query's context (newSubscription returns it to the
	// query goroutine, the only one to read it, so that a live subscription
	// holds no context): when the subscription closes, or the query ends.
	// Under mu once the query may run; nil after endQuery.
	cancel context.CancelFunc
	// query is done when its query goroutine has ended (or did not start): a
	// WaitGroup of one, not a channel, which a live subscription would keep.
	query sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	live     bool      // stored events and EOSE are queued; deliver directly
	snapshot int64     // the stored part's outbox seq; set by replay
	pending  *heldLive // live matches held until EOSE; nil while none is
}

// subWithheld is what a subscription whose reader may read withheld group
// events keeps of them.
type subWithheld struct {
	// filters are the filters that can match withheld group events its
	// reader may read (Relay.withheldFilters): live, Relay.fanoutWithheld
	// delivers by them.
	filters []nostr.Filter
	// sent are the withheld events the stored part holds
	// (Relay.addWithheld): not delivered live again. Under the
	// subscription's mu.
	sent map[string]bool
}

// withheldFilters is subWithheld.filters, nil without.
func (s *subscription) withheldFilters() []nostr.Filter {
	if s.withheld == nil {
		return nil
	}
	return s.withheld.filters
}

// heldLive is the live matches a subscription holds until EOSE.
type heldLive struct {
	msgs  []pendingLive
	bytes int // the total length of their JSON, taken from the connection's budget
}

// len returns the number of matches held (none for a nil heldLive).
func (h *heldLive) len() int {
	if h == nil {
		return 0
	}
	return len(h.msgs)
}

type pendingLive struct {
	seq  int64
	json []byte
	ev   *nostr.Event // (whole: for mayWrite)
}

// event is the EVENT message of evJSON for this subscription (evJSON is
// shared, not copied: see wsconn.Msg).
func (s *subscription) event(evJSON []byte) wsconn.Msg {
	head := s.head
	if head == nil { // (a subscription made by a test, not newSubscription)
		head = eventHead(s.id)
	}
	return wsconn.Msg{Head: head, Body: evJSON}
}

// viewer is who reads the subscription: the connection's viewer (conn.viewer)
// when it was made.
func (s *subscription) viewer() protocol.Viewer {
	if s.authed != nil {
		return *s.authed
	}
	var v protocol.Viewer
	if s.conn != nil { // (a subscription made by a test, not newSubscription, has none)
		v.Groups = s.conn.r.groups
	}
	return v
}

// newSubscription returns the subscription and its query's context, which
// is cancelled when the subscription closes or the connection does. v is
// c.viewer(): the subscription keeps it when it names a pubkey (an anonymous
// reader's is the relay's Groups alone: see viewer).
func newSubscription(c *conn, id string, filters []nostr.Filter, v protocol.Viewer) (*subscription, context.Context) {
	ctx, cancel := c.childContext(0)
	// (id is copied: it is a slice of the REQ message, which the
	// subscription would keep whole; see detach)
	s := &subscription{conn: c, id: strings.Clone(id), head: eventHead(id), filters: filters, cancel: cancel}
	if len(v.Authed) > 0 || v.AllGroups || v.Operator {
		s.authed = &v
	}
	s.query.Add(1)
	return s, ctx
}

// covered reports whether the stored part holds the live event of outbox row
// seq (0: ephemeral, never). replay sets the snapshot once, before it or
// direct delivery reads it: deliver reads it under s.mu, replay in the
// goroutine that set it.
func (s *subscription) covered(seq int64) bool {
	return seq != 0 && seq <= s.snapshot
}

// sentWithheld reports whether the stored part holds ev, a live event
// without an outbox row (seq 0) that may be a withheld group event
// (Relay.fanoutWithheld). Under s.mu, or in replay after the stored part.
func (s *subscription) sentWithheld(seq int64, ev *nostr.Event) bool {
	return seq == 0 && s.withheld != nil && s.withheld.sent[ev.ID]
}

// deliver hands a live event, made visible by outbox row seq (0: ephemeral), to
// the subscription without ever blocking: it is queued on the connection, or
// held until EOSE, or skipped when the stored part holds it. It reports whether
// the event was taken. A connection that cannot keep up is closed as too slow.
func (s *subscription) deliver(ev *nostr.Event, seq int64, evJSON []byte) bool {
	ok, queued := s.take(ev, seq, evJSON)
	if queued {
		s.conn.kickInline()
	}
	return ok
}

// take is deliver under s.mu (ok: the event was taken); queued says the event was put in the send
// queue, for deliver to kick the writer once s.mu is released.
func (s *subscription) take(ev *nostr.Event, seq int64, evJSON []byte) (ok, queued bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, false
	}
	if !s.live {
		if s.pending.len() >= s.conn.maxPendingMsgs() {
			s.conn.tooSlow("too many live events held while a query runs")
			return false, false
		}
		if r := s.conn.mem.Take(len(evJSON), s.conn.mem.Limit(), false); r != wsconn.Taken {
			s.conn.tooSlow(r.String())
			return false, false
		}
		if s.pending == nil {
			s.pending = &heldLive{}
		}
		s.pending.msgs = append(s.pending.msgs, pendingLive{seq: seq, json: evJSON, ev: ev})
		s.pending.bytes += len(evJSON)
		return true, false
	}
	if s.covered(seq) || s.sentWithheld(seq, ev) || !mayWrite(s.viewer(), ev, evJSON) {
		return false, false
	}
	ok = s.conn.push(s.event(evJSON))
	return ok, ok
}

// replay sends the stored events (read in the snapshot that holds the outbox up
// to seq) and EOSE, then the live events held meanwhile that the snapshot does
// not hold, and switches the subscription to direct delivery. It waits for room
// in the send queue (leaving headroom for live traffic) and gives up when the
// subscription or the connection closes. held is what the query's rows took
// from the connection's budget: it is given back event by event as their
// messages are queued (which take their own share), and in whole when replay
// returns.
//
// stored's JSON is sv's (readpath.Result.JSON), or encoded here when sv has
// none. ctx is the query's (newSubscription).
func (s *subscription) replay(ctx context.Context, stored []*nostr.Event, sv *servedJSON, seq int64, held int) {
	c := s.conn
	defer func() { c.mem.Give(held) }()
	// The stored events and EOSE are queued without a kick each and written
	// at once by this goroutine (KickHere: one write for an answer of up to
	// 64 KiB, no writer goroutine between it and the socket); a wait for
	// room kicks the writer first (queueBulk). Whatever way replay ends,
	// what it queued is kicked.
	quiet := true
	defer func() {
		if quiet {
			c.w.KickHere(c)
		}
	}()
	s.mu.Lock()
	s.snapshot = seq
	s.mu.Unlock()
	// The group rule the last check (mayWrite) applies is made at least as
	// new as the stored part, so that it does not keep from a member who
	// just joined what the query rightly gave them; if the follower does
	// not get there in time, the check applies the rule it has (it can
	// only keep more back).
	if s.viewer().Groups != nil && s.viewer().Groups.Any() && c.r.groups != nil &&
		!c.r.groups.waitFor(seq, cacheWait, ctx.Done()) && ctx.Err() == nil {
		c.r.m.groupGateBehind.Inc()
	}
	for i, ev := range stored {
		js := sv.Take(ev)
		if js == nil {
			js = eventJSON(ev)
		}
		stored[i] = nil // (the queued message is all that is kept of it)
		if !mayWrite(s.viewer(), ev, js) {
			c.r.m.groupWithheld.Inc()
			continue
		}
		msg := s.event(js)
		back := min(held, msg.Size())
		c.mem.Give(back)
		held -= back
		if !c.queueBulk(ctx, msg, false) {
			return
		}
	}
	if !c.queueBulk(ctx, plainMsg(eoseMsg(s.id)), false) {
		return
	}
	quiet = false
	c.w.KickHere(c)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		var pending []pendingLive
		if s.pending != nil {
			pending = s.pending.msgs
		}
		s.pending = nil
		if len(pending) == 0 {
			s.live = true
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for i, p := range pending {
			c.mem.Give(len(p.json)) // (taken by deliver)
			if s.covered(p.seq) || s.sentWithheld(p.seq, p.ev) || !mayWrite(s.viewer(), p.ev, p.json) {
				continue
			}
			if !c.enqueueBulk(ctx, s.event(p.json)) {
				for _, rest := range pending[i+1:] {
					c.mem.Give(len(rest.json))
				}
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
	if s.pending != nil {
		s.conn.mem.Give(s.pending.bytes)
	}
	s.pending = nil
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// endQuery cancels the query's context once its query goroutine is done
// with it (the query's work is over either way), and drops the
// subscription's filters: the query was their last reader (the live fan-out
// matches the index entries' LiveFilters), and a live subscription keeps no
// tag map.
func (s *subscription) endQuery() {
	s.mu.Lock()
	cancel := s.cancel
	s.cancel = nil
	s.filters = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
