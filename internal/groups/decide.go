package groups

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// OK messages of group events, with their NIP-01 prefixes.
const (
	ReasonNoGroups    = "restricted: this relay does not host NIP-29 groups"
	ReasonStateKind   = "restricted: group state (kinds 39000-39005) is published by this relay only"
	ReasonNoHTag      = "invalid: group moderation, join and leave events need an h tag with the group id"
	ReasonManyHTags   = "invalid: an event belongs to one group: it has more than one h tag"
	ReasonBadID       = "invalid: a group id is 1 to 64 of a-z, A-Z, 0-9, - and _"
	ReasonUnknown     = "restricted: unknown group (create it with kind 9007 first)"
	ReasonDeleted     = "restricted: this group was deleted"
	ReasonDeletedID   = "restricted: this group was deleted and its id cannot be used again"
	ReasonExists      = "duplicate: this group already exists"
	ReasonMember      = "duplicate: already a member of this group"
	ReasonNotMember   = "restricted: not a member of this group"
	ReasonRestricted  = "restricted: only members of this group may write to it (send a join request, kind 9021)"
	ReasonPrivate     = "restricted: only members of this private group may write to it (send a join request, kind 9021)"
	ReasonSubgroups   = "restricted: subgroups (parent, child) are not supported yet"
	ReasonLivekit     = "restricted: live audio/video (livekit) is not supported by this relay"
	ReasonBadKinds    = "invalid: supported_kinds must list kind numbers"
	ReasonNoUsers     = "invalid: name the user with a p tag (64 hex characters)"
	ReasonNoCode      = "invalid: a create-invite needs a code tag (1 to 128 bytes)"
	ReasonNoTargets   = "invalid: a delete-event needs e tags naming events of this group"
	ReasonTargetKind  = "invalid: group moderation, join/leave and state events are the group's history and cannot be deleted"
	ReasonStale       = "invalid: older than the group's current state of what it changes (created_at, ties to the lower id, as NIP-01 orders replaceable events); send it again with a later created_at"
	ReasonPending     = "restricted: pending review: this group is closed; your join request is kept for its admins (a valid invite code in a code tag joins at once)"
	ReasonPendingCode = "restricted: pending review: this invite code is unknown or expired; your join request is kept for the group's admins"
)

// ReasonUnsupportedKind is the refusal of a moderation kind this relay does
// not handle (9003, 9004, 9006, 9010-9020).
func ReasonUnsupportedKind(kind int) string {
	return fmt.Sprintf("restricted: moderation kind %d is not supported by this relay", kind)
}

// ReasonKindNotSupported is the refusal of a kind outside a group's
// supported_kinds.
func ReasonKindNotSupported(kind int) string {
	return fmt.Sprintf("restricted: this group does not accept kind %d (see supported_kinds in its metadata, kind 39000)", kind)
}

// reasonRole is the refusal of a moderation event the author's roles do not allow.
func reasonRole(what string) string {
	return "restricted: your roles in this group do not allow " + what + " (see kind 39003)"
}

// Creators says who may create a group (9007).
type Creators string

const (
	// CreatorsMembers: members of this node's community (an author with an
	// event stored in a community topic, or admitted by an operator or the
	// trust gate: cn_relay.members), the relay's admins and the node.
	CreatorsMembers Creators = "members"
	// CreatorsAdmins: the relay's admins (--admin-pubkeys) and the node.
	CreatorsAdmins Creators = "admins"
	// CreatorsAny: every author.
	CreatorsAny Creators = "any"
)

// ParseCreators parses "members", "admins" or "any".
func ParseCreators(s string) (Creators, error) {
	switch c := Creators(strings.ToLower(strings.TrimSpace(s))); c {
	case CreatorsMembers, CreatorsAdmins, CreatorsAny:
		return c, nil
	}
	return "", fmt.Errorf("group creators must be %q, %q or %q, got %q", CreatorsMembers, CreatorsAdmins, CreatorsAny, s)
}

