package groups

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/schema"
)

// NIP-29 kinds this package handles.
const (
	KindPutUser      = 9000
	KindRemoveUser   = 9001
	KindEditMetadata = 9002
	KindDeleteEvent  = 9005
	KindCreateGroup  = 9007
	KindDeleteGroup  = 9008
	KindCreateInvite = 9009
	KindPins         = 9010
	KindJoinRequest  = 9021
	KindLeaveRequest = 9022
	KindMetadata     = 39000
	KindAdmins       = 39001
	KindMembers      = 39002
	KindRoles        = 39003
	KindPinned       = 39005
)

// StateKinds are the kinds of the node-signed state events of a group, in the
// order Render returns them.
var StateKinds = []int{KindMetadata, KindAdmins, KindMembers, KindRoles, KindPinned}

// IsModerationKind reports whether kind is one of NIP-29's moderation kinds
// (9000-9020), supported or not.
func IsModerationKind(kind int) bool { return kind >= 9000 && kind <= 9020 }

// IsStateKind reports whether kind is one of the relay-generated group kinds
// (39000-39005), which only the node publishes.
func IsStateKind(kind int) bool { return kind >= 39000 && kind <= 39005 }

// ScopePrefix starts the scope of every group: Scope(id) = ScopePrefix + id.
// Normalised `t` topics never contain an upper-case ASCII letter
// (protocol.NormalizeTopic, TestNodeTopicIsUnreachable), so no topic can
// collide with a group's scope, nor a client ask for it with #t. SQL reads
// it as schema.GroupScopePrefix (schema.GroupOfSQL).
const ScopePrefix = schema.GroupScopePrefix

// Scope returns the scope (outbox topic_id, event_topics row) of group id.
func Scope(id string) string { return ScopePrefix + id }

// IDOfScope returns the group id of a scope, and false for a topic that is
// not a group's.
func IDOfScope(topic string) (string, bool) {
	return strings.CutPrefix(topic, ScopePrefix)
}

// MaxIDBytes bounds a group id.
const MaxIDBytes = 64

// ValidID reports whether id is a group id this relay hosts: 1 to MaxIDBytes
// of a-z, A-Z, 0-9, '-' and '_' (NIP-29 allows any string; these fit a URL,
// a NATS subject and a log line as they are).
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Stamp orders the events that set one register: the later created_at wins;
// at the same created_at the later arrival (the event's ingested_at, as
// stored with it, in microseconds: Seq); in the same batch the lower id
// (NIP-01's tie rule). Arrival breaks ties so that two changes of one thing
// within one second (a script that adds a user, then gives them a role) both
// take effect in the order sent; it is stored with the event, so Project
// orders them as the relay did.
type Stamp struct {
	At  int64  `json:"at"`
	Seq int64  `json:"seq"`
	ID  string `json:"id"`
}

// StampOf returns the stamp of ev ingested at seq (unix microseconds).
func StampOf(ev *nostr.Event, seq int64) Stamp {
	return Stamp{At: int64(ev.CreatedAt), Seq: seq, ID: ev.ID}
}

// IsZero reports whether s stamps nothing.
func (s Stamp) IsZero() bool { return s.ID == "" }

// Newer reports whether s wins over o: o is zero, or s is later (created_at,
// then arrival), or as late with a lower id.
func (s Stamp) Newer(o Stamp) bool {
	switch {
	case o.IsZero() || s.At > o.At:
		return true
	case s.At < o.At:
		return false
	case s.Seq != o.Seq:
		return s.Seq > o.Seq
	}
	return s.ID < o.ID
}

// Metadata is what a 9002 (edit-metadata) sets, all at once: a field it does
// not carry is cleared.
type Metadata struct {
	Name    string `json:"name,omitempty"`
	Picture string `json:"picture,omitempty"`
	Banner  string `json:"banner,omitempty"`
	About   string `json:"about,omitempty"`
	// Restricted: only members write.
	Restricted bool `json:"restricted,omitempty"`
	// Closed: a join request is honoured only with a valid invite code.
	Closed bool `json:"closed,omitempty"`
	// Private: only members read the group's events (every event of its
	// scope), and only members write to it.
	Private bool `json:"private,omitempty"`
	// Hidden: only members read the group's state events (39000-39005).
	Hidden bool `json:"hidden,omitempty"`
	// Kinds, when not nil, are the only kinds the group accepts besides its
	// moderation and join/leave kinds (NIP-29 supported_kinds; empty: none).
	Kinds []int `json:"kinds,omitempty"`
	// AllKinds is true when no supported_kinds tag was given (Kinds nil).
	AllKinds bool `json:"all_kinds"`
	// Parent is the group this one asks to be a subgroup of (its `parent`
	// tag), "" for a root. Decide accepted it (the parent existed, the author
	// was its admin, no cycle); whether it still is the parent is the
	// State's Tree (a deleted parent makes its children roots).
	Parent string `json:"parent,omitempty"`
	// Children is the order of this group's subgroups its `child` tags gave
	// (every subgroup it had then, Decide checks), nil when it had none.
	Children []string `json:"children,omitempty"`
}

