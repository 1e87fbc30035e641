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
	ReasonNoGroups      = "restricted: this relay does not host NIP-29 groups"
	ReasonStateKind     = "restricted: group state (kinds 39000-39005) is published by this relay only"
	ReasonNoHTag        = "invalid: group moderation, join and leave events need an h tag with the group id"
	ReasonManyHTags     = "invalid: an event belongs to one group: it has more than one h tag"
	ReasonBadID         = "invalid: a group id is 1 to 64 of a-z, A-Z, 0-9, - and _"
	ReasonUnknown       = "restricted: unknown group (create it with kind 9007 first)"
	ReasonDeleted       = "restricted: this group was deleted"
	ReasonDeletedID     = "restricted: this group was deleted and its id cannot be used again"
	ReasonExists        = "duplicate: this group already exists"
	ReasonMember        = "duplicate: already a member of this group"
	ReasonNotMember     = "restricted: not a member of this group"
	ReasonRestricted    = "restricted: only members of this group may write to it (send a join request, kind 9021)"
	ReasonPrivate       = "restricted: only members of this private group may write to it (send a join request, kind 9021)"
	ReasonManyParents   = "invalid: a group has at most one parent: more than one parent tag"
	ReasonBadParent     = "invalid: the parent tag must name a group id (1 to 64 of a-z, A-Z, 0-9, - and _)"
	ReasonBadChild      = "invalid: a child tag must name a group id (1 to 64 of a-z, A-Z, 0-9, - and _)"
	ReasonDupChild      = "invalid: a child tag names the same subgroup twice"
	ReasonSelfParent    = "invalid: a group cannot be its own parent"
	ReasonCycle         = "invalid: this parent would make a cycle: the parent is this group or one of its subgroups"
	ReasonNoPinTarget   = "invalid: a pinned event must be an event of this group this relay has (e tag: its id; a tag: its address)"
	ReasonPinKind       = "invalid: group moderation, join/leave and state events cannot be pinned"
	ReasonBadPrevious   = "invalid: a previous tag names events by the first 8 characters of their ids (lowercase hex)"
	ReasonLivekit       = "restricted: live audio/video (livekit) is not supported by this relay"
	ReasonBadKinds      = "invalid: supported_kinds must list kind numbers"
	ReasonNoUsers       = "invalid: name the user with a p tag (64 hex characters)"
	ReasonNoCode        = "invalid: a create-invite needs a code tag (1 to 128 bytes)"
	ReasonNoTargets     = "invalid: a delete-event needs e tags naming events of this group"
	ReasonTargetKind    = "invalid: group moderation, join/leave and state events are the group's history and cannot be deleted"
	ReasonStale         = "invalid: older than the group's current state of what it changes (created_at, ties to the lower id, as NIP-01 orders replaceable events); send it again with a later created_at"
	ReasonPending       = "restricted: pending review: this group is closed; your join request is kept for its admins (a valid invite code in a code tag joins at once)"
	ReasonPendingCode   = "restricted: pending review: this invite code is unknown or expired; your join request is kept for the group's admins"
	ReasonAdminsCreate  = "restricted: only this relay's admins may create groups"
	ReasonMembersCreate = "restricted: only members of this community may create groups (post in a topic here first)"
)

// Refusals whose texts name the package's caps.
var (
	ReasonManyRoles = fmt.Sprintf("invalid: at most %d roles per user", MaxRoles)
	ReasonManyPins  = fmt.Sprintf("invalid: at most %d pinned events", MaxPins)
)

// ReasonPendingRank is the answer to a join request to an open group from a
// key ranked below the relay's admission rank (Policy.AdmitMinRank): kept
// for the group's admins, like a request to a closed group.
func ReasonPendingRank(min int) string {
	return fmt.Sprintf("restricted: pending review: this relay admits keys its web of trust ranks at %d or above at once; your join request is kept for the group's admins (a valid invite code in a code tag joins at once)", min)
}

// MessageAdmittedRank is the OK true message of a join admitted at once on
// the strength of its author's rank.
func MessageAdmittedRank(min int) string {
	return fmt.Sprintf("admitted: ranked %d or above by this relay's web of trust", min)
}

// Admission is what the relay's web of trust says of the author of a join
// request (Facts.Admission; relay --group-admit-min-rank).
type Admission int

