package groups

import (
	"slices"
	"strconv"

	"github.com/nbd-wtf/go-nostr"
)

// Render returns the unsigned state events of s, in StateKinds order (39000
// metadata, 39001 admins, 39002 members, 39003 roles), with their tags only:
// the caller sets created_at and signs with the node key. Equal states render
// equal tags (users sorted by pubkey).
//
// 39000 carries name, picture, banner and about when set, `private` when set
// (else `public`), `hidden`, `restricted` and `closed` when set, and `open`
// unless closed (`public` and `open` are the older
// spelling of the defaults, for clients that still look for them; the current
// text reads their absence the same way), and supported_kinds when the group
// limits its kinds, and the group's place in the tree (State.Tree: NIP-29
// Subgroups): `parent` unless a root, a `child` per subgroup in order. 39001 lists each member holding a role this relay gives
// privileges to, with all their roles. 39002 lists every member. 39005 lists
// the pinned events (the newest 9010's e and a tags, in order).
func Render(s *State) []*nostr.Event {
	meta := nostr.Tags{{"d", s.ID}}
	for _, f := range [][2]string{{"name", s.Meta.Name}, {"picture", s.Meta.Picture}, {"banner", s.Meta.Banner}, {"about", s.Meta.About}} {
		if f[1] != "" {
			meta = append(meta, nostr.Tag{f[0], f[1]})
		}
	}
	if s.Meta.Private {
		meta = append(meta, nostr.Tag{"private"})
	} else {
		meta = append(meta, nostr.Tag{"public"})
	}
	if s.Meta.Hidden {
		meta = append(meta, nostr.Tag{"hidden"})
	}
	if s.Meta.Restricted {
		meta = append(meta, nostr.Tag{"restricted"})
	}
	if s.Meta.Closed {
		meta = append(meta, nostr.Tag{"closed"})
	} else {
		meta = append(meta, nostr.Tag{"open"})
	}
	if s.Tree.Parent != "" {
		meta = append(meta, nostr.Tag{"parent", s.Tree.Parent})
	}
	for _, c := range s.Tree.Children {
		meta = append(meta, nostr.Tag{"child", c})
	}
	if !s.Meta.AllKinds {
		kinds := nostr.Tag{"supported_kinds"}
		for _, k := range s.Meta.Kinds {
			kinds = append(kinds, strconv.Itoa(k))
		}
		meta = append(meta, kinds)
	}

	admins := nostr.Tags{{"d", s.ID}}
	members := nostr.Tags{{"d", s.ID}}
	for _, pk := range s.MemberList() {
		members = append(members, nostr.Tag{"p", pk})
		if roles := s.Members[pk].Roles; privileged(roles) {
			admins = append(admins, append(nostr.Tag{"p", pk}, roles...))
		}
	}

	roles := nostr.Tags{{"d", s.ID}}
	for _, r := range Roles {
		roles = append(roles, nostr.Tag{"role", r.Name, r.Description})
	}
	return []*nostr.Event{
		{Kind: KindMetadata, Tags: meta},
		{Kind: KindAdmins, Tags: admins, Content: "admins of this group and their roles"},
		{Kind: KindMembers, Tags: members, Content: "members of this group"},
		{Kind: KindRoles, Tags: roles, Content: "roles this relay supports"},
		{Kind: KindPinned, Tags: append(nostr.Tags{{"d", s.ID}}, s.Pins...)},
	}
}

// Changed returns the state events of after that differ from those of
// before (nil before: a new group, all of them), in StateKinds order.
func Changed(before, after *State) []*nostr.Event {
	now := Render(after)
	if before == nil || before.Created.IsZero() {
		return now
	}
	was := Render(before)
	var out []*nostr.Event
	for i, ev := range now {
		if !slices.EqualFunc(ev.Tags, was[i].Tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) }) || ev.Content != was[i].Content {
			out = append(out, ev)
		}
	}
	return out
}

// Address returns the NIP-01 address of group id's state event of kind,
// signed by node.
func Address(kind int, node, id string) string {
	return strconv.Itoa(kind) + ":" + node + ":" + id
}