// ParentLink is one accepted 9002 of a group: when, and the parent it named
// ("" for none). State.Parents keeps all of them, so that when a group
// became the child of its current parent (Adopted) is a function of the set
// of its 9002s, whatever order they are applied in.
type ParentLink struct {
	Stamp  Stamp  `json:"stamp"`
	Parent string `json:"parent,omitempty"`
}

// Tree is where a group sits among the groups of this relay, derived from
// every group's State (Forest.Settle), never set by Apply: its parent (its
// Meta.Parent while that group exists, else "": a root) and its children in
// order (see Forest.Children). It is what 39000's parent and child tags say.
type Tree struct {
	Parent   string   `json:"parent,omitempty"`
	Children []string `json:"children,omitempty"`
}

// Membership is one user's group membership register: the newest 9000 (In,
// with its roles) or 9001 (not In) naming them.
type Membership struct {
	In    bool     `json:"in"`
	Roles []string `json:"roles,omitempty"`
	Stamp Stamp    `json:"stamp"`
}

// Invite is one code's register: the newest 9009 naming it.
type Invite struct {
	Stamp Stamp `json:"stamp"`
	// Expires is the 9009's own NIP-40 expiration (unix seconds), 0 if none.
	Expires int64 `json:"expires,omitempty"`
}

// State is one group as its stored moderation events make it (see the package
// doc: a set of last-writer-wins registers). The zero State of an id (New) is
// a group nobody created. Maps are never nil.
type State struct {
	ID string `json:"id"`
	// Created is the first 9007; Creator its author.
	Created Stamp  `json:"created"`
	Creator string `json:"creator,omitempty"`
	// Deleted is the first 9008, zero while the group lives.
	Deleted Stamp    `json:"deleted"`
	Meta    Metadata `json:"meta"`
	MetaAt  Stamp    `json:"meta_at"`
	// Members holds every user a 9000 or 9001 named, group members (In) or
	// not: NIP-29 group membership, neither a community member
	// (cn_relay.members) nor a NIP-43 relay member (docs/architecture.md
	// "Words").
	Members map[string]Membership `json:"members"`
	// Requests holds each user's newest join request (9021).
	Requests map[string]Stamp `json:"requests"`
	// Invites holds each code's newest 9009.
	Invites map[string]Invite `json:"invites"`
	// Parents holds every accepted 9002 (stamp and parent named), oldest first.
	Parents []ParentLink `json:"parents,omitempty"`
	// Pins is the newest 9010's list, in order: "e" or "a" tags (39005).
	Pins   []nostr.Tag `json:"pins,omitempty"`
	PinsAt Stamp       `json:"pins_at"`
	// Tree is derived from the forest (Forest.Settle).
	Tree Tree `json:"tree"`
}

// New returns the state of a group nobody created.
func New(id string) *State {
	return &State{ID: id, Meta: Metadata{AllKinds: true}, Members: map[string]Membership{},
		Requests: map[string]Stamp{}, Invites: map[string]Invite{}}
}

// Exists reports whether the group was created and not deleted.
func (s *State) Exists() bool { return s != nil && !s.Created.IsZero() && s.Deleted.IsZero() }

// IsMember reports whether pubkey is a member.
func (s *State) IsMember(pubkey string) bool { return s != nil && s.Members[pubkey].In }

// RolesOf returns pubkey's roles (none for a non-member).
func (s *State) RolesOf(pubkey string) []string {
	if m := s.Members[pubkey]; m.In {
		return m.Roles
	}
	return nil
}

// Pending reports whether pubkey has a join request waiting: one newer (by
// created_at) than the last 9000 or 9001 that named them, and not a member.
// The node's 9000 that honours a request is never older than the request
// (NodeEvents), so an honoured request is never pending.
func (s *State) Pending(pubkey string) bool {
	r, ok := s.Requests[pubkey]
	m := s.Members[pubkey]
	return ok && !m.In && r.At > m.Stamp.At
}

// PendingUsers returns the users whose join requests wait, sorted.
func (s *State) PendingUsers() []string {
	var out []string
	for pk := range s.Requests {
		if s.Pending(pk) {
			out = append(out, pk)
		}
	}
	slices.Sort(out)
	return out
}

