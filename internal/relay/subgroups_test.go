package relay

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
)

// tree returns the parent and the children (in order) a group's 39000 says.
func (g *groupRelay) tree(t *testing.T, c *client, id string) (string, []string) {
	t.Helper()
	parent, kids := "", []string{}
	for _, tag := range g.stateOf(t, c, groups.KindMetadata, id).Tags {
		switch {
		case len(tag) >= 2 && tag[0] == "parent":
			require.Empty(t, parent, "one parent tag at most")
			parent = tag[1]
		case len(tag) >= 2 && tag[0] == "child":
			kids = append(kids, tag[1])
		}
	}
	return parent, kids
}

// requireRebuildEqualsLive: groups.Project over the stored events gives the
// live states, and the node's visible 39000 of every live group is what
// Render says of the projected state.
func (g *groupRelay) requireRebuildEqualsLive(t *testing.T, c *client) {
	t.Helper()
	ctx := context.Background()
	stored, err := groups.Stored(ctx, g.db.Pool)
	require.NoError(t, err)
	projected := groups.Project(stored)
	live, err := groups.Live(ctx, g.db.Pool)
	require.NoError(t, err)
	for _, id := range groups.Diff(projected, live) {
		require.Failf(t, "rebuild differs from live", "%s\nrebuilt: %s\nlive:    %s", id, projected[id].Dump(), live[id].Dump())
	}
	for id, s := range projected {
		if !s.Exists() {
			continue
		}
		require.Equal(t, groups.Render(s)[0].Tags, g.stateOf(t, c, groups.KindMetadata, id).Tags, id)
	}
}

