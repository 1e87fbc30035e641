package membership_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/nbd-wtf/go-nostr"
)

// TestHostileClaims: one member minted about 22 claims a second, each kept
// 24 h, and 30 were stored for REQs the relay refused ("too many
// subscriptions"), never delivered. Over a real relay: a claim is minted
// only for a REQ the relay accepts, a member holds at most ClaimsPerMember
// open claims and the relay at most OpenClaims, each refusal a CLOSED
// restricted: with its reason, nothing stored for it.
func TestHostileClaims(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.Open, maxSubs: 2, claimsPerMember: 3, openClaims: 5})
	ctx := context.Background()
	stored := func() int {
		var n int
		require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.membership_claims`).Scan(&n))
		return n
	}
	inv := map[string]any{"kinds": []int{membership.KindInvite}}

	ac := dial(t, e.url)
	_, reason := ac.req("inv", inv)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	ac.auth(e.admin)

	// Two subscriptions open (the most this relay allows a connection): a
	// REQ for an invite is refused, and no claim is made for it.
	for _, sub := range []string{"s1", "s2"} {
		ac.send("REQ", sub, map[string]any{"kinds": []int{1}})
		for msg := ac.next(); label(msg) != "EOSE"; msg = ac.next() {
		}
	}
	for range 3 {
		evs, reason := ac.req("inv", inv)
		require.Empty(t, evs)
		require.Equal(t, "error: too many subscriptions", reason)
	}
	require.Zero(t, stored(), "a claim was minted for a refused REQ")
	ac.send("CLOSE", "s1")
	ac.send("CLOSE", "s2")

	// Per member.
	var claims []string
	for range 3 {
		evs, reason := ac.req("inv", inv)
		require.Empty(t, reason)
		require.Len(t, evs, 1)
		claims = append(claims, membership.Claim(evs[0]))
	}
	evs, reason := ac.req("inv", inv)
	require.Empty(t, evs)
	require.Equal(t, membership.ReasonClaimsPerMember(3), reason)

	// Per relay: another member gets two, then the relay is full.
	bob := nostr.GeneratePrivateKey()
	bc := dial(t, e.url)
	ok, reason := bc.publish(note(t, bob, "hello"))
	require.True(t, ok, reason)
	_, reason = bc.req("inv", inv)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	bc.auth(bob)
	for range 2 {
		evs, reason := bc.req("inv", inv)
		require.Empty(t, reason)
		require.Len(t, evs, 1)
	}
	evs, reason = bc.req("inv", inv)
	require.Empty(t, evs)
	require.Equal(t, membership.ReasonOpenClaims(5), reason)
	require.Equal(t, 5, stored())

	// A claim used is no longer open: its member may ask for another.
	carol, csk := dial(t, e.url), nostr.GeneratePrivateKey()
	join := testkit.SignNow(t, csk, membership.KindJoin, nostr.Tags{{"-"}, {"claim", claims[0]}}, "")
	ok, reason = carol.publish(join)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	carol.auth(csk)
	ok, reason = carol.publish(join)
	require.True(t, ok, reason)
	evs, reason = ac.req("inv", inv)
	require.Empty(t, reason)
	require.Len(t, evs, 1)
}