// MemberList returns the members, sorted.
func (s *State) MemberList() []string {
	var out []string
	for pk, m := range s.Members {
		if m.In {
			out = append(out, pk)
		}
	}
	slices.Sort(out)
	return out
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := *s
	c.Meta.Kinds = slices.Clone(s.Meta.Kinds)
	c.Meta.Children = slices.Clone(s.Meta.Children)
	c.Parents = slices.Clone(s.Parents)
	c.Tree.Children = slices.Clone(s.Tree.Children)
	c.Pins = slices.Clone(s.Pins) // tags are never changed in place
	c.Members = make(map[string]Membership, len(s.Members))
	for k, m := range s.Members {
		m.Roles = slices.Clone(m.Roles)
		c.Members[k] = m
	}
	c.Requests = make(map[string]Stamp, len(s.Requests))
	for k, v := range s.Requests {
		c.Requests[k] = v
	}
	c.Invites = make(map[string]Invite, len(s.Invites))
	for k, v := range s.Invites {
		c.Invites[k] = v
	}
	return &c
}

// Dump returns the canonical JSON of s: equal states give equal bytes (map
// keys sorted, roles sorted by Apply).
func (s *State) Dump() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic("groups: state does not encode: " + err.Error()) // plain strings, ints and maps only
	}
	return b
}

// Load decodes a Dump.
func Load(data []byte) (*State, error) {
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, err
	}
	if s.Members == nil {
		s.Members = map[string]Membership{}
	}
	if s.Requests == nil {
		s.Requests = map[string]Stamp{}
	}
	if s.Invites == nil {
		s.Invites = map[string]Invite{}
	}
	return s, nil
}

// Apply folds ev, an event the relay accepted for group s.ID and ingested at
// seq (unix microseconds), into s. It does not authorise (Decide does) and is
// commutative: every register keeps the newest event that sets it
// (Stamp.Newer), Created and Deleted the oldest. An event that sets nothing (a
// chat message, a 9005, a 9022) changes nothing. It reports whether s changed.
func (s *State) Apply(ev *nostr.Event, seq int64) bool {
	st := StampOf(ev, seq)
	switch ev.Kind {
	case KindCreateGroup:
		if s.Created.IsZero() || !st.Newer(s.Created) { // the oldest
			s.Created, s.Creator = st, ev.PubKey
			return true
		}
	case KindDeleteGroup:
		if s.Deleted.IsZero() || !st.Newer(s.Deleted) {
			s.Deleted = st
			return true
		}
	case KindEditMetadata:
		m, _ := ParseMetadata(ev) // accepted events parse
		changed := s.logParent(ParentLink{Stamp: st, Parent: m.Parent})
		if st.Newer(s.MetaAt) {
			s.Meta, s.MetaAt = m, st
			changed = true
		}
		return changed
	case KindPutUser, KindRemoveUser:
		changed := false
		for _, u := range Users(ev) {
			if !st.Newer(s.Members[u.PubKey].Stamp) {
				continue
			}
			m := Membership{In: ev.Kind == KindPutUser, Stamp: st}
			if m.In {
				m.Roles = u.Roles
			}
			s.Members[u.PubKey] = m
			changed = true
		}
		return changed
	case KindPins:
		if st.Newer(s.PinsAt) {
			s.Pins, s.PinsAt = Pins(ev), st
			return true
		}
	case KindJoinRequest:
		if st.Newer(s.Requests[ev.PubKey]) {
			s.Requests[ev.PubKey] = st
			return true
		}
	case KindCreateInvite:
		exp, _ := protocol.Expiration(ev)
		changed := false
		for _, code := range Codes(ev) {
			if st.Newer(s.Invites[code].Stamp) {
				s.Invites[code] = Invite{Stamp: st, Expires: exp}
				changed = true
			}
		}
		return changed
	}
	return false
}

// logParent inserts l into s.Parents in stamp order (oldest first), once.
func (s *State) logParent(l ParentLink) bool {
	i, found := slices.BinarySearchFunc(s.Parents, l, func(a, b ParentLink) int {
		switch {
		case a.Stamp == b.Stamp:
			return 0
		case b.Stamp.Newer(a.Stamp):
			return -1
		}
		return 1
	})
	if found {
		return false
	}
	s.Parents = slices.Insert(s.Parents, i, l)
	return true
}

// Adopted returns the stamp of the 9002 that made s the child of its current
// parent: the oldest of the newest run of 9002s naming that parent (zero for
// a root).
func (s *State) Adopted() Stamp {
	if s.Meta.Parent == "" || len(s.Parents) == 0 {
		return Stamp{}
	}
	var at Stamp
	for i := len(s.Parents) - 1; i >= 0 && s.Parents[i].Parent == s.Meta.Parent; i-- {
		at = s.Parents[i].Stamp
	}
	return at
}

