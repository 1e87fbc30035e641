package groups

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// The caps of issue 47 ("no bound on the new surfaces"), decided purely.

// TestHostileGroupsPerKey: one key created 365 groups in 6 s; a key gets
// Limits.CreatedPerDay a day and Limits.CreatedInAll in all, the relay's
// admins and the node none.
func TestHostileGroupsPerKey(t *testing.T) {
	t.Parallel()
	node, opAdmin, author := newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Admins: map[string]bool{opAdmin.pk: true}, Creators: CreatorsAny,
		Limits: Limits{CreatedPerDay: 3, CreatedInAll: 5}}
	create := func(u user, c Created) Decision {
		return pol.Decide(nil, u.ev(t, KindCreateGroup, now, nostr.Tag{"h", fmt.Sprint("g", c.Day, "_", c.All)}), Facts{Now: now, Created: c})
	}
	require.True(t, create(author, Created{Day: 2, All: 4}).OK)
	d := create(author, Created{Day: 3, All: 3})
	require.False(t, d.OK)
	require.Equal(t, ReasonCreatedPerDay(3), d.Message)
	require.True(t, strings.HasPrefix(d.Message, "restricted: "))
	d = create(author, Created{Day: 0, All: 5})
	require.False(t, d.OK)
	require.Equal(t, ReasonCreatedInAll(5), d.Message)
	require.True(t, create(opAdmin, Created{Day: 50, All: 500}).OK)
	require.True(t, create(node, Created{Day: 50, All: 500}).OK)

	// The defaults hold without a flag: hundreds of groups are refused.
	pol.Limits = Limits{}
	require.False(t, create(author, Created{Day: 0, All: 365}).OK)
	require.False(t, create(author, Created{Day: 365, All: 365}).OK)
}

// grown returns a group g created by admin with n more members.
func grown(t *testing.T, node, admin user, n int) *State {
	t.Helper()
	s := New("g")
	s.Apply(admin.ev(t, KindCreateGroup, now-100, nostr.Tag{"h", "g"}), 0)
	s.Apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, RoleAdmin}), 0)
	for range n {
		s.Apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", newUser(t).pk}), 0)
	}
	return s
}

// TestHostileMembersPerGroup: one 9000 put 1,500 made-up keys in a group; a
// 9000 that takes a group past Limits.Members is refused whole, and so is a
// join request that an open group (or a valid code) would honour at once.
func TestHostileMembersPerGroup(t *testing.T) {
	t.Parallel()
	node, admin := newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsAny, Limits: Limits{Members: 5}}
	s := grown(t, node, admin, 2) // 3 members
	f := Facts{Now: now, Seq: 1}
	h := nostr.Tag{"h", "g"}
	put := func(n int, also ...string) *nostr.Event {
		tags := nostr.Tags{h}
		for range n {
			tags = append(tags, nostr.Tag{"p", newUser(t).pk})
		}
		for _, pk := range also {
			tags = append(tags, nostr.Tag{"p", pk})
		}
		return admin.ev(t, KindPutUser, now, tags...)
	}
	require.True(t, pol.Decide(s, put(2), f).OK)
	d := pol.Decide(s, put(3), f)
	require.False(t, d.OK)
	require.Equal(t, ReasonMembersCap(5), d.Message)
	require.False(t, d.Keep)
	// Naming members already in (a role change) adds nobody.
	full := s.Clone()
	require.True(t, full.Apply(put(2), 2))
	require.Equal(t, 5, full.MemberCount())
	require.True(t, pol.Decide(full, admin.ev(t, KindPutUser, now+1, h, nostr.Tag{"p", admin.pk, RoleAdmin, "moderator"}), f).OK)
	require.False(t, pol.Decide(full, put(1), f).OK)

	// A join to the open, full group is refused (not kept, nothing emitted);
	// one to a group with room is honoured.
	joiner := newUser(t)
	d = pol.Decide(full, joiner.ev(t, KindJoinRequest, now, h), f)
	require.Equal(t, Decision{Message: ReasonMembersCap(5), Code: CodeMembersCap}, d)
	require.True(t, pol.Decide(s, joiner.ev(t, KindJoinRequest, now, h), f).OK)
	// With a valid code to a closed group: refused too.
	full.Meta.Closed = true
	require.True(t, full.Apply(admin.ev(t, KindCreateInvite, now, h, nostr.Tag{"code", "c1"}), 3))
	d = pol.Decide(full, joiner.ev(t, KindJoinRequest, now, h, nostr.Tag{"code", "c1"}), f)
	require.False(t, d.OK)
	require.False(t, d.Keep)
	require.Equal(t, ReasonMembersCap(5), d.Message)
	// Without one it waits for the admins, as before.
	d = pol.Decide(full, joiner.ev(t, KindJoinRequest, now, h), f)
	require.True(t, d.Keep)
	require.Equal(t, ReasonPending, d.Message)

	// The default: 10,000 members is normal.
	pol.Limits = Limits{}
	big := grown(t, node, admin, 0)
	for i := range 10_000 {
		big.Members[fmt.Sprintf("%064x", i)] = Membership{In: true}
	}
	require.True(t, pol.Decide(big, put(50), f).OK)
}

