package relay

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// Reasons the relay itself gives (the protocol package gives the validation ones).
const (
	reasonEventRateIP     = "rate-limited: slow down, too many events from your address"
	reasonEventRatePubkey = "rate-limited: slow down, too many events from this author"
	reasonReqRate         = "rate-limited: slow down, too many subscriptions from your address"
	reasonAuthForWrites   = "auth-required: this relay only accepts events from authenticated clients"
	reasonAuthForReads    = "auth-required: this relay only serves authenticated clients"
	reasonAuthForPrivate  = "auth-required: direct messages (kinds 4 and 1059) are served only to their recipients: authenticate (NIP-42)"
	reasonPrivateNoAuth   = "restricted: direct messages (kinds 4 and 1059) are served only to authenticated recipients, and this relay does not offer authentication"
	reasonProtectedNoAuth = "restricted: protected events (NIP-70) need authentication, which this relay does not offer"
	reasonProtectedAuth   = "auth-required: this event may only be published by its author"
	reasonProtectedOther  = "restricted: this event may only be published by its author"
	reasonAuthDisabled    = "restricted: this relay does not support authentication"

	reasonGroupAuth        = "auth-required: this group is private: its members read it after authenticating (NIP-42)"
	reasonGroupNoAuth      = "restricted: this group is private: its members read it after authenticating, which this relay does not offer"
	reasonGroupNotMember   = "restricted: this group is private: only its members read it"
	reasonGroupWriteAuth   = "auth-required: this group is private: authenticate (NIP-42) to write to it"
	reasonGroupWriteNoAuth = "restricted: this group is private: writing to it needs authentication, which this relay does not offer"
	reasonShuttingDown     = "error: relay is shutting down, try again later"
	reasonIngestFailed     = "error: could not store the event, try again later"
	reasonEphemeralFailed  = "error: could not relay the event, try again later"
	reasonTooManySubs      = "error: too many subscriptions"
	reasonQueryTimeout     = "error: query timed out"
	reasonQueryFailed      = "error: could not run the query"
)

// handle answers one client message. It runs on the connection's reading turn, so messages
// of one connection are handled in order; queries run in goroutines of their own.
func (c *conn) handle(data []byte) {
	msg, err := protocol.ParseClientMessage(data, c.r.limits())
	if err != nil {
		c.r.m.messages.WithLabelValues("invalid").Inc()
		c.parseFailed(err)
		return
	}
	c.r.m.messages.WithLabelValues(msg.Type).Inc()
	switch msg.Type {
	case protocol.TypeEvent:
		if !c.trackEvent() {
			return // (read after the connection's close began: see trackEvent)
		}
		if !c.onEvent(msg.Event) {
			c.eventDone()
		}
	case protocol.TypeReq:
		c.onReq(msg.SubID, msg.Filters)
	case protocol.TypeCount:
		c.onCount(msg.SubID, msg.Filters)
	case protocol.TypeClose:
		c.closeSub(msg.SubID)
	case protocol.TypeAuth:
		c.onAuth(msg.Event)
	case protocol.TypeNegOpen:
		c.onNegOpen(msg.SubID, msg.Filters[0], msg.Neg)
	case protocol.TypeNegMsg:
		c.onNegMsg(msg.SubID, msg.Neg)
	case protocol.TypeNegClose:
		c.closeNeg(msg.SubID)
	}
}

// parseFailed answers an unparseable message as precisely as its readable part
// allows: OK false for an EVENT with a readable id, CLOSED for a REQ or COUNT with
// a readable subscription id, NEG-ERR for a NEG-* message with one (its session
// ends), a NOTICE otherwise.
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
	case (perr.Type == protocol.TypeNegOpen || perr.Type == protocol.TypeNegMsg || perr.Type == protocol.TypeNegClose) && perr.SubID != "":
		c.closeNeg(perr.SubID)
		c.enqueue(negErrMsg(perr.SubID, perr.Reason))
	default:
		c.enqueue(noticeMsg(perr.Reason))
	}
}

