package membership_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestOpenModeJoin: on a relay in open mode a join request (28934) is
// accepted whatever its claim (none, empty, or one the relay never made), and
// its author is listed in the 13534 like an admitted member; no answer is a
// refusal (issue 48: an app that adds a relay as a space by NIP-43 showed
// "join request rejected").
func TestOpenModeJoin(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.Open})
	adminPK := testkit.Pub(e.admin)
	anon := testkit.Dial(t, e.url)
	newcomer, other, poster := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	join := func(sk string, tags ...nostr.Tag) (bool, string) {
		c := testkit.Dial(t, e.url)
		c.Auth(sk)
		return c.Publish(testkit.SignNow(t, sk, membership.KindJoin, append(nostr.Tags{{"-"}}, tags...), ""))
	}
	answers := map[string]string{}
	for _, tc := range []struct {
		name string
		sk   string
		tags []nostr.Tag
		want string
	}{
		{"an empty claim, as apps send", newcomer, []nostr.Tag{{"claim", ""}}, membership.MsgWelcomeOpen},
		{"again", newcomer, []nostr.Tag{{"claim", ""}}, membership.MsgAlready},
		{"a claim the relay never made", other, []nostr.Tag{{"claim", "not-a-claim"}}, membership.MsgWelcomeOpen},
	} {
		ok, reason := join(tc.sk, tc.tags...)
		require.True(t, ok, "%s: %s", tc.name, reason)
		require.Equal(t, tc.want, reason, tc.name)
		answers[tc.name] = reason
	}
	// A member by posting (not listed in open mode) who asks is listed.
	c := testkit.Dial(t, e.url)
	ok, reason := c.Publish(note(t, poster, "I was here first"))
	require.True(t, ok, reason)
	require.ElementsMatch(t, []string{adminPK, testkit.Pub(newcomer), testkit.Pub(other)}, e.memberList(t, anon))
	ok, reason = join(poster)
	require.True(t, ok, reason)
	require.Equal(t, membership.MsgWelcomeOpen, reason)
	require.ElementsMatch(t, []string{adminPK, testkit.Pub(newcomer), testkit.Pub(other), testkit.Pub(poster)}, e.memberList(t, anon))
	for name, a := range answers {
		require.False(t, strings.HasPrefix(a, "restricted:"), "%s: %s", name, a)
	}
	require.Equal(t, 3.0, metric(t, e, "cn_relay_member_joins_total", "open"))
}

// TestHostileReplayedLeave: a leave (28936) without the NIP-70 tag is taken
// from a connection authenticated as its author only, and a leave older than
// its author's latest join never removes them, so an old leave sent again
// removes no one (issue 48).
func TestHostileReplayedLeave(t *testing.T) {
	t.Parallel()
	e := start(t, opts{mode: membership.InviteOnly})
	adminPK := testkit.Pub(e.admin)
	anon := testkit.Dial(t, e.url)
	ac := testkit.Dial(t, e.url)
	ac.Auth(e.admin)
	bob := nostr.GeneratePrivateKey()
	bc := testkit.Dial(t, e.url)
	bc.Auth(bob)
	joinWithClaim := func() {
		t.Helper()
		evs, reason := ac.Req("inv", map[string]any{"kinds": []int{membership.KindInvite}})
		require.Empty(t, reason)
		ok, reason := bc.Publish(testkit.SignNow(t, bob, membership.KindJoin, nostr.Tags{{"-"}, {"claim", membership.Claim(evs[0])}}, ""))
		require.True(t, ok, reason)
		require.Equal(t, membership.MsgWelcome, reason)
	}
	// bob joined (an 8000 stored) a few seconds ago.
	joinWithClaim()
	_, err := e.db.Pool.Exec(context.Background(), `UPDATE cn_relay.events SET ingested_at = ingested_at - interval '10 seconds'
		WHERE kind = $1 AND tags @> jsonb_build_array(jsonb_build_array('p', $2::text))`, membership.KindAdd, testkit.Pub(bob))
	require.NoError(t, err)
	// A leave made since, as an app sends it (no - tag).
	leave := &nostr.Event{Kind: membership.KindLeave, CreatedAt: nostr.Now() - 5}
	require.NoError(t, leave.Sign(bob))
	ok, reason := anon.Publish(leave)
	require.False(t, ok, "from a connection not authenticated as bob")
	require.Equal(t, membership.ReasonLeaveAuth, reason)
	require.ElementsMatch(t, []string{adminPK, testkit.Pub(bob)}, e.memberList(t, anon))
	ok, reason = bc.Publish(leave)
	require.True(t, ok, reason)
	require.Equal(t, membership.MsgLeft, reason)
	require.Equal(t, []string{adminPK}, e.memberList(t, anon))

	joinWithClaim()
	ok, reason = bc.Publish(leave)
	require.False(t, ok, "the old leave, sent again after the join")
	require.Equal(t, membership.ReasonLeaveOld, reason)
	require.ElementsMatch(t, []string{adminPK, testkit.Pub(bob)}, e.memberList(t, anon))
	ok, reason = bc.Publish(note(t, bob, "still a member"))
	require.True(t, ok, reason)
}
