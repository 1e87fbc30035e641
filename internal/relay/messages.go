package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Reasons the relay itself gives (the protocol package gives the validation ones).
const (
	reasonEventRateIP     = "rate-limited: slow down, too many events from your address"
	reasonEventRatePubkey = "rate-limited: slow down, too many events from this author"
	reasonBannedPubkey    = "blocked: this pubkey is banned from this relay"
	reasonBannedEvent     = "blocked: this event is banned from this relay"
	reasonKindNotAccepted = "blocked: this kind is not accepted on this relay"
	reasonReqRate         = "rate-limited: slow down, too many subscriptions from your address"
	reasonAuthForWrites   = "auth-required: this relay only accepts events from authenticated clients"
	reasonAuthForReads    = "auth-required: this relay only serves authenticated clients"
	reasonProtectedNoAuth = "restricted: protected events (NIP-70) need authentication, which this relay does not offer"
	reasonProtectedAuth   = "auth-required: this event may only be published by its author"
	reasonProtectedOther  = "restricted: this event may only be published by its author"
	reasonAuthDisabled    = "restricted: this relay does not support authentication"
	reasonShuttingDown    = "error: relay is shutting down, try again later"
	reasonIngestFailed    = "error: could not store the event, try again later"
	reasonTooManySubs     = "error: too many subscriptions"
	reasonQueryTimeout    = "error: query timed out"
	reasonQueryFailed     = "error: could not run the query"
)

// handle answers one client message. It runs on the reader goroutine, so messages
// of one connection are handled in order; queries run in goroutines of their own.
func (c *conn) handle(data []byte) {
	msg, err := protocol.ParseClientMessage(data, c.r.cfg.Limits)
	if err != nil {
		c.r.m.messages.WithLabelValues("invalid").Inc()
		c.parseFailed(err)
		return
	}
	c.r.m.messages.WithLabelValues(msg.Type).Inc()
	switch msg.Type {
	case protocol.TypeEvent:
		c.onEvent(msg.Event)
	case protocol.TypeReq:
		c.onReq(msg.SubID, msg.Filters)
	case protocol.TypeCount:
		c.onCount(msg.SubID, msg.Filters)
	case protocol.TypeClose:
		c.closeSub(msg.SubID)
	case protocol.TypeAuth:
		c.onAuth(msg.Event)
	}
}

// parseFailed answers an unparseable message as precisely as its readable part
// allows: OK false for an EVENT with a readable id, CLOSED for a REQ or COUNT with
// a readable subscription id, a NOTICE otherwise.
func (c *conn) parseFailed(err error) {
	var perr *protocol.ParseError
	if !errors.As(err, &perr) {
		c.enqueue(noticeMsg("invalid: " + err.Error()))
		return
	}
	switch {
	case perr.Type == protocol.TypeEvent && perr.EventID != "":
		c.answer(perr.EventID, false, perr.Reason)
	case (perr.Type == protocol.TypeReq || perr.Type == protocol.TypeCount) && perr.SubID != "":
		if perr.Type == protocol.TypeReq {
			c.closeSub(perr.SubID)
		}
		c.enqueue(closedMsg(perr.SubID, perr.Reason))
	default:
		c.enqueue(noticeMsg(perr.Reason))
	}
}

// answer sends the OK for an EVENT and counts it.
func (c *conn) answer(id string, ok bool, reason string) {
	c.r.m.events.WithLabelValues(resultLabel(ok, reason)).Inc()
	c.enqueue(okMsg(id, ok, reason))
}

// onEvent admits an event and then: fans an ephemeral one out at once and answers
// OK; hands any other to the batcher, whose answer (after the commit) becomes the OK.
func (c *conn) onEvent(ev *nostr.Event) {
	if reason := c.admit(ev); reason != "" {
		c.answer(ev.ID, false, reason)
		return
	}
	if protocol.ClassOf(ev.Kind) == protocol.Ephemeral {
		c.r.fanout(ev)
		c.answer(ev.ID, true, "")
		return
	}
	if !c.r.batcher.submit(ev, func(res IngestResult) { c.answer(ev.ID, res.OK, res.Message) }) {
		c.answer(ev.ID, false, reasonShuttingDown)
	}
}