// User is one `p` tag of a 9000 or 9001: a pubkey and, for a 9000, its roles
// (sorted, without duplicates or empty names).
type User struct {
	PubKey string
	Roles  []string
}

// MaxRoles bounds the roles one 9000 gives one user.
const MaxRoles = 16

// Users returns the well-formed `p` tags of a 9000 or 9001 (a pubkey named
// twice counts once, the first time).
func Users(ev *nostr.Event) []User {
	var out []User
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "p" || !protocol.IsHex64(tag[1]) ||
			slices.ContainsFunc(out, func(u User) bool { return u.PubKey == tag[1] }) {
			continue
		}
		u := User{PubKey: tag[1]}
		if ev.Kind == KindPutUser {
			for _, r := range tag[2:] {
				if r = strings.TrimSpace(r); r != "" && !slices.Contains(u.Roles, r) {
					u.Roles = append(u.Roles, r)
				}
			}
			slices.Sort(u.Roles)
		}
		out = append(out, u)
	}
	return out
}

// MaxPins bounds a group's pinned events (NIP-29: the relay may limit them).
const MaxPins = 50

// Pins returns the well-formed `e` (an event id) and `a` (an address) tags
// of a 9010, in order, each once, as ["e", id] or ["a", address].
func Pins(ev *nostr.Event) []nostr.Tag {
	var out []nostr.Tag
	for _, tag := range ev.Tags {
		if len(tag) < 2 || (tag[0] != "e" || !protocol.IsHex64(tag[1])) && (tag[0] != "a" || !validAddress(tag[1])) {
			continue
		}
		t := nostr.Tag{tag[0], tag[1]}
		if !slices.ContainsFunc(out, func(o nostr.Tag) bool { return slices.Equal(o, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// validAddress reports whether a is kind:pubkey:d with an addressable kind.
func validAddress(a string) bool {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 || !protocol.IsHex64(parts[1]) {
		return false
	}
	k, err := strconv.Atoi(parts[0])
	return err == nil && k >= 30000 && k < 40000
}

// MaxCodeBytes bounds an invite code.
const MaxCodeBytes = 128

// Codes returns the distinct `code` values of ev (a 9009 or a 9021), in tag
// order, each 1 to MaxCodeBytes bytes.
func Codes(ev *nostr.Event) []string {
	var out []string
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "code" && tag[1] != "" && len(tag[1]) <= MaxCodeBytes && !slices.Contains(out, tag[1]) {
			out = append(out, tag[1])
		}
	}
	return out
}

// hasTag reports whether ev has a tag named name.
func hasTag(ev *nostr.Event, name string) bool {
	return slices.ContainsFunc(ev.Tags, func(t nostr.Tag) bool { return len(t) >= 1 && t[0] == name })
}

// ParseMetadata reads a 9002's fields, or says why the relay refuses it: the
// flags and features this relay does not support (livekit), malformed
// supported_kinds, more than one parent, a malformed or repeated parent or
// child id. (Whether the parent exists and the children are all the group's
// is Decide's.)
func ParseMetadata(ev *nostr.Event) (Metadata, protocol.Reason) {
	m := Metadata{AllKinds: true}
	for _, tag := range ev.Tags {
		if len(tag) == 0 {
			continue
		}
		val := ""
		if len(tag) >= 2 {
			val = tag[1]
		}
		switch tag[0] {
		case "name":
			m.Name = val
		case "picture":
			m.Picture = val
		case "banner":
			m.Banner = val
		case "about":
			m.About = val
		case "restricted":
			m.Restricted = true
		case "closed":
			m.Closed = true
		case "private":
			m.Private = true
		case "hidden":
			m.Hidden = true
		case "parent":
			if m.Parent != "" {
				return Metadata{}, RefuseManyParents
			}
			if !ValidID(val) {
				return Metadata{}, RefuseBadParent
			}
			m.Parent = val
		case "child":
			if !ValidID(val) {
				return Metadata{}, RefuseBadChild
			}
			if slices.Contains(m.Children, val) {
				return Metadata{}, RefuseDupChild
			}
			m.Children = append(m.Children, val)
		case "livekit":
			return Metadata{}, RefuseLivekit
		case "supported_kinds":
			m.AllKinds = false
			m.Kinds = []int{}
			for _, v := range tag[1:] {
				k, err := strconv.Atoi(v)
				if err != nil || k < 0 || k > 65535 {
					return Metadata{}, RefuseBadKinds
				}
				if !slices.Contains(m.Kinds, k) {
					m.Kinds = append(m.Kinds, k)
				}
			}
			slices.Sort(m.Kinds)
		}
		// "public" and "open" (the older spelling of the defaults) and any
		// other tag set nothing.
	}
	return m, protocol.Reason{}
}
