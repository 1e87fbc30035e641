package membership_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestInviteOnlyFlow: on an invite-only relay, real WebSocket clients go
// through every NIP-43 path: an outsider is refused with restricted:, a
// member's REQ for 28935 gets a claim signed by the node (auth-required
// before AUTH), a join with it makes a member (8000 and a new 13534, signed,
// with the `-` tag), the claim is single-use, a bad claim and a re-join are
// answered as NIP-43 says, a leave publishes 8001 and later posts are refused,
// and nobody else may publish the node's kinds.
func TestInviteOnlyFlow(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.InviteOnly})
	ctx := context.Background()
	adminPK := testkit.Pub(e.admin)
	bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()

	// NIP-11 lists 43 and names self; writes are restricted.
	req, _ := http.NewRequest("GET", e.api, nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var info struct {
		Self       string `json:"self"`
		NIPs       []int  `json:"supported_nips"`
		Limitation struct {
			RestrictedWrites bool `json:"restricted_writes"`
		} `json:"limitation"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, e.node.PubKey, info.Self)
	require.Contains(t, info.NIPs, 43)
	require.True(t, info.Limitation.RestrictedWrites)

	// The admin is a member from the start, and listed.
	anon := testkit.Dial(t, e.url)
	require.Equal(t, []string{adminPK}, e.memberList(t, anon))

	// An outsider may not post, nor join a group.
	bc := testkit.Dial(t, e.url)
	ok, reason := bc.Publish(note(t, bob, "hello"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason)
	ok, reason = bc.Publish(testkit.SignNow(t, bob, 9021, nostr.Tags{{"h", "gophers"}}, ""))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason, "a NIP-29 join from a non-member")

	// Invites are for authenticated members.
	ac := testkit.Dial(t, e.url)
	_, reason = ac.Req("inv", map[string]any{"kinds": []int{membership.KindInvite}})
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	ac.Auth(e.admin)
	evs, reason := ac.Req("inv", map[string]any{"kinds": []int{membership.KindInvite}})
	require.Empty(t, reason)
	require.Len(t, evs, 1)
	e.verifyNodeEvent(t, evs[0])
	claim := membership.Claim(evs[0])
	require.Len(t, claim, 48)
	evs, reason = ac.Req("other", map[string]any{"kinds": []int{membership.KindInvite}, "authors": []string{testkit.Pub(bob)}})
	require.Empty(t, reason)
	require.Empty(t, evs, "a filter for another author's 28935 gets no claim")
	// An authenticated non-member gets none.
	_, _ = bc.Publish(note(t, bob, "x")) // (the challenge arrived on connect)
	bc.Auth(bob)
	_, reason = bc.Req("inv", map[string]any{"kinds": []int{membership.KindInvite}})
	require.Equal(t, membership.ReasonInviteNon, reason)

	// A join is protected (NIP-70): it needs AUTH as its author.
	cc := testkit.Dial(t, e.url)
	join := func(sk, claim string) *nostr.Event {
		tags := nostr.Tags{{"-"}}
		if claim != "" {
			tags = append(tags, nostr.Tag{"claim", claim})
		}
		return testkit.SignNow(t, sk, membership.KindJoin, tags, "")
	}
	ok, reason = cc.Publish(join(carol, claim))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)

	ok, reason = bc.Publish(join(bob, claim))
	require.True(t, ok, reason)
	require.Equal(t, membership.MsgWelcome, reason)
	require.ElementsMatch(t, []string{adminPK, testkit.Pub(bob)}, e.memberList(t, anon))
	adds, _ := anon.Req("adds", map[string]any{"kinds": []int{membership.KindAdd}, "#p": []string{testkit.Pub(bob)}})
	require.Len(t, adds, 1)
	e.verifyNodeEvent(t, adds[0])
	ok, reason = bc.Publish(note(t, bob, "hello as a member"))
	require.True(t, ok, reason)

	// Again: not an error. The claim is used up; a bad one is refused.
	ok, reason = bc.Publish(join(bob, claim))
	require.True(t, ok)
	require.Equal(t, membership.MsgAlready, reason)
	cc.Auth(carol)
	ok, reason = cc.Publish(join(carol, claim))
	require.False(t, ok)
	require.Equal(t, membership.ReasonUsed, reason)
	ok, reason = cc.Publish(join(carol, "not-a-claim"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonBadClaim, reason)
	// An expired one (the clock moved past it) too.
	evs, _ = ac.Req("inv2", map[string]any{"kinds": []int{membership.KindInvite}})
	expiring := membership.Claim(evs[0])
	_, err = e.db.Pool.Exec(ctx, "UPDATE cn_relay.membership_claims SET expires_at = now() - interval '1 second' WHERE hash = $1", membership.HashClaim(expiring))
	require.NoError(t, err)
	ok, reason = cc.Publish(join(carol, expiring))
	require.False(t, ok)
	require.Equal(t, membership.ReasonExpired, reason)
	// A join whose created_at is not now.
	old := &nostr.Event{Kind: membership.KindJoin, CreatedAt: nostr.Now() - 3600, Tags: nostr.Tags{{"-"}, {"claim", "x"}}}
	require.NoError(t, old.Sign(carol))
	ok, reason = cc.Publish(old)
	require.False(t, ok)
	require.Equal(t, membership.ReasonBadTime, reason)

	// Leave: 8001, a new 13534, and later posts are refused. Without the
	// NIP-70 tag it is taken only from a connection authenticated as its
	// author (issue 48: apps send it so), else anyone could replay it.
	untagged := testkit.SignNow(t, bob, membership.KindLeave, nil, "")
	ok, reason = anon.Publish(untagged)
	require.False(t, ok)
	require.Equal(t, membership.ReasonLeaveAuth, reason)
	ok, reason = bc.Publish(untagged)
	require.True(t, ok, reason)
	require.Equal(t, membership.MsgLeft, reason)
	require.Equal(t, []string{adminPK}, e.memberList(t, anon))
	removes, _ := anon.Req("rm", map[string]any{"kinds": []int{membership.KindRemove}, "#p": []string{testkit.Pub(bob)}})
	require.Len(t, removes, 1)
	e.verifyNodeEvent(t, removes[0])
	ok, reason = bc.Publish(note(t, bob, "still here?"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason)

	// Nobody else publishes the node's kinds, not even with the node key.
	for _, ev := range []*nostr.Event{
		testkit.SignNow(t, e.admin, membership.KindMembers, nostr.Tags{{"-"}, {"member", testkit.Pub(carol)}}, ""),
		testkit.SignNow(t, e.admin, membership.KindAdd, nostr.Tags{{"-"}, {"p", testkit.Pub(carol)}}, ""),
		testkit.SignNow(t, e.admin, membership.KindInvite, nostr.Tags{{"-"}, {"claim", "x"}}, ""),
		testkit.SignNow(t, e.admin, membership.KindRole, nostr.Tags{{"-"}, {"d", "king"}}, ""),
	} {
		ok, reason = ac.Publish(ev)
		require.False(t, ok, "kind %d", ev.Kind)
		require.Equal(t, membership.ReasonNodeKind, reason, "kind %d", ev.Kind)
	}
	fake := &nostr.Event{Kind: membership.KindMembers, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"member", testkit.Pub(carol)}}}
	require.NoError(t, e.node.Sign(fake))
	res, err := e.st.Ingest(ctx, []*nostr.Event{fake})
	require.NoError(t, err)
	require.Equal(t, membership.ReasonNodeKind, res[0].Message, "the node key over the store path")

	// Metrics: one join by claim, one leave, the admin left listed.
	require.Equal(t, 1.0, metric(t, e, "cn_relay_member_joins_total", "claim"))
	require.Equal(t, 1.0, metric(t, e, "cn_relay_member_joins_total", "left"))
	require.Equal(t, 1.0, metric(t, e, "cn_relay_members", ""))

	// Claims are secrets: none is stored in clear, and no 28934/28935 is stored.
	var n int
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE kind IN (28934, 28935, 28936)
		OR tags::text LIKE '%' || $1 || '%' OR tags::text LIKE '%' || $2 || '%'`, claim, expiring).Scan(&n))
	require.Zero(t, n)
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.membership_claims WHERE hash IN ($1, $2) OR id IN ($1, $2)`,
		claim, expiring).Scan(&n))
	require.Zero(t, n, "only hashes are stored")
}

// TestAdminMethods: NIP-86 with NIP-98 mints, lists, revokes invites, adds
// and removes members, and admits or denies pending join requests; a
// non-admin is refused.
func TestAdminMethods(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.InviteOnly})
	bob, carol, dave := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()

	status, out := e.nip86(t, e.admin, "supportedmethods")
	require.Equal(t, 200, status)
	var methods []string
	require.NoError(t, json.Unmarshal(out["result"], &methods))
	for _, m := range membership.AdminMethods {
		require.Contains(t, methods, m)
	}
	status, _ = e.nip86(t, bob, "listmembers")
	require.Equal(t, 403, status)

	status, out = e.nip86(t, e.admin, "mintinvite", 3600)
	require.Equal(t, 200, status)
	var minted membership.Minted
	require.NoError(t, json.Unmarshal(out["result"], &minted))
	require.NotEmpty(t, minted.Claim)
	status, out = e.nip86(t, e.admin, "mintinvite")
	require.Equal(t, 200, status)
	var second membership.Minted
	require.NoError(t, json.Unmarshal(out["result"], &second))

	// Revoke by id; the revoked claim is refused, the other one works.
	status, _ = e.nip86(t, e.admin, "revokeinvite", minted.ID)
	require.Equal(t, 200, status)
	status, out = e.nip86(t, e.admin, "revokeinvite", minted.ID)
	require.Equal(t, 400, status, string(out["error"]))
	bc := testkit.Dial(t, e.url)
	bc.Auth(bob)
	join := func(c *testkit.Client, sk, claim string) (bool, string) {
		return c.Publish(testkit.SignNow(t, sk, membership.KindJoin, nostr.Tags{{"-"}, {"claim", claim}}, ""))
	}
	ok, reason := join(bc, bob, minted.Claim)
	require.False(t, ok)
	require.Equal(t, membership.ReasonRevoked, reason)
	ok, reason = join(bc, bob, second.Claim)
	require.True(t, ok, reason)

	status, out = e.nip86(t, e.admin, "listinvites")
	require.Equal(t, 200, status)
	require.NotContains(t, string(out["result"]), minted.Claim)
	var invites []membership.Invite
	require.NoError(t, json.Unmarshal(out["result"], &invites))
	states := map[string]string{}
	for _, iv := range invites {
		states[iv.ID] = iv.State
	}
	require.Equal(t, "revoked", states[minted.ID])
	require.Equal(t, "used", states[second.ID])

	// Add and remove.
	status, _ = e.nip86(t, e.admin, "addmember", testkit.Pub(carol), "friend")
	require.Equal(t, 200, status)
	status, _ = e.nip86(t, e.admin, "addmember", "nothex")
	require.Equal(t, 400, status)
	status, _ = e.nip86(t, e.admin, "removemember", testkit.Pub(bob))
	require.Equal(t, 200, status)
	status, out = e.nip86(t, e.admin, "listmembers")
	require.Equal(t, 200, status)
	var members []membership.Member
	require.NoError(t, json.Unmarshal(out["result"], &members))
	got := map[string]string{}
	for _, m := range members {
		got[m.Pubkey] = m.Via
	}
	require.Equal(t, map[string]string{testkit.Pub(e.admin): membership.ViaOperator, testkit.Pub(carol): membership.ViaAdmin}, got)
	ok, reason = bc.Publish(note(t, bob, "removed"))
	require.False(t, ok)
	require.Equal(t, membership.ReasonInviteOnly, reason)

	// Pending: a claimless join waits (no trust gate here); admit and deny.
	dc := testkit.Dial(t, e.url)
	dc.Auth(dave)
	ok, reason = dc.Publish(testkit.SignNow(t, dave, membership.KindJoin, nostr.Tags{{"-"}}, ""))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: pending review"), reason)
	ok, reason = bc.Publish(testkit.SignNow(t, bob, membership.KindJoin, nostr.Tags{{"-"}}, ""))
	require.False(t, ok, reason)
	status, out = e.nip86(t, e.admin, "listpendingmembers")
	require.Equal(t, 200, status)
	var pending []membership.Pending
	require.NoError(t, json.Unmarshal(out["result"], &pending))
	require.Len(t, pending, 2)
	status, _ = e.nip86(t, e.admin, "admitmember", testkit.Pub(dave))
	require.Equal(t, 200, status)
	status, _ = e.nip86(t, e.admin, "denymember", testkit.Pub(bob))
	require.Equal(t, 200, status)
	status, _ = e.nip86(t, e.admin, "denymember", testkit.Pub(bob))
	require.Equal(t, 400, status, "nothing pending any more")
	ok, reason = dc.Publish(note(t, dave, "admitted"))
	require.True(t, ok, reason)
	ok, _ = bc.Publish(note(t, bob, "denied"))
	require.False(t, ok)

	// Every change is in the management log.
	var n int
	require.NoError(t, e.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM cn_admin.log WHERE method IN ('mintinvite', 'revokeinvite', 'addmember', 'removemember', 'admitmember', 'denymember')`).Scan(&n))
	require.Equal(t, 7, n, "two mints, a revoke, an add, a remove, an admit, a deny (refused calls roll back)")
}