// answer sends the OK for an EVENT and counts it.
func (c *conn) answer(id string, ok bool, reason string) {
	c.r.m.events.WithLabelValues(resultLabel(ok, reason)).Inc()
	c.enqueue(okMsg(id, ok, reason))
}

// trackEvent counts an EVENT as in flight (conn.inflight) before it is
// handled, or reports false when the connection's close has begun: such an
// EVENT is not handled, and its client, which gets no OK for it, sends it
// again on its next connection. Every EVENT counted gets its OK before a
// restart's close frame (closeRestart: the writer's goodbye waits for
// inflight to reach zero); eventDone ends the count once the OK is queued.
func (c *conn) trackEvent() bool {
	c.inflight.Add(1)
	// (The close sets its mode, then the writer reads inflight; here inflight
	// is raised, then the mode read: either the writer waits for this EVENT,
	// or this EVENT sees the close.)
	if c.closing() {
		c.eventDone()
		return false
	}
	return true
}

// eventDone ends an EVENT's count (trackEvent), after its OK was queued; the
// last one of a closing connection wakes the writer for its goodbye.
func (c *conn) eventDone() {
	if c.inflight.Add(-1) == 0 && c.closing() {
		c.kick()
	}
}

// onEvent admits an event and then: publishes an ephemeral one to every relay
// process's subscribers and answers OK; hands any other to the batcher, whose
// answer (after the commit) becomes the OK. It reports whether the batcher
// took it: its reply then queues the OK and calls eventDone; otherwise the
// OK is queued when onEvent returns.
func (c *conn) onEvent(ev *nostr.Event) bool {
	if reason := nodeKindReason(ev); reason != "" {
		c.answer(ev.ID, false, reason)
		return false
	}
	if reason := c.admit(ev); reason != "" {
		c.r.m.countGroupEvent(ev, protocol.Verdict{Message: reason})
		c.answer(ev.ID, false, reason)
		return false
	}
	if ok, reason, done := c.membershipEvent(ev); done {
		c.answer(ev.ID, ok, reason)
		return false
	}
	if protocol.ClassOf(ev.Kind) == protocol.Ephemeral {
		ok, reason := c.publishEphemeral(ev)
		c.answer(ev.ID, ok, reason)
		return false
	}
	if !c.r.batcher.submit(ev, func(res IngestResult) {
		c.r.m.countGroupEvent(ev, res)
		if res.Withheld {
			// (before the OK: once its author has the answer, the event is
			// queued to every live subscriber of this process allowed it)
			c.r.fanoutWithheld(context.Background(), ev)
		}
		c.answer(ev.ID, res.OK, res.Message)
		c.eventDone()
	}) {
		c.answer(ev.ID, false, reasonShuttingDown)
		return false
	}
	return true
}

// publishEphemeral delivers an ephemeral event live (never stored): through the
// bus to every relay process sharing the database, or to this process's
// subscribers when there is no bus. It runs on the connection's reading turn, so a client
// that floods ephemeral events waits for each (and the per-IP and per-author
// rates bound them). It returns the OK flag and message.
func (c *conn) publishEphemeral(ev *nostr.Event) (bool, string) {
	if c.r.ephemeral == nil {
		c.r.fanout(ev, 0)
		return true, ""
	}
	ctx, cancel := c.childContext(c.r.cfg.IngestTimeout)
	defer cancel()
	if err := c.r.ephemeral.Publish(ctx, ev); err != nil {
		c.logger().Warn("publish ephemeral event failed", "err", err)
		return false, reasonEphemeralFailed
	}
	return true, ""
}

// admit runs every check an event must pass before it is stored or fanned out
// and returns "" or the OK reason: the connection's own (address rate, AUTH for
// writes), then the admission chain with this connection's author budget and
// NIP-70 check (internal/admission).
func (c *conn) admit(ev *nostr.Event) string {
	if ok, _ := c.r.eventsPerIP.Allow(c.key); !ok {
		return reasonEventRateIP
	}
	if c.r.cfg.Auth.RequiredForWrites && len(c.authed()) == 0 {
		c.sendChallenge()
		return reasonAuthForWrites
	}
	if reason := c.groupWriteReason(ev); reason != "" {
		return reason
	}
	chain := c.r.admission
	chain.Limits = c.r.limits()
	return chain.Check(ev, c.r.now(), c)
}