// TestGroupSubgroups drives NIP-29 Subgroups' Rules with raw events: each
// refusal with its NIP-01 prefix, the node-signed 39000 of the child and of
// its old and new parents after each change, child order (append, reorder),
// independence of membership, and a deleted parent's children becoming roots.
func TestGroupSubgroups(t *testing.T) {
	t.Parallel()
	operator := newKey(t)
	g := startGroupRelay(t, func(p *groups.Policy) {
		p.Creators = groups.CreatorsAny
		p.Admins = map[string]bool{operator.pk: true}
	})
	c := dial(t, g.url)
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	n := 0
	meta := func(k key, id string, tags ...nostr.Tag) *nostr.Event {
		n++ // never the same event twice in one second (it would be a duplicate)
		return k.signed(t, groups.KindEditMetadata, append(nostr.Tags{h(id), {"name", id}}, tags...), fmt.Sprint(n))
	}
	parent := func(id string) nostr.Tag { return nostr.Tag{"parent", id} }
	child := func(id string) nostr.Tag { return nostr.Tag{"child", id} }

	var doc struct {
		NIP29 struct {
			Subgroups bool `json:"subgroups"`
		} `json:"nip29"`
	}
	getNIP11(t, g.http, &doc)
	require.True(t, doc.NIP29.Subgroups)

	for _, id := range []string{"tech", "social", "nostr", "nip29"} {
		c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h(id)}, ""))
	}
	c.accepted(bob.signed(t, groups.KindCreateGroup, nostr.Tags{h("bobs")}, ""))

	// Adoption: the child's 39000 names its parent, the parent's lists it.
	c.accepted(meta(alice, "nostr", parent("tech")))
	p, kids := g.tree(t, c, "nostr")
	require.Equal(t, "tech", p)
	require.Empty(t, kids)
	p, kids = g.tree(t, c, "tech")
	require.Empty(t, p)
	require.Equal(t, []string{"nostr"}, kids)

	// The Rules' refusals.
	c.refused(meta(alice, "nip29", parent("tech"), parent("social")), "invalid: a group has at most one parent")
	c.refused(meta(alice, "nip29", parent("nip29")), "invalid: a group cannot be its own parent")
	c.refused(meta(alice, "nip29", parent("nowhere")), `invalid: parent group "nowhere" does not exist on this relay`)
	c.refused(meta(alice, "nip29", parent("bad id!")), "invalid: the parent tag must name a group id")
	c.refused(meta(bob, "bobs", parent("tech")), `restricted: only an admin of group "tech"`)
	c.refused(meta(alice, "tech", child("nostr"), parent("nostr")), "invalid: this parent would make a cycle")
	c.accepted(meta(alice, "nip29", parent("nostr")))
	c.refused(meta(alice, "tech", child("nostr"), parent("nip29")), "invalid: this parent would make a cycle")
	c.refused(meta(alice, "tech"), `invalid: this group has subgroups: its metadata edits list every one as a child tag, in the order wanted \(missing "nostr"\)`)
	c.refused(meta(alice, "tech", child("nostr"), child("social")), `invalid: child "social" is not a subgroup of this group`)
	c.refused(meta(alice, "tech", child("nostr"), child("nostr")), "invalid: a child tag names the same subgroup twice")
	c.refused(meta(alice, "tech", child("bad id!")), "invalid: a child tag must name a group id")
	// A member of the parent without a role there cannot attach to it either.
	c.accepted(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("tech")}, ""))
	c.refused(meta(bob, "bobs", parent("tech")), `restricted: only an admin of group "tech"`)
	// Membership does not cascade: bob is in tech, not in its subgroups.
	require.NotContains(t, members(g.stateOf(t, c, groups.KindMembers, "nostr")), bob.pk)
	require.Contains(t, members(g.stateOf(t, c, groups.KindMembers, "tech")), bob.pk)
	// Nor do roles: alice, admin of tech, is no admin of bobs.
	c.refused(meta(alice, "bobs", parent("tech")), "restricted: your roles in this group do not allow editing")
	// The relay's admins may.
	c.accepted(meta(operator, "bobs", parent("tech")))

	// New children are appended; the parent's admin reorders with all of them.
	c.accepted(meta(alice, "social", parent("tech")))
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"nostr", "bobs", "social"}, kids)
	c.accepted(meta(alice, "tech", child("social"), child("nostr"), child("bobs")))
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"social", "nostr", "bobs"}, kids)
	// A child's own later edit keeps its place.
	c.accepted(meta(alice, "social", parent("tech"), nostr.Tag{"about", "people"}))
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"social", "nostr", "bobs"}, kids)

	// Moving: both parents' 39000 change in the batch of the 9002.
	c.accepted(meta(alice, "nostr", parent("social"), child("nip29")))
	p, _ = g.tree(t, c, "nostr")
	require.Equal(t, "social", p)
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"social", "bobs"}, kids)
	_, kids = g.tree(t, c, "social")
	require.Equal(t, []string{"nostr"}, kids)
	// Coming back to a parent is a new adoption: appended, not at the old place.
	c.accepted(meta(alice, "nostr", parent("tech"), child("nip29")))
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"social", "bobs", "nostr"}, kids)
	// Detaching: no parent tag makes a root.
	c.accepted(meta(alice, "nip29"))
	p, _ = g.tree(t, c, "nip29")
	require.Empty(t, p)
	_, kids = g.tree(t, c, "nostr")
	require.Empty(t, kids)
	// A deleted child leaves its parent's list.
	c.accepted(operator.signed(t, groups.KindDeleteGroup, nostr.Tags{h("bobs")}, ""))
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"social", "nostr"}, kids)

	// Deleting a parent makes its children roots.
	c.accepted(meta(alice, "nip29", parent("social")))
	c.accepted(alice.signed(t, groups.KindDeleteGroup, nostr.Tags{h("social")}, ""))
	p, _ = g.tree(t, c, "nip29")
	require.Empty(t, p, "a deleted parent's child is a root")
	_, kids = g.tree(t, c, "tech")
	require.Equal(t, []string{"nostr"}, kids)
	c.refused(meta(alice, "nip29", parent("social")), `invalid: parent group "social" does not exist on this relay`)
	// Historical events of a moved group stay: nostr's messages are still there.
	c.accepted(carol.signed(t, 9, nostr.Tags{h("nostr")}, "still here"))
	require.Len(t, g.query(t, c, map[string]any{"#h": []string{"nostr"}, "kinds": []int{9}}), 1)

	g.requireRebuildEqualsLive(t, c)
	// Exactly one visible 39000 per live group, signed by the node.
	evs := g.query(t, c, map[string]any{"kinds": []int{groups.KindMetadata}})
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.Tags.GetD())
	}
	slices.Sort(ids)
	require.Equal(t, []string{"nip29", "nostr", "tech"}, ids)
}