const (
	// AdmitOpen: no admission rank (or no trust run yet, when ranks cannot
	// tell a newcomer from spam): an open group honours a join at once.
	AdmitOpen Admission = iota
	// AdmitRanked: ranked at or above Policy.AdmitMinRank (or a trust seed,
	// a relay admin, the node): an open group honours a join at once, and
	// the OK message says why.
	AdmitRanked
	// AdmitReview: ranked below it: the join request to an open group is
	// kept for the group's admins (ReasonPendingRank), as in a closed group.
	AdmitReview
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

// ReasonNoParent is the refusal of a 9002 whose parent is not a group here.
func ReasonNoParent(id string) string {
	return fmt.Sprintf("invalid: parent group %q does not exist on this relay", id)
}

// ReasonParentAdmin is the refusal of a 9002 naming a parent its author is not an admin of.
func ReasonParentAdmin(id string) string {
	return fmt.Sprintf("restricted: only an admin of group %q (role admin in its kind 39001) may make it the parent of a group", id)
}

// ReasonMissingChild is the refusal of a 9002 that does not list one of the group's subgroups.
func ReasonMissingChild(id string) string {
	return fmt.Sprintf("invalid: this group has subgroups: its metadata edits list every one as a child tag, in the order wanted (missing %q)", id)
}

// ReasonNotChild is the refusal of a 9002 listing a group that is not its subgroup.
func ReasonNotChild(id string) string {
	return fmt.Sprintf("invalid: child %q is not a subgroup of this group (a group becomes one with its own parent tag)", id)
}

// ReasonLate is the refusal of a group event older than the late-publication window.
func ReasonLate(window time.Duration) string {
	return fmt.Sprintf("invalid: created_at is more than %s in the past: this relay refuses late publication to groups (NIP-29); check the clock, or have the operator import a moved group (cnctl import --group-history)", window)
}

// ReasonUnknownPrevious is the refusal of an event whose timeline references
// name events this relay does not have in the group.
func ReasonUnknownPrevious(prefixes []string) string {
	return fmt.Sprintf("invalid: previous names events this relay does not have in this group: %s (NIP-29 timeline references)", strings.Join(prefixes, ", "))
}

// ReasonFewPrevious is the refusal of an event with fewer timeline references than the relay asks.
func ReasonFewPrevious(n int) string {
	return fmt.Sprintf("restricted: this relay asks group events to reference at least %d recent events of the group in previous tags, by the first 8 characters of their ids (NIP-29 timeline references)", n)
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

// DefaultLateWindow is how far in the past a group event's created_at may
// be: as far as the relay lets it be in the future (protocol.Limits
// MaxFutureSkew, 15 minutes), so a client whose clock is off either way by
// less than that is served, and a message sent late by a client that kept it
// while offline for a few minutes still passes; what NIP-29 calls late
// publication (hours or days) does not.
const DefaultLateWindow = 15 * time.Minute

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
	// AdmitMinRank, when > 0, is the trust rank (internal/trust, 0-100) at
	// or above which a join request to an open group is honoured at once;
	// below it the request waits for the group's admins (Facts.Admission
	// says which). Closed groups are not changed: NIP-29 honours a join
	// request to a closed group only with an invite code.
	AdmitMinRank int
	// InviteTTL is how long an invite code is valid (zero: DefaultInviteTTL).
	// Codes are not used up: a code opens a closed group to whoever has it
	// until it expires, as a group link (naddr...?invite=code) is shared.
	InviteTTL time.Duration
	// LateWindow: a group event whose created_at is further than this before
	// the ingest time is refused (ReasonLate), except the node's own; zero
	// disables the check. History disables it too.
	LateWindow time.Duration
	// MinPrevious: group events other than 9007, 9021 and 9022 (and the
	// node's) need at least this many distinct timeline references
	// (`previous`); zero asks for none. Whatever it is, every reference given
	// must name an event of the group this relay has (Facts.Known), unless
	// History.
	MinPrevious int
	// History: the events come from the history of groups moved or forked
	// from another relay (cnctl import --group-history): no late-publication
	// window, references are not checked, and the node's own moderation
	// events are dated at their cause's created_at (not the ingest time), so
	// that the history's later events still take effect after them.
	History bool
	// Limits bound groups created per key, members per group, subgroup
	// depth and invite codes (zero fields: their defaults).
	Limits Limits
	// Lists says how often the node re-signs a large group's member list
	// (39002); see MemberLists.
	Lists MemberLists
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
	// Admission is what the web of trust says of the author (read for join
	// requests only; nil: AdmitOpen).
	Admission func(pubkey string) Admission
	// Address returns the current version of an addressable event by its
	// address (kind:pubkey:d), stored or earlier in the batch.
	Address func(addr string) (Target, bool)
	// Known reports whether an event of the group whose id starts with
	// prefix (8 hex characters) is stored, or earlier in the batch; nil:
	// none is.
	Known func(prefix string) bool
	// Forest holds the group's state and, for a 9002, its parent's and its
	// subgroups' and its parent's ancestors' (nil: only the group's).
	Forest Forest
	// Created is how many groups the author has created (read for 9007s
	// only: Limits.CreatedPerDay, Limits.CreatedInAll).
	Created Created
	// Height returns how many levels of subgroups a group has below it (0
	// for none; read for a 9002 that changes the parent: Limits.Depth);
	// nil: none.
	Height func(id string) int
}

// Decision is what the relay does with one group event.
type Decision struct {
	// OK and Message are the answer (NIP-01 OK). A pending join request is
	// answered OK false (NIP-29: not added) yet kept.
	OK      bool
	Message string
	// Code names a refusal (reasons.go); zero for an acceptance.
	Code protocol.Code
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

func refuse(r protocol.Reason) Decision { return Decision{Message: r.Text, Code: r.Code} }

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
	PinEvents    Privilege = "pin-events"    // 9010
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
	{Name: "admin", Description: "may add and remove users and give roles, edit the metadata, delete events, create invites, pin events and delete the group",
		May: []Privilege{PutUser, RemoveUser, ManageRoles, EditMetadata, DeleteEvent, DeleteGroup, CreateInvite, PinEvents}},
	{Name: "moderator", Description: "may add and remove users without roles, delete events, create invites and pin events",
		May: []Privilege{PutUser, RemoveUser, DeleteEvent, CreateInvite, PinEvents}},
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
		return refuse(RefuseStateKind)
	}
	id, n := protocol.GroupTag(ev)
	switch {
	case n == 0:
		return refuse(RefuseNoHTag)
	case n > 1:
		return refuse(RefuseManyHTags)
	case !ValidID(id):
		return refuse(RefuseBadID)
	}
	master := ev.PubKey == p.Node || p.Admins[ev.PubKey]
	lim := p.Limits.WithDefaults()
	if r := p.timeline(ev, f); r.Text != "" {
		return refuse(r)
	}
	if ev.Kind == KindCreateGroup {
		switch {
		case s != nil && !s.Deleted.IsZero():
			return refuse(RefuseDeletedID)
		case s.Exists():
			return refuse(RefuseExists)
		case !master && p.Creators == CreatorsAdmins:
			return refuse(RefuseAdminsCreate)
		case !master && p.Creators != CreatorsAny && !f.CommunityMember:
			return refuse(RefuseMembersCreate)
		case !master && !p.History && f.Created.All >= lim.CreatedInAll:
			return refuse(CodeCreatedInAll.With(ReasonCreatedInAll(lim.CreatedInAll)))
		case !master && !p.History && f.Created.Day >= lim.CreatedPerDay:
			return refuse(CodeCreatedPerDay.With(ReasonCreatedPerDay(lim.CreatedPerDay)))
		}
		d := accept
		d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindPutUser, ev.PubKey, []string{RoleAdmin}, ev, f.Now)}
		return d
	}
	if f.Forest == nil {
		f.Forest = Forest{id: s}
	}
	switch {
	case s != nil && !s.Deleted.IsZero():
		return refuse(RefuseDeleted)
	case !s.Exists():
		return refuse(RefuseUnknown)
	}
	c := call{p: p, s: s, ev: ev, f: f, id: id, master: master, lim: lim, roles: s.RolesOf(ev.PubKey)}
	switch ev.Kind {
	case KindJoinRequest:
		return c.join()
	case KindLeaveRequest:
		return c.leave()
	case KindPutUser, KindRemoveUser:
		return c.users()
	case KindEditMetadata:
		return c.metadata()
	case KindDeleteEvent:
		return c.deleteEvent()
	case KindDeleteGroup:
		return c.deleteGroup()
	case KindPins:
		return c.pins()
	case KindCreateInvite:
		return c.invite()
	}
	if IsModerationKind(ev.Kind) {
		return refuse(CodeUnsupportedKind.With(ReasonUnsupportedKind(ev.Kind)))
	}
	// Everything else is a post to the group.
	if !s.Meta.AllKinds && !slices.Contains(s.Meta.Kinds, ev.Kind) {
		return refuse(CodeKindNotSupported.With(ReasonKindNotSupported(ev.Kind)))
	}
	if s.Meta.Restricted && !s.IsMember(ev.PubKey) && !master {
		return refuse(RefuseRestricted)
	}
	// A private group is written by its members only, restricted or not:
	// an outsider could not read the conversation it writes into, and its
	// OK answers (duplicate:) would tell it which of the group's events it
	// holds.
	if s.Meta.Private && !s.IsMember(ev.PubKey) && !master {
		return refuse(RefusePrivate)
	}
	return accept
}

