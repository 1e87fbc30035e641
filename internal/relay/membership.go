package relay

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/membership"
)

// membershipEvent answers the NIP-43 request kinds, which are ephemeral and
// never stored nor fanned out: a join (28934) or leave (28936) goes to
// Deps.Members; an invite (28935) is the relay's own and is refused from a
// client. done is false for every other kind.
func (c *conn) membershipEvent(ev *nostr.Event) (ok bool, reason string, done bool) {
	switch ev.Kind {
	case membership.KindJoin, membership.KindLeave:
	case membership.KindInvite:
		return false, membership.ReasonNodeKind, true
	default:
		return false, "", false
	}
	if c.r.members == nil {
		return false, membership.ReasonNoNIP43, true
	}
	ctx, cancel := c.childContext(c.r.cfg.IngestTimeout)
	defer cancel()
	if ev.Kind == membership.KindJoin {
		ok, reason = c.r.members.Join(ctx, ev)
		return ok, reason, true
	}
	_, byAuthor := c.authed()[ev.PubKey]
	ok, reason = c.r.members.Leave(ctx, ev, byAuthor)
	if !ok && strings.HasPrefix(reason, "auth-required:") {
		c.sendChallenge() // (it answers the challenge, then sends its leave again)
	}
	return ok, reason, true
}

// nodeKindReason refuses, before the topic and policy rules can give a
// vaguer answer, a validly signed event of a NIP-43 kind only the node makes
// (membership.IsNodeKind); a forged one goes on to be answered invalid.
func nodeKindReason(ev *nostr.Event) string {
	if !membership.IsNodeKind(ev.Kind) || !ev.CheckID() {
		return ""
	}
	if ok, err := ev.CheckSignature(); err != nil || !ok {
		return ""
	}
	return membership.ReasonNodeKind
}

// asksInvite reports whether a REQ asks for invites (kind 28935, NIP-43)
// signed by self (a filter naming other authors only does not).
func asksInvite(filters []nostr.Filter, self string) bool {
	return slices.ContainsFunc(filters, func(f nostr.Filter) bool {
		return slices.Contains(f.Kinds, membership.KindInvite) && (len(f.Authors) == 0 || slices.Contains(f.Authors, self))
	})
}

// inviteFor makes a claim for this connection's authenticated member and
// returns the 28935 carrying it as JSON, sent to this subscription only (it is
// never stored, fanned out or sent to anyone else), or the CLOSED reason.
// Reader goroutine only (it may send the AUTH challenge).
func (c *conn) inviteFor() ([]byte, string) {
	if c.r.members == nil {
		return nil, membership.ReasonNoNIP43
	}
	if len(c.authed()) == 0 {
		c.sendChallenge()
	}
	ctx, cancel := c.childContext(c.r.cfg.IngestTimeout)
	defer cancel()
	ev, reason := c.r.members.Invite(ctx, slices.Sorted(maps.Keys(c.authed())))
	if reason != "" {
		return nil, reason
	}
	js, err := json.Marshal(ev)
	if err != nil {
		return nil, membership.ReasonFailed
	}
	return js, ""
}
