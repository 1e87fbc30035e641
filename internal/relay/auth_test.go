package relay

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
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

// challenge returns the next AUTH challenge the relay sent (see challengeAt).
func (c *client) challenge() string {
	c.t.Helper()
	return c.challengeAt().challenge
}

func TestAuthFlow(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.Auth = AuthConfig{Enabled: true, RequiredForWrites: true, RequiredForReads: true}
		c.PublicURLs = []string{"wss://relay.example.com"}
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

// TestAuthNamesTheListenAddress: without a public URL, a relay on a loopback
// address takes AUTH events that name that address, under any loopback name.
func TestAuthNamesTheListenAddress(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c := dial(t, tr.url)
	c.authenticate(newKey(t), c.challenge(), tr.url)
	d := dial(t, tr.url)
	d.authenticate(newKey(t), d.challenge(), strings.Replace(tr.url, "127.0.0.1", "localhost", 1)+"/")
}

// TestHostileRelayedAuth is issue 47's relayed sign-in: a hostile relay
// connects here with its own Host header, passes this relay's challenge on to
// a member connected to it, and forwards the member's AUTH event, which names
// the hostile relay. It must not authenticate, with or without a public URL,
// and the member's direct messages must stay unread.
func TestHostileRelayedAuth(t *testing.T) {
	t.Parallel()
	for _, public := range []string{"", "wss://relay.example.com"} {
		tr := startRelay(t, nil, func(c *Config) {
			if public != "" {
				c.PublicURLs = []string{public}
			}
		})
		member, _ := storeInbox(t, tr, 1)
		evil := dialHeader(t, tr.url, http.Header{"Host": {"evil.example"}})
		ev := member.authEvent(t, evil.challenge(), "wss://evil.example/", nil)
		evil.send("AUTH", ev)
		ok, reason := evil.ok(ev.ID)
		require.False(t, ok, "public URL %q: a sign-in made for another relay", public)
		require.Equal(t, protocol.ReasonAuthRelay, reason)
		evil.send("REQ", "inbox", inbox(member))
		require.True(t, strings.HasPrefix(evil.closed("inbox"), "auth-required: "), "the member's DMs stay unread")
	}

	// Behind a proxy the configured URL is the only truth: the address the
	// relay listens on is not its name then.
	tr := startRelay(t, nil, func(c *Config) { c.PublicURLs = []string{"wss://relay.example.com", "wss://nostr.example.net"} })
	c := dial(t, tr.url)
	challenge := c.challenge()
	k := newKey(t)
	ev := k.authEvent(t, challenge, tr.url, nil)
	c.send("AUTH", ev)
	ok, reason := c.ok(ev.ID)
	require.False(t, ok, "the listen address is not a public URL")
	require.Equal(t, protocol.ReasonAuthRelay, reason)
	c.authenticate(k, challenge, "wss://nostr.example.net")
}

// TestServeRefusesAnUnnamedPublicAddress: a listener others can reach, with
// no public URL to name it, is refused before anything is served.
func TestServeRefusesAnUnnamedPublicAddress(t *testing.T) {
	t.Parallel()
	r, err := New(testConfig(), Deps{Store: newFakeStore(), Feed: newFakeStore(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	err = r.Serve(context.Background(), ln)
	require.ErrorContains(t, err, "is not a loopback address and no public URL is set")
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
}

// TestAuthDisabled: with --auth=false no challenge is ever sent, AUTH is
// refused, and direct messages are refused as restricted (nobody can read them).
func TestAuthDisabled(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Auth.Enabled = false })
	c := dial(t, tr.url)
	ev := newKey(t).authEvent(t, "x", tr.url, nil)
	c.send("AUTH", ev)
	ok, reason := c.ok(ev.ID)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: "), reason)
	c.send("REQ", "inbox", inbox(newKey(t)))
	require.Equal(t, reasonPrivateNoAuth, c.closed("inbox"))
	c.noChallenge()
}

// storeInbox publishes on tr a note by a new key (a member: a direct message
// must name one) and n gift wraps to it; it returns the key and the wraps' ids.
func storeInbox(t *testing.T, tr *testRelay, n int) (key, []string) {
	t.Helper()
	pub := dial(t, tr.url)
	who := newKey(t)
	ok, reason := pub.publish(who.signed(t, 1, nostr.Tags{{"t", "intro"}}, "hi, I am new here"))
	require.True(t, ok, reason)
	var ids []string
	for i := range n {
		wrap := newKey(t).signed(t, protocol.KindGiftWrap, nostr.Tags{{"p", who.pk}}, fmt.Sprintf("c2VhbGVk%d", i))
		ok, reason := pub.publish(wrap)
		require.True(t, ok, reason)
		ids = append(ids, wrap.ID)
	}
	return who, ids
}

// inbox is the filter an app reads k's direct messages with (NIP-17).
func inbox(k key) map[string]any {
	return map[string]any{"kinds": []int{protocol.KindGiftWrap}, "#p": []string{k.pk}}
}

// TestAuthChallengeOnConnect: under the default configuration every connection
// is sent its challenge as its first message, before the client has sent
// anything. An app that signs in when it sees a challenge (nostr-tools'
// onauth, NDK's signIn policy) reads its whole inbox with its first REQ. An
// inbox REQ that crossed the challenge is held (AuthConfig.Grace) and sent the
// challenge again; once the client answers, the same REQ is answered in full,
// then live, never CLOSED (issue 48).
func TestAuthChallengeOnConnect(t *testing.T) {
	t.Parallel()
	tr, _ := startAppRelay(t, pgtest.New(t), nil)
	alice, wraps := storeInbox(t, tr, 3)

	app := dial(t, tr.url)
	ch := app.challengeAt()
	require.Zero(t, ch.after, "the challenge is the first message")
	require.Len(t, ch.challenge, 32)
	app.authenticate(alice, ch.challenge, tr.url)
	require.ElementsMatch(t, wraps, app.ids(t, "inbox", inbox(alice)), "the first inbox REQ is answered in full")
	app.noChallenge()

	racer := dial(t, tr.url)
	racer.send("REQ", "inbox", inbox(alice))
	ch = racer.challengeAt()
	require.Zero(t, ch.after, "the challenge came on connect")
	again := racer.challengeAt()
	require.Zero(t, again.after, "and again for the held REQ, before any answer")
	require.Equal(t, ch.challenge, again.challenge)
	racer.authenticate(alice, ch.challenge, tr.url)
	var got []string
	for range wraps {
		got = append(got, racer.event("inbox").ID)
	}
	racer.eose("inbox")
	require.ElementsMatch(t, wraps, got, "the REQ that crossed the challenge is answered in full after AUTH")
	wrap := newKey(t).signed(t, protocol.KindGiftWrap, nostr.Tags{{"p", alice.pk}}, "bGl2ZQ==")
	ok, reason := dial(t, tr.url).publish(wrap)
	require.True(t, ok, reason)
	require.Equal(t, wrap.ID, racer.event("inbox").ID, "and live")
	racer.noChallenge()
}

// TestAuthChallengeLazy: with ChallengeOnConnect off (relay
// --auth-challenge-on-connect=false) a client is sent no challenge until it is
// refused for want of AUTH: then the challenge comes right before each
// auth-required answer. Signed in, the REQ is answered in full.
func TestAuthChallengeLazy(t *testing.T) {
	t.Parallel()
	tr, _ := startAppRelay(t, pgtest.New(t), func(c *Config) { c.Auth.ChallengeOnConnect, c.Auth.Grace = false, 0 })
	alice, wraps := storeInbox(t, tr, 2)

	c := dial(t, tr.url)
	require.Empty(t, c.ids(t, "public", map[string]any{"kinds": []int{1}, "authors": []string{newKey(t).pk}}))
	c.noChallenge()
	c.send("REQ", "inbox", inbox(alice))
	require.True(t, strings.HasPrefix(c.closed("inbox"), "auth-required: "))
	ch := c.challengeAt()
	require.Equal(t, 1, ch.after, "the challenge comes right before the refusal (after the public REQ's EOSE)")
	c.send("COUNT", "n", inbox(alice))
	require.True(t, strings.HasPrefix(c.closed("n"), "auth-required: "))
	require.Equal(t, 2, c.challengeAt().after, "and again before the next refusal")
	c.authenticate(alice, ch.challenge, tr.url)
	require.ElementsMatch(t, wraps, c.ids(t, "inbox", inbox(alice)))
	c.noChallenge()
}

// TestProtectedEvents: NIP-70 events are accepted only from their authenticated
// author.
func TestProtectedEvents(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
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