// call is one event's decision in progress (Decide): what the rule of each
// kind reads.
type call struct {
	p      Policy
	s      *State
	ev     *nostr.Event
	f      Facts
	id     string // the group's
	master bool   // the node or a relay admin
	lim    Limits // with defaults
	roles  []string
}

// allowed reports whether the author may do what: a master always may.
func (c call) allowed(what Privilege) bool { return c.master || may(c.roles, what) }

// join decides a join request (9021): by invite code, by trust rank, or pending in a closed group.
func (c call) join() Decision {
	p, s, ev, f, id, master, lim := c.p, c.s, c.ev, c.f, c.id, c.master, c.lim
	if s.IsMember(ev.PubKey) {
		return refuse(RefuseMember)
	}
	codes := Codes(ev)
	withhold := len(codes) > 0
	invited := slices.ContainsFunc(codes, func(c string) bool { return p.ValidInvite(s, c, f.Now) })
	if s.Meta.Closed && !invited {
		r := RefusePending
		if withhold {
			r = RefusePendingCode
		}
		d := refuse(r)
		d.Keep, d.Withhold = true, withhold
		return d
	}
	d := accept
	if !invited && !master && p.AdmitMinRank > 0 && f.Admission != nil {
		switch f.Admission(ev.PubKey) {
		case AdmitReview:
			d := refuse(CodePendingRank.With(ReasonPendingRank(p.AdmitMinRank)))
			d.Keep, d.Withhold = true, withhold
			return d
		case AdmitRanked:
			d.Message = MessageAdmittedRank(p.AdmitMinRank)
		}
	}
	if !p.History && s.MemberCount() >= lim.Members {
		return refuse(CodeMembersCap.With(ReasonMembersCap(lim.Members)))
	}
	d.Withhold = withhold
	d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindPutUser, ev.PubKey, nil, ev, f.Now)}
	return d
}