// AuthorReason spends one event of the author's rate budget
// (admission.Conn).
func (c *conn) AuthorReason(pubkey string) string {
	if ok, _ := c.r.eventsPerPubkey.Allow(pubkey); !ok {
		return reasonEventRatePubkey
	}
	return ""
}

// ProtectedReason lets a protected (NIP-70) event through only from its
// authenticated author, and challenges a client that has not authenticated
// (admission.Conn).
func (c *conn) ProtectedReason(ev *nostr.Event) string {
	_, isAuthor := c.authed()[ev.PubKey]
	switch {
	case !c.r.cfg.Auth.Enabled:
		return reasonProtectedNoAuth
	case len(c.authed()) == 0:
		c.sendChallenge()
		return reasonProtectedAuth
	case !isAuthor:
		return reasonProtectedOther
	}
	return ""
}

// onAuth verifies a NIP-42 AUTH event and authenticates the connection as its
// author. A connection may authenticate as several pubkeys.
func (c *conn) onAuth(ev *nostr.Event) {
	if !c.authOn() {
		c.enqueue(okMsg(ev.ID, false, reasonAuthDisabled))
		return
	}
	if ok, _ := c.r.eventsPerIP.Allow(c.key); !ok {
		c.enqueue(okMsg(ev.ID, false, reasonEventRateIP))
		return
	}
	// REQs held for this AUTH (signin.go) run after its OK, whatever it says.
	c.authTried = true
	defer c.releaseHeld()
	if reason := protocol.ValidateAuthEvent(ev, c.challengeText(), c.r.Audience(), c.r.now()); reason != "" {
		c.enqueue(okMsg(ev.ID, false, reason))
		return
	}
	x := c.extra()
	if x.authed == nil {
		x.authed = make(map[string]struct{}, 1)
	}
	x.authed[ev.PubKey] = struct{}{}
	c.logger().Debug("authenticated", "pubkey", ev.PubKey)
	c.enqueue(okMsg(ev.ID, true, ""))
}

// checkRead runs the checks shared by REQ and COUNT and returns the filters to run,
// or "" and the CLOSED reason. A filter that asks for private kinds
// (protocol.AsksPrivate) from a connection that has not authenticated is
// answered auth-required, after the challenge when the connection has not had
// it yet (NIP-42); other filters are served minus what the reader may not see
// (protocol.Viewer). A client that authenticates and sends the REQ again gets
// its whole answer. A filter that names kind 9009 (NIP-29 invite codes,
// withheld.go) is answered the same way. Filters naming a private group are
// answered as groupReadReason says.
func (c *conn) checkRead(filters []nostr.Filter) ([]nostr.Filter, string) {
	if c.r.cfg.Auth.RequiredForReads && len(c.authed()) == 0 {
		c.sendChallenge()
		return nil, reasonAuthForReads
	}
	if ok, _ := c.r.reqsPerIP.Allow(c.key); !ok {
		return nil, reasonReqRate
	}
	out := make([]nostr.Filter, len(filters))
	for i, f := range filters {
		nf, reason := protocol.ValidateFilter(f, c.r.limits())
		if reason != "" {
			return nil, reason
		}
		out[i] = nf
	}
	if len(c.authed()) == 0 && slices.ContainsFunc(out, protocol.AsksPrivate) {
		if !c.authOn() {
			return nil, reasonPrivateNoAuth
		}
		c.sendChallenge()
		return nil, reasonAuthForPrivate
	}
	if len(c.authed()) == 0 && c.authOn() && c.r.cfg.Groups && c.r.withheld != nil && slices.ContainsFunc(out, asksInvites) {
		c.sendChallenge()
		return nil, reasonAuthForInvites
	}
	if reason := c.groupReadReason(out, c.viewer()); reason != "" {
		return nil, reason
	}
	return out, ""
}

