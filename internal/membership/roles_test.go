package membership_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/testkit"
)

func tagMap(ev *nostr.Event) map[string]string {
	out := map[string]string{}
	for _, t := range ev.Tags {
		if len(t) >= 2 {
			out[t[0]] = t[1]
		} else if len(t) == 1 {
			out[t[0]] = ""
		}
	}
	return out
}

// TestRoles: admins define, change and remove NIP-43 roles and assign them
// with NIP-86 (NIP-98; a non-admin is refused); a stock client (go-nostr)
// reads each role's 33534, signed by the node with the `-` tag and its fields,
// and the 13534 with each member's roles after its pubkey; only defined roles
// can be assigned, and only to members; removing a role deletes its 33534
// (the node's NIP-09 kind 5) and takes it off every member; a member removed
// loses their roles; a client's own 33534 is refused restricted:.
func TestRoles(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.InviteOnly})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adminPK := testkit.Pub(e.admin)
	bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bobPK, carolPK := testkit.Pub(bob), testkit.Pub(carol)

	rl, err := nostr.RelayConnect(ctx, e.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rl.Close() })
	roles := func() map[string]*nostr.Event {
		t.Helper()
		evs, err := testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{membership.KindRole}, Authors: []string{e.node.PubKey}})
		require.NoError(t, err)
		out := map[string]*nostr.Event{}
		for _, ev := range evs {
			e.verifyNodeEvent(t, ev) // signed by self, valid, with the `-` tag
			out[tagMap(ev)["d"]] = ev
		}
		return out
	}
	list := func() map[string][]string {
		t.Helper()
		evs, err := testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{membership.KindMembers}, Authors: []string{e.node.PubKey}})
		require.NoError(t, err)
		require.Len(t, evs, 1)
		e.verifyNodeEvent(t, evs[0])
		out := map[string][]string{}
		for _, tag := range evs[0].Tags {
			if len(tag) >= 2 && tag[0] == "member" {
				out[tag[1]] = append([]string{}, tag[2:]...)
			}
		}
		return out
	}
	call := func(sk string, want int, method string, params ...any) {
		t.Helper()
		status, out := e.nip86(t, sk, method, params...)
		require.Equal(t, want, status, "%s %v: %s", method, params, out["error"])
	}

	// Only admins.
	for _, m := range []string{"listroles", "setrole", "removerole", "assignrole", "unassignrole"} {
		call(bob, 403, m, "king")
	}

	// Define: the 33534 has the NIP-43 fields.
	call(e.admin, 200, "setrole", "king", map[string]string{"label": "king", "description": "ruler of the relay", "color": "37", "order": "1"})
	call(e.admin, 400, "setrole", "bad", map[string]string{"color": "361"})
	call(e.admin, 400, "setrole", "bad", map[string]string{"order": "first"})
	call(e.admin, 400, "setrole", "bad:id")
	got := roles()
	require.Len(t, got, 1)
	first := got["king"]
	require.Equal(t, map[string]string{"-": "", "d": "king", "label": "king", "description": "ruler of the relay", "color": "37", "order": "1"}, tagMap(first))

	// Change one field: a newer 33534 replaces it, the others kept.
	call(e.admin, 200, "setrole", "king", map[string]string{"label": "queen"})
	got = roles()
	require.Len(t, got, 1)
	require.Equal(t, map[string]string{"-": "", "d": "king", "label": "queen", "description": "ruler of the relay", "color": "37", "order": "1"}, tagMap(got["king"]))
	require.Greater(t, got["king"].CreatedAt, first.CreatedAt)
	call(e.admin, 200, "setrole", "mod", map[string]string{"label": "moderator"})

	// Assign: defined roles, to members only; the 13534 lists them.
	call(e.admin, 200, "addmember", bobPK, "", []string{"king"})
	call(e.admin, 400, "assignrole", carolPK, "king")              // not a member
	call(e.admin, 400, "assignrole", bobPK, "nope")                // not defined
	call(e.admin, 400, "addmember", carolPK, "", []string{"nope"}) // the add rolls back too
	require.Equal(t, map[string][]string{adminPK: {}, bobPK: {"king"}}, list())
	call(e.admin, 200, "assignrole", bobPK, "mod")
	call(e.admin, 200, "assignrole", adminPK, "mod")
	require.Equal(t, map[string][]string{adminPK: {"mod"}, bobPK: {"king", "mod"}}, list())
	call(e.admin, 200, "unassignrole", bobPK, "mod")
	require.Equal(t, map[string][]string{adminPK: {"mod"}, bobPK: {"king"}}, list())
	status, out := e.nip86(t, e.admin, "listmembers")
	require.Equal(t, 200, status)
	var members []membership.Member
	require.NoError(t, json.Unmarshal(out["result"], &members))
	for _, m := range members {
		require.Equal(t, map[string][]string{adminPK: {"mod"}, bobPK: {"king"}}[m.Pubkey], m.Roles)
	}

	// Remove a role: the node's kind 5 deletes its 33534, nobody has it.
	call(e.admin, 200, "assignrole", bobPK, "mod")
	call(e.admin, 200, "removerole", "mod")
	call(e.admin, 400, "removerole", "mod")
	call(e.admin, 400, "assignrole", bobPK, "mod")
	got = roles()
	require.Len(t, got, 1)
	require.Contains(t, got, "king")
	dels, err := testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{nostr.KindDeletion}, Authors: []string{e.node.PubKey}})
	require.NoError(t, err)
	require.Len(t, dels, 1)
	ok, err := dels[0].CheckSignature()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, membership.RoleAddress(e.node.PubKey, "mod"), tagMap(dels[0])["a"])
	require.Equal(t, map[string][]string{adminPK: {}, bobPK: {"king"}}, list())
	// Defined again after its deletion: published and visible.
	call(e.admin, 200, "setrole", "mod", map[string]string{"label": "moderator"})
	require.Contains(t, roles(), "mod")

	// A member removed (or leaving) loses their roles.
	call(e.admin, 200, "removemember", bobPK)
	require.Equal(t, map[string][]string{adminPK: {}}, list())
	call(e.admin, 200, "addmember", bobPK)
	require.Equal(t, map[string][]string{adminPK: {}, bobPK: {}}, list())
	call(e.admin, 200, "assignrole", bobPK, "mod") // (the king role he had is gone, not merely hidden)
	require.Equal(t, map[string][]string{adminPK: {}, bobPK: {"mod"}}, list())
	bc := testkit.Dial(t, e.url)
	bc.Auth(bob)
	ok, reason := bc.Publish(testkit.SignNow(t, bob, membership.KindLeave, nostr.Tags{{"-"}}, ""))
	require.True(t, ok, reason)
	live, err := membership.LiveState(ctx, e.db.Pool)
	require.NoError(t, err)
	require.NotContains(t, live.Assigned, bobPK, "left: no roles kept")
	call(e.admin, 200, "addmember", bobPK)
	call(e.admin, 200, "assignrole", bobPK, "king")
	require.Equal(t, map[string][]string{adminPK: {}, bobPK: {"king"}}, list())

	// A client's own 33534 is refused, a member's included.
	err = rl.Publish(ctx, *testkit.SignNow(t, bob, membership.KindRole, nostr.Tags{{"-"}, {"d", "king"}, {"label", "usurper"}}, ""))
	require.ErrorContains(t, err, membership.ReasonNodeKind)
	require.Contains(t, membership.ReasonNodeKind, "restricted: ")
	require.Equal(t, "queen", tagMap(roles()["king"])["label"])

	// Every change is in the management log.
	var n int
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_admin.log WHERE method IN ('setrole', 'removerole', 'assignrole', 'unassignrole')`).Scan(&n))
	require.Equal(t, 11, n, "refused calls roll back")
}

// TestProjectRoles: a role is the newest 33534 for its id by the node, unless
// the node's deletion at or after it addresses it; whatever the order.
func TestProjectRoles(t *testing.T) {
	node, other := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	self := testkit.Pub(node)
	role := func(sk, id, label string, at int64) *nostr.Event {
		ev := membership.RoleEvent(membership.Role{ID: id, Label: label}, at)
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	del := func(sk, id string, at int64) *nostr.Event {
		ev := membership.RoleDeletion(testkit.Pub(sk), id, at)
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	evs := []*nostr.Event{
		role(node, "a", "old", 100), role(node, "a", "new", 200), // newest wins
		role(node, "b", "x", 100), del(node, "b", 150), // deleted
		role(node, "c", "x", 100), del(node, "c", 100), // deleted (at the same second)
		role(node, "d", "x", 100), del(node, "d", 150), role(node, "d", "again", 151), // defined again after
		role(other, "e", "x", 100),                      // not the node's
		role(node, "f", "x", 100), del(other, "f", 200), // not the node's deletion
	}
	for range 5 {
		rand.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		got := membership.ProjectRoles(self, evs)
		labels := map[string]string{}
		for id, r := range got {
			labels[id] = r.Label
		}
		require.Equal(t, map[string]string{"a": "new", "d": "again", "f": "x"}, labels)
	}
}

// TestProjectAssignments: the 13534's role arguments, for members and defined roles only.
func TestProjectAssignments(t *testing.T) {
	list := membership.ListEvent(map[string][]string{"m1": {"b", "a"}, "m2": {"gone"}, "out": {"a"}, "m3": nil}, 1)
	regs := map[string]membership.Register{"m1": {Member: true}, "m2": {Member: true}, "m3": {Member: true}, "out": {Member: false}}
	roles := map[string]membership.Role{"a": {ID: "a"}, "b": {ID: "b"}}
	require.Equal(t, map[string][]string{"m1": {"a", "b"}}, membership.ProjectAssignments(list, regs, roles))
	require.Empty(t, membership.ProjectAssignments(nil, regs, roles))
}