// leave decides a leave request (9022) of a member or of a pending user.
func (c call) leave() Decision {
	p, s, ev, f, id := c.p, c.s, c.ev, c.f, c.id
	if !s.IsMember(ev.PubKey) && !s.Pending(ev.PubKey) {
		return refuse(RefuseNotMember)
	}
	d := accept
	d.Emit = []*nostr.Event{p.nodeEvent(s, id, KindRemoveUser, ev.PubKey, nil, ev, f.Now)}
	return d
}

// users decides a put-user or remove-user (9000, 9001) by the author's roles, the roles given, and the members cap.
func (c call) users() Decision {
	p, s, ev, f, lim := c.p, c.s, c.ev, c.f, c.lim
	users := Users(ev)
	if len(users) == 0 {
		return refuse(RefuseNoUsers)
	}
	st := StampOf(ev, f.Seq)
	for _, u := range users {
		holder := len(s.RolesOf(u.PubKey)) > 0
		switch {
		case (len(u.Roles) > 0 || holder) && !c.allowed(ManageRoles):
			return refuse(CodeRole.With(reasonRole("giving, changing or taking away roles")))
		case ev.Kind == KindPutUser && !c.allowed(PutUser):
			return refuse(CodeRole.With(reasonRole("adding users")))
		case ev.Kind == KindRemoveUser && !c.allowed(RemoveUser):
			return refuse(CodeRole.With(reasonRole("removing users")))
		case len(u.Roles) > MaxRoles:
			return refuse(RefuseManyRoles)
		case !st.Newer(s.Members[u.PubKey].Stamp):
			return refuse(RefuseStale)
		}
	}
	if ev.Kind == KindPutUser && ev.PubKey != p.Node && !p.History {
		added := 0
		for _, u := range users {
			if !s.IsMember(u.PubKey) {
				added++
			}
		}
		if added > 0 && s.MemberCount()+added > lim.Members {
			return refuse(CodeMembersCap.With(ReasonMembersCap(lim.Members)))
		}
	}
	return accept
}