// viewer is who this connection reads as: its authenticated pubkeys (sorted). It
// is taken when a REQ or COUNT arrives (reading turn); a later AUTH does not
// widen a running subscription (clients send the REQ again after AUTH).
func (c *conn) viewer() protocol.Viewer {
	if len(c.authed()) == 0 {
		return protocol.Viewer{Groups: c.r.groups}
	}
	v := protocol.Viewer{Authed: slices.Sorted(maps.Keys(c.authed())), Groups: c.r.groups}
	for _, pk := range v.Authed {
		if pk == c.r.cfg.Info.Self || slices.Contains(c.r.lv().GroupAdmins, pk) {
			v.AllGroups = true
		}
	}
	return v
}

// groupReadReason answers a REQ or COUNT whose filters name (#h) a private
// group the reader may not read (NIP-29 with NIP-42): auth-required, after
// the challenge, from a connection that has not authenticated, so that apps
// authenticate and ask again; restricted from one authenticated as no
// member. A hidden group answers a non-member as an unknown id does (its
// events are not there for them): nothing to say; so does a deleted group,
// to everyone (no one reads it: authenticating would not help). "" for
// everything else; the query keeps out what the reader may not see either
// way.
func (c *conn) groupReadReason(filters []nostr.Filter, v protocol.Viewer) string {
	if v.AllGroups {
		return ""
	}
	var ids []string
	for _, f := range filters {
		ids = append(ids, protocol.GroupsNamed(f)...)
	}
	if len(ids) == 0 {
		return ""
	}
	rules := c.groupRules(ids)
	for _, id := range ids {
		private, hidden, member := rules.Rule(id, v.Authed)
		switch {
		case !private || member || rules.deleted(id):
		case len(v.Authed) == 0 && !c.authOn():
			return reasonGroupNoAuth
		case len(v.Authed) == 0:
			c.sendChallenge()
			return reasonGroupAuth
		case !hidden:
			return reasonGroupNotMember
		}
	}
	return ""
}

// groupRules is the rule of groups ids as the database has it now
// (GroupAccessStore: one primary-key read of a few rows, on the reader
// goroutine, only for messages that name a group), so that an answer right
// after a group turned private is already this one; the relay's gate when
// the store cannot say, or the read fails.
func (c *conn) groupRules(ids []string) *groupGate {
	ga := c.r.follower.access
	if ga == nil {
		return c.r.groups
	}
	ctx, cancel := c.childContext(c.r.lv().QueryTimeout)
	defer cancel()
	rules, err := ga.GroupAccess(ctx, ids)
	if err != nil {
		c.logger().Warn("read group access failed; the relay's copy answers", "err", err)
		return c.r.groups
	}
	g := newGroupGate()
	g.set(nil, rules)
	return g
}

// groupWriteReason challenges a connection that has not authenticated and
// sends an event to a private group (called by admit): its OK answers
// (duplicate:, pending) are for members, and apps authenticate and send it
// again. The store then decides it by its author (a member, a join request).
// An event to a deleted group is left to the store, which refuses it
// whoever sends it (restricted: this group was deleted).
func (c *conn) groupWriteReason(ev *nostr.Event) string {
	if len(c.authed()) > 0 || !protocol.IsGroupEvent(ev) {
		return ""
	}
	id, _ := protocol.GroupTag(ev)
	rules := c.groupRules([]string{id})
	if private, _, _ := rules.Rule(id, nil); !private || rules.deleted(id) {
		return ""
	}
	if !c.authOn() {
		return reasonGroupWriteNoAuth
	}
	c.sendChallenge()
	return reasonGroupWriteAuth
}

