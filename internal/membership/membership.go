package membership

import (
	"fmt"
	"maps"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// NIP-43 kinds.
const (
	KindRole    = 33534 // a role definition, by the node
	KindMembers = 13534 // the membership list, by the node
	KindAdd     = 8000  // a member was added, by the node
	KindRemove  = 8001  // a member was removed, by the node
	KindJoin    = 28934 // a join request, by the user
	KindInvite  = 28935 // an invite (claim), by the node, made on request
	KindLeave   = 28936 // a leave request, by the user
)

// IsNodeKind reports the NIP-43 kinds only the node signs and only the
// store's membership path makes: they are refused from every client, the
// node key over the wire included.
func IsNodeKind(kind int) bool {
	switch kind {
	case KindMembers, KindAdd, KindRemove, KindRole, KindInvite:
		return true
	}
	return false
}

// Reasons (NIP-01 OK / CLOSED messages).
const (
	ReasonNodeKind   = "restricted: NIP-43 membership events (kinds 8000, 8001, 13534, 28935, 33534) are published by this relay only"
	ReasonInviteOnly = "restricted: this relay is invite-only and you are not a member: ask a member for an invite code (NIP-43 kind 28935) and join with kind 28934"
	ReasonNoNIP43    = "restricted: this relay does not offer NIP-43 membership (no node key)"
)

// Mode is the relay's membership mode (relay --membership).
type Mode string

const (
	// Open: anyone may write; a key becomes a member by its first post into a
	// community (cn_relay.members), as before NIP-43.
	Open Mode = "open"
	// InviteOnly: only members write (see docs/membership.md for who is one).
	InviteOnly Mode = "invite"
)

// ParseMode reads a --membership value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Open, InviteOnly:
		return Mode(s), nil
	case "":
		return Open, nil
	}
	return "", fmt.Errorf("--membership: want open or invite, got %q", s)
}

// How a key became a NIP-43 member (the `via` tag of its 8000).
const (
	ViaClaim    = "claim"    // a 28934 with a valid invite code
	ViaTrust    = "trust"    // a 28934 from a key ranked at or above --admit-min-rank
	ViaAdmin    = "admin"    // an admin admitted it (NIP-86 addmember, admitmember)
	ViaOperator = "operator" // an operator (cnctl members add/admit) or the relay's admins at start
	ViaRequest  = "request"  // (8001) the member asked to leave (28936)
	ViaOpen     = "open"     // a 28934 to a relay in open mode, which admits anyone who asks
)

// Register is one key's NIP-43 membership: the newest of the node's 8000 and
// 8001 naming it. The zero Register (no event names the key) is "no NIP-43
// decision": the key is then a member exactly when it is one by posting
// (open mode's cn_relay.members) or is an admin.
type Register struct {
	Member bool
	At     int64  // created_at of the deciding event
	ID     string // its id
	Via    string // its via tag
}

// Known reports whether some 8000/8001 names the key.
func (r Register) Known() bool { return r.ID != "" }

// Apply folds ev, a node's 8000 or 8001, into r: the newer wins (later
// created_at, ties to the lower id, NIP-01's order), so the fold of a set of
// events does not depend on the order they are applied in.
func (r Register) Apply(ev *nostr.Event) Register {
	if r.Known() && (int64(ev.CreatedAt) < r.At || (int64(ev.CreatedAt) == r.At && ev.ID >= r.ID)) {
		return r
	}
	return Register{Member: ev.Kind == KindAdd, At: int64(ev.CreatedAt), ID: ev.ID, Via: tagValue(ev, "via")}
}

// Subject returns the key an 8000/8001 names (its first `p` tag), or "".
func Subject(ev *nostr.Event) string {
	if ev.Kind != KindAdd && ev.Kind != KindRemove {
		return ""
	}
	return tagValue(ev, "p")
}