// metadata decides an edit of the metadata (9002), its place in the tree of groups included.
func (c call) metadata() Decision {
	p, s, ev, f, id, lim := c.p, c.s, c.ev, c.f, c.id, c.lim
	if !c.allowed(EditMetadata) {
		return refuse(CodeRole.With(reasonRole("editing the metadata")))
	}
	m, r := ParseMetadata(ev)
	if r.Text != "" {
		return refuse(r)
	}
	if !StampOf(ev, f.Seq).Newer(s.MetaAt) {
		return refuse(RefuseStale)
	}
	if r := p.checkTree(s, ev.PubKey, m, f.Forest); r.Text != "" {
		return refuse(r)
	}
	if m.Parent != "" && m.Parent != f.Forest.Parent(id) && !p.History {
		height := 0
		if f.Height != nil {
			height = f.Height(id)
		}
		if f.Forest.Depth(m.Parent)+1+height > lim.Depth {
			return refuse(CodeDepth.With(ReasonDepth(lim.Depth)))
		}
	}
	return accept
}

// deleteEvent decides a deletion of the group's events (9005): the events it hides.
func (c call) deleteEvent() Decision {
	ev, f, id := c.ev, c.f, c.id
	if !c.allowed(DeleteEvent) {
		return refuse(CodeRole.With(reasonRole("deleting events")))
	}
	var hide []string
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "e" || slices.Contains(hide, tag[1]) {
			continue
		}
		t, ok := f.Target(tag[1])
		if !ok || !slices.Contains(t.Scope, Scope(id)) {
			return refuse(RefuseNoTargets)
		}
		if IsModerationKind(t.Kind) || t.Kind == KindJoinRequest || t.Kind == KindLeaveRequest || IsStateKind(t.Kind) {
			return refuse(RefuseTargetKind)
		}
		hide = append(hide, tag[1])
	}
	if len(hide) == 0 {
		return refuse(RefuseNoTargets)
	}
	d := accept
	d.Hide = hide
	return d
}

// deleteGroup decides a deletion of the group (9008).
func (c call) deleteGroup() Decision {
	if !c.allowed(DeleteGroup) {
		return refuse(CodeRole.With(reasonRole("deleting the group")))
	}
	return accept
}

// pins decides the group's pinned events (KindPins): each target must be a post of the group, newer than the pins it replaces.
func (c call) pins() Decision {
	s, ev, f, id := c.s, c.ev, c.f, c.id
	if !c.allowed(PinEvents) {
		return refuse(CodeRole.With(reasonRole("pinning events")))
	}
	pins := Pins(ev)
	if len(pins) > MaxPins {
		return refuse(RefuseManyPins)
	}
	for _, pin := range pins {
		var t Target
		ok := false
		if pin[0] == "e" {
			t, ok = f.Target(pin[1])
		} else if f.Address != nil {
			t, ok = f.Address(pin[1])
		}
		switch {
		case !ok || !slices.Contains(t.Scope, Scope(id)):
			return refuse(RefuseNoPinTarget)
		case IsModerationKind(t.Kind) || t.Kind == KindJoinRequest || t.Kind == KindLeaveRequest || IsStateKind(t.Kind):
			return refuse(RefusePinKind)
		}
	}
	if !StampOf(ev, f.Seq).Newer(s.PinsAt) {
		return refuse(RefuseStale)
	}
	return accept
}

// invite decides an invite (9009): its codes, withheld from readers but the group's admins.
func (c call) invite() Decision {
	p, s, ev, f, lim := c.p, c.s, c.ev, c.f, c.lim
	if !c.allowed(CreateInvite) {
		return refuse(CodeRole.With(reasonRole("creating invites")))
	}
	codes := Codes(ev)
	switch {
	case len(codes) == 0:
		return refuse(RefuseNoCode)
	case p.History:
	case len(codes) > lim.CodesPerInvite:
		return refuse(CodeCodesPerInvite.With(ReasonCodesPerInvite(lim.CodesPerInvite)))
	case p.openCodes(s, f.Now, codes)+len(codes) > lim.OpenCodes:
		return refuse(CodeOpenCodes.With(ReasonOpenCodes(lim.OpenCodes)))
	}
	d := accept
	d.Withhold = true
	return d
}