// TestGroupTimelineAndLate: timeline references (previous) must name events
// of the group this relay has; --group-min-previous asks for some; events
// older than the late-publication window are refused.
func TestGroupTimelineAndLate(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) {
		p.Creators = groups.CreatorsAny
		p.LateWindow = groups.DefaultLateWindow
	})
	c := dial(t, g.url)
	alice, bob := newKey(t), newKey(t)
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("a")}, ""))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("b")}, ""))
	first := bob.signed(t, 9, nostr.Tags{h("a")}, "first")
	c.accepted(first)
	elsewhere := bob.signed(t, 9, nostr.Tags{h("b")}, "in b")
	c.accepted(elsewhere)
	meta := g.stateOf(t, c, groups.KindMetadata, "a")

	prev := func(ids ...string) nostr.Tag { return append(nostr.Tag{"previous"}, ids...) }
	c.accepted(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:8])}, "one ref"))
	// nostr-tools puts all references in one tag; one tag each works too.
	c.accepted(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:8], meta.ID[:8])}, "two refs"))
	c.accepted(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:8]), prev(meta.ID[:8])}, "two tags"))
	c.refused(alice.signed(t, 9, nostr.Tags{h("a"), prev(elsewhere.ID[:8])}, "other group"),
		"invalid: previous names events this relay does not have in this group: "+elsewhere.ID[:8])
	c.refused(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:8], "00000000")}, ""), "invalid: previous names events this relay does not have")
	c.refused(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:7])}, ""), "invalid: a previous tag names events by the first 8 characters")
	c.refused(alice.signed(t, 9, nostr.Tags{h("a"), prev(first.ID[:8] + "ff")}, ""), "invalid: a previous tag")
	c.refused(alice.signed(t, 9, nostr.Tags{h("a"), prev("ABCDEF01")}, ""), "invalid: a previous tag")
	// Moderation events are checked the same way.
	c.refused(alice.signed(t, groups.KindPutUser, nostr.Tags{h("a"), {"p", bob.pk}, prev("ffffffff")}, ""), "invalid: previous names events")

	// Late publication.
	late := &nostr.Event{Kind: 9, CreatedAt: nostr.Now() - 3600, Tags: nostr.Tags{h("a")}, Content: "an hour ago"}
	require.NoError(t, late.Sign(bob.sk))
	c.refused(late, `invalid: created_at is more than 15m0s in the past`)
	lateMod := &nostr.Event{Kind: groups.KindPutUser, CreatedAt: nostr.Now() - 3600, Tags: nostr.Tags{h("a"), {"p", bob.pk}}}
	require.NoError(t, lateMod.Sign(alice.sk))
	c.refused(lateMod, `invalid: created_at is more than 15m0s in the past`)
	recent := &nostr.Event{Kind: 9, CreatedAt: nostr.Now() - 600, Tags: nostr.Tags{h("a")}, Content: "ten minutes ago"}
	require.NoError(t, recent.Sign(bob.sk))
	c.accepted(recent)
	// Not a group event: no window.
	old := alice.note(t, "old topic post", func(ev *nostr.Event) { ev.CreatedAt = nostr.Now() - 86400 })
	c.accepted(old)

	// A relay that asks for references.
	g3 := startGroupRelay(t, func(p *groups.Policy) { p.Creators = groups.CreatorsAny; p.MinPrevious = 3 })
	c3 := dial(t, g3.url)
	c3.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("a")}, ""))
	var refs []string
	for _, k := range groups.StateKinds {
		refs = append(refs, g3.stateOf(t, c3, k, "a").ID[:8])
	}
	c3.accepted(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("a")}, ""))
	c3.refused(bob.signed(t, 9, nostr.Tags{h("a")}, "none"), "restricted: this relay asks group events to reference at least 3")
	c3.refused(bob.signed(t, 9, nostr.Tags{h("a"), prev(refs[:2]...)}, "two"), "restricted: this relay asks group events to reference at least 3")
	c3.refused(bob.signed(t, 9, nostr.Tags{h("a"), prev(refs[0], refs[0], refs[1])}, "repeated"), "restricted: this relay asks")
	c3.accepted(bob.signed(t, 9, nostr.Tags{h("a"), prev(refs[:3]...)}, "three"))
}