// onReq opens (or replaces) a subscription: it is filed for live events first,
// then its query runs; see subscription for the ordering promise. Any refusal
// also closes an open subscription of the same id, since the client will consider
// it closed.
func (c *conn) onReq(subID string, filters []nostr.Filter) {
	c.closeSub(subID)
	asked := filters
	filters, reason := c.checkRead(filters)
	if reason != "" {
		if !c.holdForAuth(subID, asked, reason) {
			c.enqueue(closedMsg(subID, reason))
		}
		return
	}
	if c.full() {
		c.enqueue(closedMsg(subID, reasonTooManySubs))
		return
	}
	// A NIP-43 invite made for this REQ (membership.go): only once the REQ
	// is accepted, so that every claim minted is delivered. Subscriptions
	// are filed by this (the reader) goroutine only, so the connection
	// cannot fill up meanwhile.
	var invite []byte
	if asksInvite(filters, c.r.cfg.Info.Self) {
		if invite, reason = c.inviteFor(); reason != "" {
			if !c.holdForAuth(subID, asked, reason) {
				c.enqueue(closedMsg(subID, reason))
			}
			return
		}
	}
	c.mu.Lock()
	s, ctx := newSubscription(c, subID, filters, c.viewer())
	if wf := c.r.withheldFilters(filters, s.viewer()); wf != nil {
		s.withheld = &subWithheld{filters: wf}
	}
	c.subs.put(s)
	c.mu.Unlock()
	if invite != nil { // before the query starts: before EOSE
		c.enqueueMsg(s.event(invite))
	}
	c.r.index.add(s)
	c.r.m.subscriptions.Inc()
	if !c.startQuery(func() { c.runQuery(s, ctx) }) {
		s.query.Done()
	}
}

// full reports whether the connection holds as many subscriptions (REQ and
// NIP-77) as it may.
func (c *conn) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs.len()+len(c.negs()) >= c.r.lv().MaxSubscriptions
}

// startQuery runs fn in a goroutine once one of the connection's query slots is
// free; it waits for one (the client's further messages wait too). It reports
// false, without running fn, when the connection closes first.
func (c *conn) startQuery(fn func()) bool {
	for {
		c.mu.Lock()
		if int(c.running) < c.r.cfg.MaxQueriesPerConn {
			c.running++
			c.mu.Unlock()
			break
		}
		x := c.extra()
		if x.slotFree == nil {
			x.slotFree = make(chan struct{})
		}
		free := x.slotFree
		c.mu.Unlock()
		select {
		case <-free:
		case <-c.context().Done():
			return false
		}
	}
	c.queries.Add(1)
	go func() {
		defer c.queries.Done()
		defer c.endQuerySlot()
		fn()
	}()
	return true
}

// endQuerySlot frees the query slot of an ended query goroutine and wakes a
// startQuery waiting for one.
func (c *conn) endQuerySlot() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	if x := c.more.Load(); x != nil && x.slotFree != nil {
		close(x.slotFree)
		x.slotFree = nil
	}
}