// timeline checks the late-publication window and the timeline references
// (`previous` tags: one value each, or several in one tag as nostr-tools
// sends them) of ev, and returns why it is refused, or no reason.
func (p Policy) timeline(ev *nostr.Event, f Facts) protocol.Reason {
	if ev.PubKey == p.Node {
		return protocol.Reason{}
	}
	if !p.History && p.LateWindow > 0 && int64(ev.CreatedAt) < f.Now-int64(p.LateWindow/time.Second) {
		return CodeLate.With(ReasonLate(p.LateWindow))
	}
	var refs []string
	for _, tag := range ev.Tags {
		if len(tag) == 0 || tag[0] != "previous" {
			continue
		}
		for _, v := range tag[1:] {
			if !isPrefix(v) {
				return RefuseBadPrevious
			}
			if !slices.Contains(refs, v) {
				refs = append(refs, v)
			}
		}
	}
	if p.History {
		return protocol.Reason{}
	}
	var missing []string
	for _, r := range refs {
		if f.Known == nil || !f.Known(r) {
			missing = append(missing, r)
		}
	}
	switch {
	case len(missing) > 0:
		return CodeUnknownPrevious.With(ReasonUnknownPrevious(missing))
	case len(refs) < p.MinPrevious && ev.Kind != KindCreateGroup && ev.Kind != KindJoinRequest && ev.Kind != KindLeaveRequest:
		return CodeFewPrevious.With(ReasonFewPrevious(p.MinPrevious))
	}
	return protocol.Reason{}
}

// PrefixLen is the length of a timeline reference: the first 8 hex
// characters (4 bytes) of an event id.
const PrefixLen = 8

func isPrefix(v string) bool {
	if len(v) != PrefixLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Previous returns ev's well-formed timeline references, distinct.
func Previous(ev *nostr.Event) []string {
	var out []string
	for _, tag := range ev.Tags {
		if len(tag) == 0 || tag[0] != "previous" {
			continue
		}
		for _, v := range tag[1:] {
			if isPrefix(v) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// checkTree checks what a 9002 of group s with metadata m by author says of
// the tree (NIP-29 Subgroups, Rules): at most one parent (ParseMetadata), an
// existing one, not the group itself nor one of its subgroups, of which the
// author is an admin (or this relay's admin, or the node); and `child` tags
// that list exactly the group's subgroups.
func (p Policy) checkTree(s *State, author string, m Metadata, f Forest) protocol.Reason {
	if f == nil {
		f = Forest{s.ID: s}
	}
	if m.Parent != "" {
		x := f[m.Parent]
		switch {
		case m.Parent == s.ID:
			return RefuseSelfParent
		case !x.Exists():
			return CodeNoParent.With(ReasonNoParent(m.Parent))
		case author != p.Node && !p.Admins[author] && !may(x.RolesOf(author), EditMetadata):
			return CodeParentAdmin.With(ReasonParentAdmin(m.Parent))
		case f.Ancestor(s.ID, m.Parent):
			return RefuseCycle
		}
	}
	kids := f.Children(s.ID)
	for _, k := range kids {
		if !slices.Contains(m.Children, k) {
			return CodeMissingChild.With(ReasonMissingChild(k))
		}
	}
	for _, k := range m.Children {
		if !slices.Contains(kids, k) {
			return CodeNotChild.With(ReasonNotChild(k))
		}
	}
	return protocol.Reason{}
}

// nodeEvent returns the node's moderation event (unsigned: the store signs it)
// that puts (9000, with roles) or removes (9001) pubkey in group id because of
// cause. Its created_at is now, or later when needed so that it sets the
// user's register: not before cause, and after the user's current register
// (s may be nil for a group being created).
func (p Policy) nodeEvent(s *State, id string, kind int, pubkey string, roles []string, cause *nostr.Event, now int64) *nostr.Event {
	at := max(now, int64(cause.CreatedAt))
	if p.History {
		at = int64(cause.CreatedAt)
	}
	if s != nil {
		if cur := s.Members[pubkey].Stamp; !cur.IsZero() && cur.At >= at {
			at = cur.At + 1
		}
	}
	tags := nostr.Tags{{"h", id}, append(nostr.Tag{"p", pubkey}, roles...)}
	return &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags, PubKey: p.Node}
}