// DefaultInviteTTL is how long an invite code is valid after its 9009's
// created_at, unless the 9009's own NIP-40 expiration ends it sooner.
const DefaultInviteTTL = 7 * 24 * time.Hour

// Policy is the relay's group policy.
type Policy struct {
	// Node is the node's pubkey (NIP-11 self), the relay master key: it may do
	// everything in every group.
	Node string
	// Admins are the relay's admins (--admin-pubkeys): they may do everything
	// in every group, as a group admin may in theirs (they are not listed in
	// 39001).
	Admins map[string]bool
	// Creators says who may create a group.
	Creators Creators
	// InviteTTL is how long an invite code is valid (zero: DefaultInviteTTL).
	// Codes are not used up: a code opens a closed group to whoever has it
	// until it expires, as a group link (naddr...?invite=code) is shared.
	InviteTTL time.Duration
}

func (p Policy) inviteTTL() int64 {
	if p.InviteTTL <= 0 {
		return int64(DefaultInviteTTL / time.Second)
	}
	return int64(p.InviteTTL / time.Second)
}

// ValidInvite reports whether code opens s at now.
func (p Policy) ValidInvite(s *State, code string, now int64) bool {
	inv, ok := s.Invites[code]
	return ok && now < inv.Stamp.At+p.inviteTTL() && (inv.Expires == 0 || now < inv.Expires)
}

// Target is what Decide needs to know of an event a 9005 names.
type Target struct {
	Kind  int
	Scope []string // its scope rows (topics)
}

// Facts are what Decide needs from the store besides the group's state.
type Facts struct {
	// Now is the ingest time, unix seconds; Seq the same in microseconds
	// (Stamp.Seq).
	Now, Seq int64
	// CommunityMember: the author is a member of this node's community
	// (CreatorsMembers).
	CommunityMember bool
	// Target returns a stored (or earlier in the batch) event by id.
	Target func(id string) (Target, bool)
}

// Decision is what the relay does with one group event.
type Decision struct {
	// OK and Message are the answer (NIP-01 OK). A pending join request is
	// answered OK false (NIP-29: not added) yet kept.
	OK      bool
	Message string
	// Keep: the event is kept and applied to the group's state (State.Apply).
	Keep bool
	// Withhold: kept out of every read path (cn_relay.group_withheld), because
	// it carries an invite code: a 9009, or a 9021 with a code tag.
	Withhold bool
	// Emit are the node's moderation events this one causes, unsigned, in
	// order (NodeEvents): the store signs, stores and applies each right after
	// this one.
	Emit []*nostr.Event
	// Hide are the events a 9005 hides (reason moderation).
	Hide []string
}

func refuse(msg string) Decision { return Decision{Message: msg} }

var accept = Decision{OK: true, Keep: true}

// Privilege is one thing a role may do in its group.
type Privilege string

const (
	PutUser      Privilege = "put-user"      // 9000 without roles, of a user without roles
	RemoveUser   Privilege = "remove-user"   // 9001 of a user without roles
	ManageRoles  Privilege = "manage-roles"  // 9000 with roles, 9000 and 9001 of a user with roles
	EditMetadata Privilege = "edit-metadata" // 9002
	DeleteEvent  Privilege = "delete-event"  // 9005
	DeleteGroup  Privilege = "delete-group"  // 9008
	CreateInvite Privilege = "create-invite" // 9009
)

// Role is a role this relay gives privileges to (kind 39003). A 9000 may give
// any other role name too: it is kept and shown in 39001 but allows nothing.
type Role struct {
	Name        string
	Description string
	May         []Privilege
}

