package relay

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// authEvent is a signed NIP-42 auth event by k.
func (k key) authEvent(t *testing.T, challenge, relayURL string, edit func(*nostr.Event)) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{
		Kind:      nostr.KindClientAuthentication,
		CreatedAt: nostr.Now(),
		Tags:      nostr.Tags{{"relay", relayURL}, {"challenge", challenge}},
	}
	if edit != nil {
		edit(ev)
	}
	require.NoError(t, ev.Sign(k.sk))
	return ev
}

// authenticate sends a valid AUTH as k and checks the OK.
func (c *client) authenticate(k key, challenge, relayURL string) {
	c.t.Helper()
	ev := k.authEvent(c.t, challenge, relayURL, nil)
	c.send("AUTH", ev)
	ok, reason := c.ok(ev.ID)
	require.True(c.t, ok, reason)
}

// challenge reads the AUTH challenge the relay sends on connect.
func (c *client) challenge() string {
	c.t.Helper()
	msg := c.expect("AUTH")
	return str(c.t, msg[1])
}

func TestAuthFlow(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.Auth = AuthConfig{Enabled: true, RequiredForWrites: true, RequiredForReads: true}
		c.PublicURL = "wss://relay.example.com"
	})
	c := dial(t, tr.url)
	challenge := c.challenge()
	require.Len(t, challenge, 32)
	k := newKey(t)

	ok, reason := c.publish(k.note(t, "before auth", nil))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)
	c.send("REQ", "s", goFilter())
	require.True(t, strings.HasPrefix(c.closed("s"), "auth-required: "))
	c.send("COUNT", "n", goFilter())
	require.True(t, strings.HasPrefix(c.closed("n"), "auth-required: "))

	bad := []struct {
		name   string
		ev     *nostr.Event
		reason string
	}{
		{"wrong challenge", k.authEvent(t, "nope", "wss://relay.example.com", nil), "invalid: auth challenge"},
		{"wrong relay", k.authEvent(t, challenge, "wss://elsewhere.example.com", nil), "invalid: auth relay"},
		{"stale", k.authEvent(t, challenge, "wss://relay.example.com", func(ev *nostr.Event) { ev.CreatedAt -= 3600 }), "invalid: auth event created_at"},
		{"wrong kind", k.authEvent(t, challenge, "wss://relay.example.com", func(ev *nostr.Event) { ev.Kind = 1 }), "invalid: auth event must be kind 22242"},
	}
	for _, b := range bad {
		c.send("AUTH", b.ev)
		ok, reason := c.ok(b.ev.ID)
		require.False(t, ok, b.name)
		require.True(t, strings.HasPrefix(reason, b.reason), "%s: %s", b.name, reason)
	}
	forged := k.authEvent(t, challenge, "wss://relay.example.com", nil)
	forged.Sig = strings.Repeat("0", 128)
	c.send("AUTH", forged)
	ok, reason = c.ok(forged.ID)
	require.False(t, ok)
	require.Equal(t, "invalid: bad signature", reason)

	c.authenticate(k, challenge, "wss://relay.example.com/")
	ok, reason = c.publish(k.note(t, "after auth", nil))
	require.True(t, ok, reason)
	c.send("REQ", "s", goFilter())
	c.event("s")
	c.eose("s")
}

func TestAuthUsesHostWithoutPublicURL(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Enabled, c.Auth.ChallengeOnConnect = true, true })
	c := dial(t, tr.url)
	c.authenticate(newKey(t), c.challenge(), tr.url)
}

func TestAuthDisabled(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Enabled = false })
	c := dial(t, tr.url)
	ev := newKey(t).authEvent(t, "x", tr.url, nil)
	c.send("AUTH", ev)
	ok, reason := c.ok(ev.ID)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: "), reason)
}

// TestProtectedEvents: NIP-70 events are accepted only from their authenticated
// author.
func TestProtectedEvents(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Enabled, c.Auth.ChallengeOnConnect = true, true })
	c := dial(t, tr.url)
	challenge := c.challenge()
	author, other := newKey(t), newKey(t)
	protected := func() *nostr.Event {
		return author.note(t, "mine only", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"-"}) })
	}

	ok, reason := c.publish(protected())
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "auth-required: "), reason)

	c.authenticate(other, challenge, tr.url)
	ok, reason = c.publish(protected())
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: "), reason)

	c.authenticate(author, challenge, tr.url)
	ok, reason = c.publish(protected())
	require.True(t, ok, reason)
	// Other events need no authentication when it is not required for writes.
	fresh := dial(t, tr.url)
	fresh.challenge()
	ok, reason = fresh.publish(other.note(t, "open", nil))
	require.True(t, ok, reason)
}