// TestHostileSubgroupDepth: a subgroup chain 300 deep was accepted; a 9002
// whose parent puts the group, or its own subgroups, deeper than
// Limits.Depth is refused.
func TestHostileSubgroupDepth(t *testing.T) {
	t.Parallel()
	node, admin := newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsAny, Limits: Limits{Depth: 3}}
	forest := Forest{}
	mk := func(id, parent string) {
		s := New(id)
		s.Apply(admin.ev(t, KindCreateGroup, now-100, nostr.Tag{"h", id}), 0)
		s.Apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", id}, nostr.Tag{"p", admin.pk, RoleAdmin}), 0)
		tags := nostr.Tags{{"h", id}}
		if parent != "" {
			tags = append(tags, nostr.Tag{"parent", parent})
		}
		s.Apply(admin.ev(t, KindEditMetadata, now-90, tags...), 0)
		forest[id] = s
	}
	mk("r", "")
	mk("a", "r") // depth 1
	mk("b", "a") // 2
	mk("c", "b") // 3
	mk("x", "")
	mk("y", "x") // x has one level below it
	edit := func(id, parent string) *nostr.Event {
		tags := nostr.Tags{{"h", id}, {"parent", parent}}
		for _, k := range forest.Children(id) {
			tags = append(tags, nostr.Tag{"child", k})
		}
		return admin.ev(t, KindEditMetadata, now, tags...)
	}
	heights := map[string]int{"x": 1}
	f := Facts{Now: now, Seq: 1, Forest: forest, Height: func(id string) int { return heights[id] }}
	require.Equal(t, 3, forest.Depth("c"))

	// A new leaf under c would be at depth 4.
	mk("n", "")
	d := pol.Decide(forest["n"], edit("n", "c"), f)
	require.False(t, d.OK)
	require.Equal(t, ReasonDepth(3), d.Message)
	require.True(t, pol.Decide(forest["n"], edit("n", "b"), f).OK)
	// x (with y below it) under b would put y at depth 4: refused; under a, fine.
	require.Equal(t, ReasonDepth(3), pol.Decide(forest["x"], edit("x", "b"), f).Message)
	require.True(t, pol.Decide(forest["x"], edit("x", "a"), f).OK)
	// An edit that keeps the parent is not refused, however deep (c is at the cap).
	require.True(t, pol.Decide(forest["c"], edit("c", "b"), f).OK)

	// The default (16) refuses a chain dozens deep.
	pol.Limits = Limits{}
	prev := "r"
	for i := range 20 {
		id := fmt.Sprint("d", i)
		mk(id, "")
		d := pol.Decide(forest[id], edit(id, prev), f)
		if forest.Depth(prev)+1 > DefaultDepth {
			require.Equal(t, ReasonDepth(DefaultDepth), d.Message, id)
			break
		}
		require.True(t, d.OK, d.Message)
		forest[id].Apply(edit(id, prev), 2)
		prev = id
	}
	require.Equal(t, DefaultDepth, forest.Depth(prev))
}

// TestHostileInviteCodes: one 9009 carried 1,990 codes, and 434 more
// followed; a 9009 carries at most Limits.CodesPerInvite codes and a group
// holds at most Limits.OpenCodes valid ones (expired ones do not count).
func TestHostileInviteCodes(t *testing.T) {
	t.Parallel()
	node, admin := newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsAny, InviteTTL: 3600e9, Limits: Limits{CodesPerInvite: 3, OpenCodes: 5}}
	s := grown(t, node, admin, 0)
	h := nostr.Tag{"h", "g"}
	invite := func(at int64, codes ...string) *nostr.Event {
		tags := nostr.Tags{h}
		for _, c := range codes {
			tags = append(tags, nostr.Tag{"code", c})
		}
		return admin.ev(t, KindCreateInvite, at, tags...)
	}
	f := Facts{Now: now, Seq: 1}
	d := pol.Decide(s, invite(now, "a", "b", "c", "d"), f)
	require.False(t, d.OK)
	require.False(t, d.Keep)
	require.Equal(t, ReasonCodesPerInvite(3), d.Message)
	require.True(t, strings.HasPrefix(d.Message, "restricted: "))

	ok := invite(now, "a", "b", "c")
	require.True(t, pol.Decide(s, ok, f).OK)
	s.Apply(ok, 1)
	s.Apply(invite(now-7200, "old1", "old2", "old3"), 1) // expired: not counted
	d = pol.Decide(s, invite(now, "d", "e", "f"), f)
	require.Equal(t, ReasonOpenCodes(5), d.Message)
	require.True(t, pol.Decide(s, invite(now, "d", "e"), f).OK)
	// Renewing codes the group has already adds none.
	require.True(t, pol.Decide(s, invite(now, "a", "b", "d"), f).OK)

	// The default refuses hundreds of codes in one 9009.
	pol.Limits = Limits{}
	var many []string
	for i := range 1990 {
		many = append(many, fmt.Sprint("c", i))
	}
	require.Equal(t, ReasonCodesPerInvite(DefaultCodesPerInvite), pol.Decide(s, invite(now, many...), f).Message)
}
