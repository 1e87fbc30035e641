package membership_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/testkit"
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

	ac := testkit.Dial(t, e.url)
	_, reason := ac.Req("inv", inv)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	ac.Auth(e.admin)

	// Two subscriptions open (the most this relay allows a connection): a
	// REQ for an invite is refused, and no claim is made for it.
	for _, sub := range []string{"s1", "s2"} {
		require.NoError(t, ac.Send("REQ", sub, map[string]any{"kinds": []int{1}}))
		for msg := ac.Next(); msg.Label() != "EOSE"; msg = ac.Next() {
		}
	}
	for range 3 {
		evs, reason := ac.Req("inv", inv)
		require.Empty(t, evs)
		require.Equal(t, "error: too many subscriptions", reason)
	}
	require.Zero(t, stored(), "a claim was minted for a refused REQ")
	require.NoError(t, ac.Send("CLOSE", "s1"))
	require.NoError(t, ac.Send("CLOSE", "s2"))

	// Per member.
	var claims []string
	for range 3 {
		evs, reason := ac.Req("inv", inv)
		require.Empty(t, reason)
		require.Len(t, evs, 1)
		claims = append(claims, membership.Claim(evs[0]))
	}
	evs, reason := ac.Req("inv", inv)
	require.Empty(t, evs)
	require.Equal(t, membership.ReasonClaimsPerMember(3), reason)

	// Per relay: another member gets two, then the relay is full.
	bob := nostr.GeneratePrivateKey()
	bc := testkit.Dial(t, e.url)
	ok, reason := bc.Publish(note(t, bob, "hello"))
	require.True(t, ok, reason)
	_, reason = bc.Req("inv", inv)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	bc.Auth(bob)
	for range 2 {
		evs, reason := bc.Req("inv", inv)
		require.Empty(t, reason)
		require.Len(t, evs, 1)
	}
	evs, reason = bc.Req("inv", inv)
	require.Empty(t, evs)
	require.Equal(t, membership.ReasonOpenClaims(5), reason)
	require.Equal(t, 5, stored())

	// A claim used is no longer open: its member may ask for another.
	carol, csk := testkit.Dial(t, e.url), nostr.GeneratePrivateKey()
	join := testkit.SignNow(t, csk, membership.KindJoin, nostr.Tags{{"-"}, {"claim", claims[0]}}, "")
	ok, reason = carol.Publish(join)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	carol.Auth(csk)
	ok, reason = carol.Publish(join)
	require.True(t, ok, reason)
	evs, reason = ac.Req("inv", inv)
	require.Empty(t, reason)
	require.Len(t, evs, 1)
}