// admit runs every check an event must pass before it is stored or fanned out,
// cheapest first, and returns "" or the OK reason.
func (c *conn) admit(ev *nostr.Event) string {
	cfg := &c.r.cfg
	if !c.r.eventsPerIP.allow(c.key) {
		return reasonEventRateIP
	}
	if cfg.Auth.RequiredForWrites && len(c.authed) == 0 {
		return reasonAuthForWrites
	}
	if reason := protocol.ValidateEvent(ev, c.r.now(), cfg.Limits); reason != "" {
		return reason
	}
	if reason := PolicyReason(c.r.policy, ev); reason != "" {
		return reason
	}
	if reason := RankReason(c.r.ranks, ev); reason != "" {
		return reason
	}
	if !c.r.eventsPerPubkey.allow(ev.PubKey) {
		return reasonEventRatePubkey
	}
	if protocol.Protected(ev) {
		_, isAuthor := c.authed[ev.PubKey]
		switch {
		case !cfg.Auth.Enabled:
			return reasonProtectedNoAuth
		case len(c.authed) == 0:
			return reasonProtectedAuth
		case !isAuthor:
			return reasonProtectedOther
		}
	}
	return ""
}

// RankReason returns why the spam gate g (relay --min-rank) refuses ev, or "".
// Identity events (profiles, follow and mute lists, NIP-85 assertions) and NIP-09
// deletions are exempt: a newcomer can still say who they are, follow others
// and take back what they said; the gate decides who gets to post.
func RankReason(g RankGate, ev *nostr.Event) string {
	if g == nil || g.Threshold() <= 0 || protocol.IsIdentityKind(ev.Kind) || ev.Kind == nostr.KindDeletion || g.Admit(ev.PubKey) {
		return ""
	}
	return fmt.Sprintf("blocked: this relay accepts posts from keys with a web-of-trust rank of at least %d (NIP-85 assertions by %s); "+
		"yours is lower: get followed by members of this community", g.Threshold(), cmp.Or(g.Provider(), "its trust provider"))
}

// PolicyReason returns why the management policy p refuses ev (a banned author
// or event, a kind not accepted), or "" when it does not or p is nil. The relay
// asks it of every EVENT; `cnctl import` asks it of every imported event.
func PolicyReason(p Policy, ev *nostr.Event) string {
	if p == nil {
		return ""
	}
	switch {
	case p.PubkeyBanned(ev.PubKey):
		return reasonBannedPubkey
	case p.EventBanned(ev.ID):
		return reasonBannedEvent
	case !p.KindAccepted(ev.Kind):
		return reasonKindNotAccepted
	}
	return ""
}

// onAuth verifies a NIP-42 AUTH event and authenticates the connection as its
// author. A connection may authenticate as several pubkeys.
func (c *conn) onAuth(ev *nostr.Event) {
	if c.challenge == "" {
		c.enqueue(okMsg(ev.ID, false, reasonAuthDisabled))
		return
	}
	if !c.r.eventsPerIP.allow(c.key) {
		c.enqueue(okMsg(ev.ID, false, reasonEventRateIP))
		return
	}
	if reason := protocol.ValidateAuthEvent(ev, c.challenge, c.r.relayURL(c.host), c.r.now()); reason != "" {
		c.enqueue(okMsg(ev.ID, false, reason))
		return
	}
	c.authed[ev.PubKey] = struct{}{}
	c.log.Debug("authenticated", "pubkey", ev.PubKey)
	c.enqueue(okMsg(ev.ID, true, ""))
}

// checkRead runs the checks shared by REQ and COUNT and returns the filters to run,
// or "" and the CLOSED reason.
func (c *conn) checkRead(filters []nostr.Filter) ([]nostr.Filter, string) {
	if c.r.cfg.Auth.RequiredForReads && len(c.authed) == 0 {
		return nil, reasonAuthForReads
	}
	if !c.r.reqsPerIP.allow(c.key) {
		return nil, reasonReqRate
	}
	out := make([]nostr.Filter, len(filters))
	for i, f := range filters {
		nf, reason := protocol.ValidateFilter(f, c.r.cfg.Limits)
		if reason != "" {
			return nil, reason
		}
		out[i] = nf
	}
	return out, ""
}