// TestGroupPins: 9010 sets the group's pinned events (39005, signed by the
// node, in the order given); only events of the group, no history, not by
// a member without a role, at most groups.MaxPins.
func TestGroupPins(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) { p.Creators = groups.CreatorsAny })
	c := dial(t, g.url)
	alice, bob := newKey(t), newKey(t)
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("pins")}, ""))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("other")}, ""))
	require.Equal(t, nostr.Tags{{"d", "pins"}}, g.stateOf(t, c, groups.KindPinned, "pins").Tags, "no pins yet")
	one, two := bob.signed(t, 9, nostr.Tags{h("pins")}, "one"), bob.signed(t, 9, nostr.Tags{h("pins")}, "two")
	c.accepted(one)
	c.accepted(two)
	article := bob.signed(t, 30023, nostr.Tags{h("pins"), {"d", "guide"}}, "a guide")
	c.accepted(article)
	elsewhere := bob.signed(t, 9, nostr.Tags{h("other")}, "elsewhere")
	c.accepted(elsewhere)
	addr := "30023:" + bob.pk + ":guide"

	c.accepted(alice.signed(t, groups.KindPins, nostr.Tags{h("pins"), {"e", two.ID}, {"a", addr}, {"e", one.ID}}, ""))
	require.Equal(t, nostr.Tags{{"d", "pins"}, {"e", two.ID}, {"a", addr}, {"e", one.ID}}, g.stateOf(t, c, groups.KindPinned, "pins").Tags)
	c.refused(alice.signed(t, groups.KindPins, nostr.Tags{h("pins"), {"e", elsewhere.ID}}, ""), "invalid: a pinned event must be an event of this group")
	c.refused(alice.signed(t, groups.KindPins, nostr.Tags{h("pins"), {"a", "30023:" + bob.pk + ":nothing"}}, ""), "invalid: a pinned event must be an event of this group")
	put := g.query(t, c, map[string]any{"kinds": []int{groups.KindPutUser}, "#h": []string{"pins"}})
	require.NotEmpty(t, put)
	c.refused(alice.signed(t, groups.KindPins, nostr.Tags{h("pins"), {"e", put[0].ID}}, ""), "invalid: group moderation, join/leave and state events cannot be pinned")
	c.refused(bob.signed(t, groups.KindPins, nostr.Tags{h("pins"), {"e", one.ID}}, ""), "restricted: your roles in this group do not allow pinning events")
	many := nostr.Tags{h("pins")}
	for range groups.MaxPins + 1 {
		ev := bob.signed(t, 9, nostr.Tags{h("pins")}, fmt.Sprint("msg ", len(many)))
		c.accepted(ev)
		many = append(many, nostr.Tag{"e", ev.ID})
	}
	c.refused(alice.signed(t, groups.KindPins, many, ""), fmt.Sprintf("invalid: at most %d pinned events", groups.MaxPins))
	// An empty list clears the pins.
	c.accepted(alice.signed(t, groups.KindPins, nostr.Tags{h("pins")}, "clear"))
	require.Equal(t, nostr.Tags{{"d", "pins"}}, g.stateOf(t, c, groups.KindPinned, "pins").Tags)
	g.requireRebuildEqualsLive(t, c)
}
