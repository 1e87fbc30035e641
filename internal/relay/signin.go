package relay

import (
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Signing in (NIP-42) as every client pattern does it.
//
// Apps sign in when they see an AUTH challenge, and they see it only if
// their signer is attached by then: a nostr-tools Relay given its onauth
// right after Relay.connect has already read (and dropped) the challenge sent
// on connect, and an app that sends its inbox REQ at the instant it connects
// crosses that challenge on the wire. So:
//
//   - Every auth-required answer to a connection that has not authenticated
//     is preceded by the challenge again (sendChallenge), up to maxChallenges
//     per connection, so that a client cannot make the relay repeat itself
//     without end. The challenge's value does not change: an AUTH signed for
//     any challenge message the connection was sent is accepted.
//   - A REQ that needs authentication, on a connection younger than
//     AuthConfig.Grace that has sent no AUTH yet, is held instead of closed
//     (holdForAuth): it runs as if just received once an AUTH arrives
//     (whatever its outcome), or is answered CLOSED auth-required, after the
//     challenge, when the grace ends. At most MaxSubscriptions REQs are held
//     per connection, each for at most Grace; a CLOSE, or a REQ of the same
//     id, drops a held REQ unanswered, as for an open subscription.

// maxChallenges bounds the AUTH challenge messages one connection is sent:
// the one on connect and one before each auth-required answer.
const maxChallenges = 8

// heldReqs are the REQs a connection holds for its first AUTH (holdForAuth).
// Under conn.mu.
type heldReqs struct {
	reqs  []heldReq
	timer *time.Timer // ends the grace (expireHeld)
	done  bool        // the grace has ended (takeHeld): nothing more is held
}

// heldReq is one held REQ, as the client sent it.
type heldReq struct {
	id      string
	filters []nostr.Filter
	reason  string // its auth-required answer, should the grace end first
}

// sendChallenge sends the connection's NIP-42 challenge, if AUTH is on and
// the connection has been sent fewer than maxChallenges: on connect (see
// AuthConfig.ChallengeOnConnect) and before each auth-required answer, so that
// a client whose signer was not listening for the first one can authenticate.
// Callers send it only to connections that have not authenticated. Reader
// goroutine only.
func (c *conn) sendChallenge() {
	if c.authOn() && c.challenges < maxChallenges {
		c.challenges++
		c.enqueue(authMsg(c.challengeText()))
	}
}

// holdForAuth holds the REQ subID, refused with reason, for the connection's
// first AUTH, and reports whether it did: only an auth-required refusal, on a
// connection within its grace (AuthConfig.Grace after connecting) that has
// not sent AUTH yet, and fewer than MaxSubscriptions held. Reader goroutine
// only.
func (c *conn) holdForAuth(subID string, filters []nostr.Filter, reason string) bool {
	grace := c.r.cfg.Auth.Grace
	if grace <= 0 || !c.authOn() || c.authTried || !strings.HasPrefix(reason, "auth-required:") {
		return false
	}
	left := grace - c.r.now().Sub(time.Unix(0, c.born))
	if left <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	x := c.extra()
	if x.holding == nil {
		x.holding = &heldReqs{}
		x.holding.timer = time.AfterFunc(left, c.expireHeld)
	}
	if x.holding.done || len(x.holding.reqs) >= c.r.lv().MaxSubscriptions {
		return false
	}
	x.holding.reqs = append(x.holding.reqs, heldReq{id: subID, filters: filters, reason: reason})
	c.r.m.authHeld.WithLabelValues("held").Inc()
	return true
}

// dropHeld forgets the held REQ subID, if any (a CLOSE, or a REQ of the same
// id, replaces it).
func (c *conn) dropHeld(subID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holding()
	if h == nil {
		return
	}
	for i, r := range h.reqs {
		if r.id == subID {
			h.reqs = append(h.reqs[:i], h.reqs[i+1:]...)
			return
		}
	}
}

// takeHeld ends the grace and returns the REQs held, in arrival order.
func (c *conn) takeHeld() []heldReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holding()
	if h == nil {
		return nil
	}
	h.timer.Stop()
	h.done = true
	reqs := h.reqs
	h.reqs = nil
	return reqs
}

// holding is the REQs held for the first AUTH, nil until one is. Under mu.
func (c *conn) holding() *heldReqs {
	if x := c.more.Load(); x != nil {
		return x.holding
	}
	return nil
}

// releaseHeld runs the held REQs as if they had just arrived, now that the
// connection has sent an AUTH (onAuth). Reader goroutine only.
func (c *conn) releaseHeld() {
	for _, h := range c.takeHeld() {
		c.r.m.authHeld.WithLabelValues("released").Inc()
		c.onReq(h.id, h.filters)
	}
}

// expireHeld answers the REQs still held when the grace ends: the challenge
// again, then CLOSED auth-required for each. It runs once per connection, on
// the grace's timer.
func (c *conn) expireHeld() {
	reqs := c.takeHeld()
	if len(reqs) == 0 || c.closing() {
		return
	}
	c.enqueue(authMsg(c.challengeText()))
	for _, h := range reqs {
		c.r.m.authHeld.WithLabelValues("expired").Inc()
		c.enqueue(closedMsg(h.id, h.reason))
	}
}