func (c *conn) runQuery(s *subscription, sctx context.Context) {
	defer s.query.Done()
	defer s.endQuery()
	// The stored part must hold every row below the follower's start: a
	// snapshot read before the follower knows it (a relay that has just
	// started, as at a restart, filling its event cache) may lack rows
	// the follower then never reads, and the subscription would miss them
	// (test/restart found it). So the query waits for the follower's start,
	// not counted in QueryTimeout. (A relay not serving has no follower: some
	// tests run connections without Serve.)
	if c.r.served.Load() {
		select {
		case <-c.r.follower.ready:
		case <-sctx.Done():
		}
	}
	ctx, cancel := context.WithTimeout(sctx, c.r.lv().QueryTimeout)
	// The rows the query reads are taken from the connection's budget (its
	// bulk part) as they are read; the query stops when it is full, and the
	// answer is what fit: EOSE follows it, and the client pages with until.
	held, stopped := 0, false
	budget := func(n int) bool {
		if c.mem.Take(n, c.mem.BulkLimit(), false) != wsconn.Taken {
			stopped = true
			return false
		}
		held += n
		return true
	}
	// The stored events come with their JSON (readpath.Result.JSON: the
	// store builds it from the stored bytes, without decoding the tags or
	// encoding the event again).
	sv := &servedJSON{}
	start := time.Now()
	// An answer from the event cache holds no memory of its own (its events
	// are the cache's): it is only capped as the rows budget caps a query's
	// (Request.Cap), and its messages take their share of the budget as they
	// are queued.
	res, err := c.r.reads.Read(ctx, readpath.Request{Filters: s.filters, Viewer: s.viewer(), Take: budget,
		Cap: c.mem.BulkLimit()})
	if res.Source == readpath.Cache {
		stopped = res.Stopped // (the cache asked no Take)
	}
	cancel()
	sv.add(res)
	events, seq, replica := res.Events, res.Seq, res.Source == readpath.Replica
	c.r.m.querySeconds.WithLabelValues("req").Observe(time.Since(start).Seconds())
	if err == nil && replica {
		// (the primary's window is read whole; the events it adds take their
		// share of the budget)
		cctx, ccancel := context.WithTimeout(sctx, c.r.lv().QueryTimeout)
		events, seq, err = c.r.handoff(cctx, s, events, sv, seq, stopped, budget)
		ccancel()
	}
	if stopped {
		c.r.m.queryBudgetStops.Inc()
		c.logger().Debug("query stopped at the memory budget", "sub", s.id, "events", len(events), "held_bytes", held)
	}
	if err != nil {
		c.mem.Give(held)
		if sctx.Err() != nil {
			return // closed, replaced, or the connection ended
		}
		reason := reasonQueryFailed
		if errors.Is(err, context.DeadlineExceeded) {
			reason = reasonQueryTimeout
		} else {
			c.logger().Warn("query failed", "sub", s.id, "err", err)
		}
		c.dropSub(s)
		c.enqueue(closedMsg(s.id, reason))
		return
	}
	if res.Source == readpath.Primary && !stopped {
		c.r.offerLearn(s, events, sv, seq)
	}
	if len(s.withheldFilters()) > 0 {
		// After the cache learnt the shared answer (never these). On the
		// primary, after the stored part: a withheld event committed since
		// the subscription was filed is read here or delivered live, and
		// withheldSent keeps it from coming twice.
		wctx, wcancel := context.WithTimeout(sctx, c.r.lv().QueryTimeout)
		events, err = c.r.addWithheld(wctx, s, events, sv)
		wcancel()
		if err != nil {
			c.mem.Give(held)
			if sctx.Err() == nil {
				c.logger().Warn("withheld group events query failed", "sub", s.id, "err", err)
				c.dropSub(s)
				c.enqueue(closedMsg(s.id, reasonQueryFailed))
			}
			return
		}
	}
	s.replay(sctx, events, sv, seq, held)
}

// onCount answers a NIP-45 COUNT.
func (c *conn) onCount(subID string, filters []nostr.Filter) {
	filters, reason := c.checkRead(filters)
	if reason != "" {
		c.enqueue(closedMsg(subID, reason))
		return
	}
	v := c.viewer()
	c.startQuery(func() {
		ctx, cancel := c.childContext(c.r.lv().QueryTimeout)
		start := time.Now()
		n, err := c.r.reads.Count(ctx, filters, v)
		cancel()
		c.r.m.querySeconds.WithLabelValues("count").Observe(time.Since(start).Seconds())
		switch {
		case err == nil:
			c.enqueue(countMsg(subID, n))
		case c.closing():
		case errors.Is(err, context.DeadlineExceeded):
			c.enqueue(closedMsg(subID, reasonQueryTimeout))
		default:
			c.logger().Warn("count failed", "sub", subID, "err", err)
			c.enqueue(closedMsg(subID, reasonQueryFailed))
		}
	})
}

// closeSub closes the subscription subID if it is open, and waits until its query
// goroutine has ended: nothing of it is sent after closeSub returns, so a REQ that
// reuses the id starts clean.
func (c *conn) closeSub(subID string) {
	c.dropHeld(subID)
	c.mu.Lock()
	s := c.subs.take(subID)
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.close()
	c.r.dropSub(s)
	s.query.Wait()
}

// dropSub closes s and forgets it, from a goroutine other than the reader (a
// failed query).
func (c *conn) dropSub(s *subscription) {
	c.mu.Lock()
	c.subs.remove(s)
	c.mu.Unlock()
	s.close()
	c.r.dropSub(s)
}