// Roles are the roles this relay supports, in the order 39003 lists them.
var Roles = []Role{
	{Name: "admin", Description: "may add and remove users and give roles, edit the metadata, delete events, create invites and delete the group",
		May: []Privilege{PutUser, RemoveUser, ManageRoles, EditMetadata, DeleteEvent, DeleteGroup, CreateInvite}},
	{Name: "moderator", Description: "may add and remove users without roles, delete events and create invites",
		May: []Privilege{PutUser, RemoveUser, DeleteEvent, CreateInvite}},
}

// RoleAdmin is the role the creator of a group gets.
const RoleAdmin = "admin"

// privileged reports whether one of roles carries a privilege (39001 lists
// such members).
func privileged(roles []string) bool {
	return slices.ContainsFunc(roles, func(r string) bool {
		return slices.ContainsFunc(Roles, func(x Role) bool { return x.Name == r })
	})
}

// may reports whether a user with roles may do what.
func may(roles []string, what Privilege) bool {
	for _, r := range Roles {
		if slices.Contains(roles, r.Name) && slices.Contains(r.May, what) {
			return true
		}
	}
	return false
}

// Decide says what the relay does with ev, a group event (protocol.IsGroupEvent)
// that is not a duplicate, sent to the group whose state is s (nil or not
// Exists when unknown). It is pure: s is not changed (the caller applies the
// event, then the Emit events, with State.Apply).
func (p Policy) Decide(s *State, ev *nostr.Event, f Facts) Decision {
	if IsStateKind(ev.Kind) {
		return refuse(ReasonStateKind)
	}
	id, n := protocol.GroupTag(ev)
	switch {
	case n == 0:
		return refuse(ReasonNoHTag)
	case n > 1:
		return refuse(ReasonManyHTags)
	case !ValidID(id):
		return refuse(ReasonBadID)
	}
	master := ev.PubKey == p.Node || p.Admins[ev.PubKey]
	if ev.Kind == KindCreateGroup {
		switch {
		case s != nil && !s.Deleted.IsZero():
			return refuse(ReasonDeletedID)
		case s.Exists():
			return refuse(ReasonExists)
		case !master && p.Creators == CreatorsAdmins:
			return refuse("restricted: only this relay's admins may create groups")
		case !master && p.Creators != CreatorsAny && !f.CommunityMember:
			return refuse("restricted: only members of this community may create groups (post in a topic here first)")
		}
		d := accept
		d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindPutUser, ev.PubKey, []string{RoleAdmin}, ev, f.Now)}
		return d
	}
	switch {
	case s != nil && !s.Deleted.IsZero():
		return refuse(ReasonDeleted)
	case !s.Exists():
		return refuse(ReasonUnknown)
	}
	roles := s.RolesOf(ev.PubKey)
	allowed := func(what Privilege) bool { return master || may(roles, what) }
	switch ev.Kind {
	case KindJoinRequest:
		if s.IsMember(ev.PubKey) {
			return refuse(ReasonMember)
		}
		codes := Codes(ev)
		withhold := len(codes) > 0
		open := !s.Meta.Closed || slices.ContainsFunc(codes, func(c string) bool { return p.ValidInvite(s, c, f.Now) })
		if !open {
			msg := ReasonPending
			if withhold {
				msg = ReasonPendingCode
			}
			return Decision{Message: msg, Keep: true, Withhold: withhold}
		}
		d := accept
		d.Withhold = withhold
		d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindPutUser, ev.PubKey, nil, ev, f.Now)}
		return d
	case KindLeaveRequest:
		if !s.IsMember(ev.PubKey) && !s.Pending(ev.PubKey) {
			return refuse(ReasonNotMember)
		}
		d := accept
		d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindRemoveUser, ev.PubKey, nil, ev, f.Now)}
		return d
	case KindPutUser, KindRemoveUser:
		users := Users(ev)
		if len(users) == 0 {
			return refuse(ReasonNoUsers)
		}
		st := StampOf(ev, f.Seq)
		for _, u := range users {
			holder := len(s.RolesOf(u.PubKey)) > 0
			switch {
			case (len(u.Roles) > 0 || holder) && !allowed(ManageRoles):
				return refuse(reasonRole("giving, changing or taking away roles"))
			case ev.Kind == KindPutUser && !allowed(PutUser):
				return refuse(reasonRole("adding users"))
			case ev.Kind == KindRemoveUser && !allowed(RemoveUser):
				return refuse(reasonRole("removing users"))
			case len(u.Roles) > MaxRoles:
				return refuse(fmt.Sprintf("invalid: at most %d roles per user", MaxRoles))
			case !st.Newer(s.Members[u.PubKey].Stamp):
				return refuse(ReasonStale)
			}
		}
		return accept
	case KindEditMetadata:
		if !allowed(EditMetadata) {
			return refuse(reasonRole("editing the metadata"))
		}
		if _, reason := ParseMetadata(ev); reason != "" {
			return refuse(reason)
		}
		if !StampOf(ev, f.Seq).Newer(s.MetaAt) {
			return refuse(ReasonStale)
		}
		return accept
	case KindDeleteEvent:
		if !allowed(DeleteEvent) {
			return refuse(reasonRole("deleting events"))
		}
		var hide []string
		for _, tag := range ev.Tags {
			if len(tag) < 2 || tag[0] != "e" || slices.Contains(hide, tag[1]) {
				continue
			}
			t, ok := f.Target(tag[1])
			if !ok || !slices.Contains(t.Scope, Scope(id)) {
				return refuse(ReasonNoTargets)
			}
			if IsModerationKind(t.Kind) || t.Kind == KindJoinRequest || t.Kind == KindLeaveRequest || IsStateKind(t.Kind) {
				return refuse(ReasonTargetKind)
			}
			hide = append(hide, tag[1])
		}
		if len(hide) == 0 {
			return refuse(ReasonNoTargets)
		}
		d := accept
		d.Hide = hide
		return d
	case KindDeleteGroup:
		if !allowed(DeleteGroup) {
			return refuse(reasonRole("deleting the group"))
		}
		return accept
	case KindCreateInvite:
		if !allowed(CreateInvite) {
			return refuse(reasonRole("creating invites"))
		}
		if len(Codes(ev)) == 0 {
			return refuse(ReasonNoCode)
		}
		d := accept
		d.Withhold = true
		return d
	}
	if IsModerationKind(ev.Kind) {
		return refuse(ReasonUnsupportedKind(ev.Kind))
	}
	// Everything else is a post to the group.
	if !s.Meta.AllKinds && !slices.Contains(s.Meta.Kinds, ev.Kind) {
		return refuse(ReasonKindNotSupported(ev.Kind))
	}
	if s.Meta.Restricted && !s.IsMember(ev.PubKey) && !master {
		return refuse(ReasonRestricted)
	}
	// A private group is written by its members only, restricted or not:
	// an outsider could not read the conversation it writes into, and its
	// OK answers (duplicate:) would tell it which of the group's events it
	// holds.
	if s.Meta.Private && !s.IsMember(ev.PubKey) && !master {
		return refuse(ReasonPrivate)
	}
	return accept
}

// nodeEvent returns the node's moderation event (unsigned: the store signs it)
// that puts (9000, with roles) or removes (9001) pubkey in group id because of
// cause. Its created_at is now, or later when needed so that it sets the
// user's register: not before cause, and after the user's current register
// (s may be nil for a group being created).
func (p Policy) nodeEvent(s *State, id string, kind int, pubkey string, roles []string, cause *nostr.Event, now int64) *nostr.Event {
	at := max(now, int64(cause.CreatedAt))
	if s != nil {
		if cur := s.Members[pubkey].Stamp; !cur.IsZero() && cur.At >= at {
			at = cur.At + 1
		}
	}
	tags := nostr.Tags{{"h", id}, append(nostr.Tag{"p", pubkey}, roles...)}
	return &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags, PubKey: p.Node}
}
