package relay

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSigninChallengesAgain: every auth-required answer to a connection that
// has not signed in comes after the challenge again, so that a client whose
// signer missed the one sent on connect (nostr-tools' Relay.connect, then
// onauth) signs in; at most maxChallenges per connection (issue 48).
func TestSigninChallengesAgain(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Grace = 0 })
	alice, _ := storeInbox(t, tr, 1)
	c := dial(t, tr.url)
	first := c.challengeAt()
	require.Zero(t, first.after, "on connect")
	// 8 (maxChallenges, as the flag's text says) in all: on connect, then
	// before each of the first seven refusals.
	for i := range 16 {
		c.send("REQ", "inbox", inbox(alice))
		require.True(t, strings.HasPrefix(c.closed("inbox"), "auth-required: "))
		if i < 7 {
			ch := c.challengeAt()
			require.Equal(t, i, ch.after, "refusal %d comes after the challenge again", i+1)
			require.Equal(t, first.challenge, ch.challenge)
		}
	}
	c.noChallenge() // (no more than 8 in all)
	c.authenticate(alice, first.challenge, tr.url)
	require.Len(t, c.ids(t, "inbox", inbox(alice)), 1)
}

// TestSigninHoldsTheFirstReq: a REQ that needs authentication, sent by a new
// connection before its first AUTH, is held instead of closed, and answered in
// full once the AUTH arrives (issue 48: the first-REQ race).
func TestSigninHoldsTheFirstReq(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Grace = time.Minute })
	alice, wraps := storeInbox(t, tr, 2)
	c := dial(t, tr.url)
	c.send("REQ", "inbox", inbox(alice))
	require.Empty(t, c.drain(), "held: no answer before the AUTH")
	ch := c.challengeAt()
	require.Equal(t, ch.challenge, c.challengeAt().challenge, "the challenge again, for the held REQ")
	c.authenticate(alice, ch.challenge, tr.url)
	got := []string{c.event("inbox").ID, c.event("inbox").ID}
	c.eose("inbox")
	require.ElementsMatch(t, wraps, got)
	requireCounter(t, tr.m.authHeld.WithLabelValues("held"), 1)
	requireCounter(t, tr.m.authHeld.WithLabelValues("released"), 1)

	// An AUTH that fails releases the held REQ too: it is answered at once.
	d := dial(t, tr.url)
	d.send("REQ", "inbox", inbox(alice))
	ev := alice.authEvent(t, "not the challenge", tr.url, nil)
	d.send("AUTH", ev)
	ok, reason := d.ok(ev.ID)
	require.False(t, ok, reason)
	require.True(t, strings.HasPrefix(d.closed("inbox"), "auth-required: "))
}

// TestSigninGraceEnds: a held REQ whose connection never signs in is answered
// CLOSED auth-required, after the challenge, when the grace ends; a CLOSE
// drops a held REQ unanswered; at most MaxSubscriptions are held.
func TestSigninGraceEnds(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Grace, c.MaxSubscriptions = grace, 2 })
	alice, _ := storeInbox(t, tr, 1)
	start := time.Now() // (the grace runs from the connection's start)
	c := dial(t, tr.url)
	c.send("REQ", "dropped", inbox(alice))
	c.send("REQ", "held", inbox(alice))
	c.send("REQ", "over", inbox(alice))
	require.True(t, strings.HasPrefix(c.closed("over"), "auth-required: "), "past MaxSubscriptions held, answered at once")
	c.send("CLOSE", "dropped")
	require.True(t, strings.HasPrefix(c.closed("held"), "auth-required: "), "the next answer: the held REQ's, not the dropped one's")
	require.GreaterOrEqual(t, time.Since(start), grace, "answered when the grace ended")
	for range 5 { // on connect, for each of the three REQs, and when the grace ended
		c.challengeAt()
	}
	c.noChallenge()
	requireCounter(t, tr.m.authHeld.WithLabelValues("expired"), 1)
	// Past the grace nothing is held.
	c.send("REQ", "late", inbox(alice))
	require.True(t, strings.HasPrefix(c.closed("late"), "auth-required: "))
}