// onReq opens (or replaces) a subscription: it is filed for live events first,
// then its query runs; see subscription for the ordering promise. Any refusal
// also closes an open subscription of the same id, since the client will consider
// it closed.
func (c *conn) onReq(subID string, filters []nostr.Filter) {
	c.closeSub(subID)
	filters, reason := c.checkRead(filters)
	if reason != "" {
		c.enqueue(closedMsg(subID, reason))
		return
	}
	c.mu.Lock()
	if len(c.subs) >= c.r.cfg.MaxSubscriptions {
		c.mu.Unlock()
		c.enqueue(closedMsg(subID, reasonTooManySubs))
		return
	}
	s := newSubscription(c, subID, filters)
	c.subs[subID] = s
	c.mu.Unlock()
	c.r.index.add(s)
	c.r.m.subscriptions.Inc()
	if !c.startQuery(func() { c.runQuery(s) }) {
		close(s.done)
	}
}

// startQuery runs fn in a goroutine once one of the connection's query slots is
// free; it waits for one (the client's further messages wait too). It reports
// false, without running fn, when the connection closes first.
func (c *conn) startQuery(fn func()) bool {
	select {
	case c.sem <- struct{}{}:
	case <-c.ctx.Done():
		return false
	}
	c.queries.Add(1)
	go func() {
		defer c.queries.Done()
		defer func() { <-c.sem }()
		fn()
	}()
	return true
}

func (c *conn) runQuery(s *subscription) {
	defer close(s.done)
	ctx, cancel := context.WithTimeout(s.ctx, c.r.cfg.QueryTimeout)
	start := time.Now()
	events, err := c.r.store.Query(ctx, s.filters)
	cancel()
	c.r.m.querySeconds.WithLabelValues("req").Observe(time.Since(start).Seconds())
	if err != nil {
		if s.ctx.Err() != nil {
			return // closed, replaced, or the connection ended
		}
		reason := reasonQueryFailed
		if errors.Is(err, context.DeadlineExceeded) {
			reason = reasonQueryTimeout
		} else {
			c.log.Warn("query failed", "sub", s.id, "err", err)
		}
		c.dropSub(s)
		c.enqueue(closedMsg(s.id, reason))
		return
	}
	s.replay(events)
}

// onCount answers a NIP-45 COUNT.
func (c *conn) onCount(subID string, filters []nostr.Filter) {
	filters, reason := c.checkRead(filters)
	if reason != "" {
		c.enqueue(closedMsg(subID, reason))
		return
	}
	c.startQuery(func() {
		ctx, cancel := context.WithTimeout(c.ctx, c.r.cfg.QueryTimeout)
		start := time.Now()
		n, err := c.r.store.Count(ctx, filters)
		cancel()
		c.r.m.querySeconds.WithLabelValues("count").Observe(time.Since(start).Seconds())
		switch {
		case err == nil:
			c.enqueue(countMsg(subID, n))
		case c.ctx.Err() != nil:
		case errors.Is(err, context.DeadlineExceeded):
			c.enqueue(closedMsg(subID, reasonQueryTimeout))
		default:
			c.log.Warn("count failed", "sub", subID, "err", err)
			c.enqueue(closedMsg(subID, reasonQueryFailed))
		}
	})
}

// closeSub closes the subscription subID if it is open, and waits until its query
// goroutine has ended: nothing of it is sent after closeSub returns, so a REQ that
// reuses the id starts clean.
func (c *conn) closeSub(subID string) {
	c.mu.Lock()
	s := c.subs[subID]
	delete(c.subs, subID)
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.close()
	c.r.dropSub(s)
	<-s.done
}

// dropSub closes s and forgets it, from a goroutine other than the reader (a
// failed query).
func (c *conn) dropSub(s *subscription) {
	c.mu.Lock()
	if c.subs[s.id] == s {
		delete(c.subs, s.id)
	}
	c.mu.Unlock()
	s.close()
	c.r.dropSub(s)
}