// Project folds evs, the node's stored 8000/8001 events (whatever their
// visibility), into the registers by key. Events by any other key are skipped.
func Project(self string, evs []*nostr.Event) map[string]Register {
	out := map[string]Register{}
	for _, ev := range evs {
		pk := Subject(ev)
		if ev.PubKey != self || pk == "" {
			continue
		}
		out[pk] = out[pk].Apply(ev)
	}
	return out
}

// AddEvent is the unsigned 8000 for pubkey (NIP-70 `-`, `p`, and this node's
// `via`).
func AddEvent(pubkey, via string, at int64) *nostr.Event {
	return &nostr.Event{Kind: KindAdd, CreatedAt: nostr.Timestamp(at),
		Tags: nostr.Tags{{"-"}, {"p", pubkey}, {"via", via}}}
}

// RemoveEvent is the unsigned 8001 for pubkey.
func RemoveEvent(pubkey, via string, at int64) *nostr.Event {
	return &nostr.Event{Kind: KindRemove, CreatedAt: nostr.Timestamp(at),
		Tags: nostr.Tags{{"-"}, {"p", pubkey}, {"via", via}}}
}

// ListEvent is the unsigned 13534 listing members (sorted, one `member` tag
// each), each member's role ids (as given) following its pubkey in its tag.
func ListEvent(members map[string][]string, at int64) *nostr.Event {
	tags := nostr.Tags{{"-"}}
	for _, pk := range slices.Sorted(maps.Keys(members)) {
		tags = append(tags, append(nostr.Tag{"member", pk}, members[pk]...))
	}
	return &nostr.Event{Kind: KindMembers, CreatedAt: nostr.Timestamp(at), Tags: tags}
}

// InviteEvent is the unsigned ephemeral 28935 carrying claim.
func InviteEvent(claim string, at int64) *nostr.Event {
	return &nostr.Event{Kind: KindInvite, CreatedAt: nostr.Timestamp(at), Tags: nostr.Tags{{"-"}, {"claim", claim}}}
}

// Claim returns the `claim` tag of a 28934, or "".
func Claim(ev *nostr.Event) string { return tagValue(ev, "claim") }

// Op is what a Change does.
type Op uint8

const (
	// OpMember adds (Add) or removes Pubkey: an 8000 or 8001 and a new 13534.
	// A key removed loses its roles.
	OpMember Op = iota
	// OpSetRole defines Role or changes it by Patch: a new 33534.
	OpSetRole
	// OpRemoveRole removes Role: the node's NIP-09 deletion of its 33534,
	// and, when some member had it, a new 13534 without it.
	OpRemoveRole
	// OpAssign gives Pubkey, a NIP-43 member, the defined Role: a new 13534.
	OpAssign
	// OpUnassign takes Role from Pubkey: a new 13534.
	OpUnassign
)

// Change is one membership change the store makes (store.Publisher.MembershipTx).
type Change struct {
	Op     Op
	Pubkey string
	Add    bool      // OpMember: true makes a member (8000); false removes (8001)
	Via    string    // OpMember: the via tag
	Role   string    // the role id (OpSetRole, OpRemoveRole, OpAssign, OpUnassign)
	Patch  RolePatch // OpSetRole
}

// Outcome is what a Change did.
type Outcome string

const (
	Added   Outcome = "added"   // 8000 published
	Removed Outcome = "removed" // 8001 published (OpRemoveRole: the 33534 deleted)
	Already Outcome = "already" // nothing to do: already a member / not a member / role already so
	// Roles.
	Defined    Outcome = "defined"    // a 33534 published
	Assigned   Outcome = "assigned"   // the role added to the member's tag of a new 13534
	Unassigned Outcome = "unassigned" // the role taken from it
	// Refusals: the caller must roll the transaction back (Service does).
	NoRole    Outcome = "no_role"    // the role is not defined
	NotMember Outcome = "not_member" // the key is not a NIP-43 member
)

func tagValue(ev *nostr.Event, name string) string {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}
