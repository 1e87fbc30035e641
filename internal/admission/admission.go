// Package admission is the one ordered chain of checks an event passes wherever
// it enters the node (a client's EVENT on the relay, a line of `cnctl import`)
// before the store sees it. The chain needs no storage and no I/O; the entry
// points add only what is theirs: the relay its per-address rate limit and
// AUTH-for-writes before the chain, the importer its refusal of ephemeral
// events after it.
//
// The order, first refusal wins:
//
//  1. protocol.ValidateEvent: the id and the signature first (so no rule, here
//     or below, judges a forged or altered event: it is answered invalid), then
//     limits, topic rules, created_at, NIP-40;
//  2. the management policy (PolicyReason): banned pubkeys and events,
//     accepted kinds;
//  3. the web-of-trust rank gate (RankReason, relay --min-rank);
//  4. the connection's per-author budget (Conn.AuthorReason; the relay's rate
//     limit), so that only events that passed 1-3 spend it;
//  5. NIP-70: a protected event is published only by its authenticated author
//     (Conn.ProtectedReason); without a connection (an import) it is refused.
package admission

import (
	"cmp"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Reasons the chain gives (protocol.ValidateEvent gives the validation ones).
const (
	ReasonBannedPubkey    = "blocked: this pubkey is banned from this relay"
	ReasonBannedEvent     = "blocked: this event is banned from this relay"
	ReasonKindNotAccepted = "blocked: this kind is not accepted on this relay"
	// ReasonProtected refuses a protected (NIP-70) event that came without a
	// connection its author could have authenticated on.
	ReasonProtected = "restricted: protected event (NIP-70): only its author may publish it"
)

// Policy is the relay management state as the chain asks it
// (relayadmin.Watcher, relayadmin.Load).
type Policy interface {
	PubkeyBanned(pubkey string) bool
	EventBanned(id string) bool
	KindAccepted(kind int) bool
}

// RankGate admits authors by web-of-trust rank (gate.Gate).
type RankGate interface {
	Admit(pubkey string) bool
	Threshold() int   // the minimum rank; 0: the gate is off
	Provider() string // the NIP-85 provider pubkey; "" when none
}

// Conn is what the chain asks of the connection an event came through.
type Conn interface {
	// AuthorReason spends one event of pubkey's budget and returns why it is
	// refused (rate-limited), or "".
	AuthorReason(pubkey string) string
	// ProtectedReason returns why this connection may not publish the protected
	// (NIP-70) event ev, or "" when it may (its author authenticated here).
	ProtectedReason(ev *nostr.Event) string
}

// Chain is the checks, configured once per entry point; it is safe for
// concurrent use when Policy and Ranks are.
type Chain struct {
	Limits protocol.Limits
	Policy Policy   // nil: no management policy
	Ranks  RankGate // nil: no rank gate
}

// Check runs the chain on ev at now and returns the first refusal (a NIP-01 OK
// message), or "" when ev may be stored. conn is nil for an entry point without
// a connection.
func (c *Chain) Check(ev *nostr.Event, now time.Time, conn Conn) string {
	if reason := protocol.ValidateEvent(ev, now, c.Limits); reason != "" {
		return reason
	}
	if reason := PolicyReason(c.Policy, ev); reason != "" {
		return reason
	}
	if reason := RankReason(c.Ranks, ev); reason != "" {
		return reason
	}
	if conn != nil {
		if reason := conn.AuthorReason(ev.PubKey); reason != "" {
			return reason
		}
	}
	if protocol.Protected(ev) {
		if conn == nil {
			return ReasonProtected
		}
		return conn.ProtectedReason(ev)
	}
	return ""
}

// PolicyReason returns why the management policy p refuses ev (a banned author
// or event, a kind not accepted), or "" when it does not or p is nil.
func PolicyReason(p Policy, ev *nostr.Event) string {
	if p == nil {
		return ""
	}
	switch {
	case p.PubkeyBanned(ev.PubKey):
		return ReasonBannedPubkey
	case p.EventBanned(ev.ID):
		return ReasonBannedEvent
	case !p.KindAccepted(ev.Kind):
		return ReasonKindNotAccepted
	}
	return ""
}

// RankReason returns why the spam gate g (relay --min-rank) refuses ev, or "".
// Identity events (profiles, follow and mute lists, NIP-85 assertions), NIP-09
// deletions, ephemeral events (NIP-46 requests come from throw-away client keys)
// and gift wraps (signed by a throw-away key) are exempt: a newcomer can still
// say who they are, follow others, take back what they said, log in and be
// written to; the gate decides who gets to post.
func RankReason(g RankGate, ev *nostr.Event) string {
	if g == nil || g.Threshold() <= 0 || protocol.IsIdentityKind(ev.Kind) || ev.Kind == nostr.KindDeletion ||
		ev.Kind == protocol.KindGiftWrap || protocol.ClassOf(ev.Kind) == protocol.Ephemeral || g.Admit(ev.PubKey) {
		return ""
	}
	return fmt.Sprintf("blocked: this relay accepts posts from keys with a web-of-trust rank of at least %d (NIP-85 assertions by %s); "+
		"yours is lower: get followed by members of this community", g.Threshold(), cmp.Or(g.Provider(), "its trust provider"))
}
