package membership_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/internal/trust/gate"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// TestAdmissionByTrust: with a real trust-v1 computation (the trust
// consumer folds the stored follow lists, Recompute ranks from a seed), a
// claimless join from a key ranked at or above --admit-min-rank is admitted at
// once and the OK says so; one from an unranked key waits for an admin.
func TestAdmissionByTrust(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	g := &gate.Gate{Pool: db.Pool, MinRank: 10, Refresh: time.Hour}
	require.NoError(t, g.Load(ctx))
	e := start(t, opts{mode: membership.InviteOnly, db: db, ranked: g.Ranked, rank: 10})
	seed, alice, bob := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()

	// The seed is a member (an admin adds it) and follows alice.
	status, _ := e.nip86(t, e.admin, "addmember", testkit.Pub(seed))
	require.Equal(t, 200, status)
	sc := testkit.Dial(t, e.url)
	ok, reason := sc.Publish(testkit.SignNow(t, seed, 3, nostr.Tags{{"p", testkit.Pub(alice)}}, ""))
	require.True(t, ok, reason)

	// trust-v1: fold the graph from the outbox, rank from the seed.
	graph := &trust.Graph{NodePubKey: e.node.PubKey}
	cctx, cancel := context.WithCancel(ctx)
	c, err := consumer.New(db.Pool, graph, consumer.Config{Name: trust.ConsumerName, LeaseTTL: time.Second, RetryBase: 10 * time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	testkit.WaitCaughtUp(t, db.Pool, trust.ConsumerName)
	cancel()
	require.NoError(t, <-done)
	_, err = trust.Fold(ctx, db.Pool)
	require.NoError(t, err)
	_, err = trust.Recompute(ctx, db.Pool, trust.Seeds{Pubkeys: []string{testkit.Pub(seed)}, Source: "flag"}, trust.DefaultParams(), time.Now().Unix(), 0)
	require.NoError(t, err)
	require.NoError(t, g.Load(ctx))
	var rank int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT rank FROM cn_trust.scores WHERE pubkey = $1", testkit.Pub(alice)).Scan(&rank))
	require.GreaterOrEqual(t, rank, 10, "alice is ranked by the seed's follow")

	ac := testkit.Dial(t, e.url)
	ac.Auth(alice)
	ok, reason = ac.Publish(testkit.SignNow(t, alice, membership.KindJoin, nostr.Tags{{"-"}}, ""))
	require.True(t, ok, reason)
	require.Equal(t, "info: welcome: admitted at once, your web-of-trust rank (trust-v1) is at least 10", reason)
	ok, reason = ac.Publish(note(t, alice, "ranked and in"))
	require.True(t, ok, reason)

	bc := testkit.Dial(t, e.url)
	bc.Auth(bob)
	ok, reason = bc.Publish(testkit.SignNow(t, bob, membership.KindJoin, nostr.Tags{{"-"}}, ""))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: pending review: no invite code and a web-of-trust rank below 10"), reason)
	pending, err := e.svc.ListPending(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, testkit.Pub(bob), pending[0].Pubkey)
	members, err := e.svc.ListMembers(ctx)
	require.NoError(t, err)
	vias := map[string]string{}
	for _, m := range members {
		vias[m.Pubkey] = m.Via
	}
	require.Equal(t, membership.ViaTrust, vias[testkit.Pub(alice)])
}

// TestOpenToInvite: a node that ran open (keys became members by posting)
// and restarts invite-only keeps every such member; a key that never posted
// is refused.
func TestOpenToInvite(t *testing.T) {
	t.Parallel()
	admin := nostr.GeneratePrivateKey()
	open := start(t, opts{mode: membership.Open, admin: admin})
	dave, erin := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	c := testkit.Dial(t, open.url)
	ok, reason := c.Publish(note(t, dave, "early"))
	require.True(t, ok, reason)
	ok, reason = c.Publish(note(t, erin, "early too"))
	require.True(t, ok, reason)
	// Open mode: a 13534 lists the NIP-43 members only (the admin), not posters.
	require.Equal(t, []string{testkit.Pub(admin)}, open.memberList(t, c))
	// erin leaves under NIP-43 while open: that overrides her posting.
	ok, reason = c.Publish(testkit.SignNow(t, erin, membership.KindLeave, nostr.Tags{{"-"}}, ""))
	require.False(t, ok, "a leave is protected: needs AUTH")
	c.Auth(erin)
	ok, reason = c.Publish(testkit.SignNow(t, erin, membership.KindLeave, nostr.Tags{{"-"}}, ""))
	require.True(t, ok, reason)
	require.Equal(t, membership.MsgLeft, reason)

	inv := start(t, opts{mode: membership.InviteOnly, db: open.db, admin: admin, node: open.node})
	ic := testkit.Dial(t, inv.url)
	ok, reason = ic.Publish(note(t, dave, "still a member"))
	require.True(t, ok, reason)
	ok, reason = ic.Publish(note(t, erin, "left"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason)
	ok, reason = ic.Publish(note(t, nostr.GeneratePrivateKey(), "never posted"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason)
	ok, reason = ic.Publish(note(t, admin, "admin"))
	require.True(t, ok, reason)
}

// TestRebuildEqualsLive: after a random history of joins with claims,
// leaves, admin adds and removes, role definitions, changes, removals,
// assignments and unassignments (several in the same second, so created_at
// ties are stamped apart), the registers the relay kept live equal the
// projection of the stored 8000/8001 events, the roles and who has them equal
// the projection of the stored 33534, kind 5 and newest 13534, and the 13534
// lists exactly the projected members and their roles.
func TestRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := start(t, opts{mode: membership.InviteOnly})
	rng := rand.New(rand.NewPCG(34, 43))
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	conns := map[string]*testkit.Client{}
	conn := func(sk string) *testkit.Client {
		if conns[sk] == nil {
			conns[sk] = testkit.Dial(t, e.url)
			conns[sk].Auth(sk)
		}
		return conns[sk]
	}
	roleIDs := []string{"king", "mod", "scribe"}
	done := map[string]int{} // role methods answered 200
	roleCall := func(method string, params ...any) {
		status, out := e.nip86(t, e.admin, method, params...)
		require.Contains(t, []int{200, 400}, status, string(out["error"])) // (400: undefined role, not a member)
		if status == 200 {
			done[method]++
		}
	}
	for step := 0; step < 120; step++ {
		sk := keys[rng.IntN(len(keys))]
		role := roleIDs[rng.IntN(len(roleIDs))]
		switch rng.IntN(11) {
		case 0: // join with a fresh claim
			status, out := e.nip86(t, e.admin, "mintinvite")
			require.Equal(t, 200, status)
			var m membership.Minted
			require.NoError(t, jsonUnmarshal(out["result"], &m))
			ok, reason := conn(sk).Publish(testkit.SignNow(t, sk, membership.KindJoin, nostr.Tags{{"-"}, {"claim", m.Claim}}, ""))
			require.True(t, ok, reason)
		case 1:
			ok, reason := conn(sk).Publish(testkit.SignNow(t, sk, membership.KindLeave, nostr.Tags{{"-"}}, ""))
			require.True(t, ok, reason)
		case 2:
			status, _ := e.nip86(t, e.admin, "addmember", testkit.Pub(sk))
			require.Equal(t, 200, status)
		case 3:
			status, _ := e.nip86(t, e.admin, "removemember", testkit.Pub(sk))
			require.Equal(t, 200, status)
		case 4: // define or change a role
			roleCall("setrole", role, map[string]string{"label": fmt.Sprint(role, step), "color": fmt.Sprint(rng.IntN(361))})
		case 5:
			roleCall("removerole", role)
		case 6, 8, 9, 10: // (most keys are not members at any time)
			roleCall("assignrole", testkit.Pub(sk), role)
		case 7:
			roleCall("unassignrole", testkit.Pub(sk), role)
		}
	}
	for _, m := range []string{"setrole", "removerole", "assignrole", "unassignrole"} {
		require.NotZero(t, done[m], "the history has a %s", m)
	}
	// And, whatever the random part left: a role removed for good, a member
	// with roles removed, a member with roles kept.
	survivor, leaver := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	roleCall("setrole", "gone", map[string]string{"label": "gone"})
	roleCall("setrole", "kept", map[string]string{"label": "kept"})
	for _, sk := range []string{survivor, leaver} {
		roleCall("addmember", testkit.Pub(sk), "", []string{"gone", "kept"})
	}
	roleCall("removerole", "gone")
	ok, reason := conn(leaver).Publish(testkit.SignNow(t, leaver, membership.KindLeave, nostr.Tags{{"-"}}, ""))
	require.True(t, ok, reason)
	// Roles: the defined ones and who has them, recomputed from the stored
	// 33534, kind 5 and newest 13534, equal what the relay kept.
	liveState, err := membership.LiveState(ctx, e.db.Pool)
	require.NoError(t, err)
	storedState, _, err := membership.StoredState(ctx, e.db.Pool, e.node.PubKey)
	require.NoError(t, err)
	require.Empty(t, storedState.Diff(liveState))
	require.NotEmpty(t, liveState.Roles, "the history leaves some roles defined")
	require.NotEmpty(t, liveState.Assigned, "and some assigned")
	roleEvs, err := membership.StoredRoles(ctx, e.db.Pool, e.node.PubKey)
	require.NoError(t, err)
	rng.Shuffle(len(roleEvs), func(i, j int) { roleEvs[i], roleEvs[j] = roleEvs[j], roleEvs[i] })
	require.Equal(t, liveState.Roles, membership.ProjectRoles(e.node.PubKey, roleEvs), "in any order")

	live, err := membership.Live(ctx, e.db.Pool)
	require.NoError(t, err)
	stored, err := membership.Stored(ctx, e.db.Pool, e.node.PubKey)
	require.NoError(t, err)
	rng.Shuffle(len(stored), func(i, j int) { stored[i], stored[j] = stored[j], stored[i] })
	projected := membership.Project(e.node.PubKey, stored)
	require.Empty(t, membership.Diff(live, projected))
	var want []string
	for pk, r := range projected {
		if r.Member {
			want = append(want, pk)
		}
	}
	require.ElementsMatch(t, want, e.memberList(t, testkit.Dial(t, e.url)))
	lists, _ := testkit.Dial(t, e.url).Req("list", map[string]any{"kinds": []int{membership.KindMembers}, "authors": []string{e.node.PubKey}})
	require.Len(t, lists, 1)
	require.Equal(t, storedState.Assigned, membership.MemberRoles(lists[0]), "the 13534 lists each member's roles")
}
