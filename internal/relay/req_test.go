package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

func TestReqStoredThenEOSEThenLive(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	k := newKey(t)
	old := k.note(t, "old", func(ev *nostr.Event) { ev.CreatedAt -= 10 })
	newer := k.note(t, "newer", func(ev *nostr.Event) { ev.CreatedAt -= 5 })
	other := k.note(t, "other topic", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} })
	store.store([]*nostr.Event{old, newer, other})
	tr := startRelay(t, store, nil)

	sub := dial(t, tr.url)
	sub.send("REQ", "s", goFilter())
	require.Equal(t, newer.ID, sub.event("s").ID, "newest first")
	require.Equal(t, old.ID, sub.event("s").ID)
	sub.eose("s")

	pub := dial(t, tr.url)
	live := k.note(t, "live", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "Go"}} }) // normalised topic
	ok, reason := pub.publish(live)
	require.True(t, ok, reason)
	require.Equal(t, live.ID, sub.event("s").ID)
	ok, reason = pub.publish(k.note(t, "not for s", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} }))
	require.True(t, ok, reason)
	require.Empty(t, sub.drain())
}

func TestReqLimitAndLimitZero(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	k := newKey(t)
	for i := range 5 {
		store.store([]*nostr.Event{k.note(t, "n", func(ev *nostr.Event) { ev.CreatedAt -= nostr.Timestamp(i) })})
	}
	tr := startRelay(t, store, nil)
	c := dial(t, tr.url)
	c.send("REQ", "two", map[string]any{"#t": []string{"go"}, "limit": 2})
	c.event("two")
	c.event("two")
	c.eose("two")
	c.send("REQ", "zero", map[string]any{"#t": []string{"go"}, "limit": 0})
	c.eose("zero")
	live := k.note(t, "live", nil)
	c.send("EVENT", live)
	// Both subscriptions get it live, and the publisher its OK; the order of
	// the three is not defined (the follower may fan the event out before the
	// OK is queued: NIP-01 does not order them).
	got := map[string]bool{}
	for range 3 {
		msg := c.next()
		switch str(t, msg[0]) {
		case "OK":
			require.Equal(t, live.ID, str(t, msg[1]))
			require.JSONEq(t, "true", string(msg[2]), join(msg))
			got["OK"] = true
		case "EVENT":
			got[str(t, msg[1])] = true
		default:
			t.Fatalf("unexpected %s", join(msg))
		}
	}
	require.Equal(t, map[string]bool{"OK": true, "two": true, "zero": true}, got)
}

func TestCloseStopsDelivery(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c := dial(t, tr.url)
	c.send("REQ", "a", goFilter())
	c.eose("a")
	c.send("REQ", "b", goFilter())
	c.eose("b")
	c.send("CLOSE", "a")
	require.Empty(t, c.drain()) // CLOSE has been handled
	k := newKey(t)
	pub := dial(t, tr.url)
	ok, reason := pub.publish(k.note(t, "x", nil))
	require.True(t, ok, reason)
	c.event("b")
	require.Empty(t, c.drain())
	require.Equal(t, 1, tr.index.size())
}

func TestReqReplacesSameID(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.MaxSubscriptions = 1 })
	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	c.eose("s")
	c.send("REQ", "s", map[string]any{"#t": []string{"rust"}}) // replaces, not a second one
	c.eose("s")
	pub := dial(t, tr.url)
	k := newKey(t)
	ok, _ := pub.publish(k.note(t, "go", nil))
	require.True(t, ok)
	rust := k.note(t, "rust", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} })
	ok, _ = pub.publish(rust)
	require.True(t, ok)
	require.Equal(t, rust.ID, c.event("s").ID, "the go event is not delivered: the first REQ was replaced")
	require.Equal(t, 1, tr.index.size())
}

func TestReqClosed(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.MaxSubscriptions = 2
		c.Limits.Search = false
		c.Limits.RequireTopicInREQ = true
	})
	c := dial(t, tr.url)
	c.send("REQ", "no-topic", map[string]any{"kinds": []int{1}})
	require.True(t, strings.HasPrefix(c.closed("no-topic"), "restricted: "))
	c.send("REQ", "profiles", map[string]any{"kinds": []int{0, 3}, "authors": []string{strings.Repeat("ab", 32)}})
	c.eose("profiles") // identity kinds have no topic to ask for
	c.send("CLOSE", "profiles")
	c.send("REQ", "bad-id", map[string]any{"#t": []string{"go"}, "ids": []string{"abc"}})
	require.True(t, strings.HasPrefix(c.closed("bad-id"), "invalid: "))
	c.send("REQ", "search", map[string]any{"#t": []string{"go"}, "search": "x"})
	require.True(t, strings.HasPrefix(c.closed("search"), "unsupported: "))

	c.send("REQ", "1", goFilter())
	c.eose("1")
	c.send("REQ", "2", goFilter())
	c.eose("2")
	c.send("REQ", "3", goFilter())
	require.Equal(t, "error: too many subscriptions", c.closed("3"))
	c.send("CLOSE", "1")
	c.send("REQ", "3", goFilter())
	c.eose("3")

	// A refused REQ also closes an open subscription of the same id.
	c.send("REQ", "3", map[string]any{"kinds": []int{1}})
	require.True(t, strings.HasPrefix(c.closed("3"), "restricted: "))
	require.Equal(t, 1, tr.index.size())
}

func TestReqQueryTimeout(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.queryHook = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tr := startRelay(t, store, func(c *Config) { c.QueryTimeout = 50 * time.Millisecond })
	c := dial(t, tr.url)
	c.send("REQ", "slow", goFilter())
	require.Equal(t, "error: query timed out", c.closed("slow"))
	require.Eventually(t, func() bool { return tr.index.size() == 0 }, waitTimeout, time.Millisecond)
	c.send("COUNT", "slow-count", goFilter())
	// COUNT uses Store.Count, which the hook does not slow down.
	c.expect("COUNT")
}

func TestCount(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	k := newKey(t)
	store.store([]*nostr.Event{
		k.note(t, "1", nil), k.note(t, "2", nil),
		k.note(t, "3", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} }),
	})
	tr := startRelay(t, store, func(c *Config) { c.Limits.RequireTopicInREQ = true })
	c := dial(t, tr.url)
	c.send("COUNT", "c", goFilter(), map[string]any{"#t": []string{"rust"}})
	msg := c.expect("COUNT")
	require.Equal(t, "c", str(t, msg[1]))
	var body struct {
		Count int64 `json:"count"`
	}
	require.NoError(t, json.Unmarshal(msg[2], &body))
	require.EqualValues(t, 3, body.Count)

	c.send("COUNT", "bad", map[string]any{"kinds": []int{1}})
	require.True(t, strings.HasPrefix(c.closed("bad"), "restricted: "))
}

// TestReqHoldsLiveEventsUntilEOSE: an event stored while the query runs is
// delivered after EOSE, once, even when the query also returned it.
func TestReqHoldsLiveEventsUntilEOSE(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	k := newKey(t)
	during := k.note(t, "during", nil)
	entered := make(chan struct{})
	proceed := make(chan struct{})
	store.queryHook = func(ctx context.Context) error {
		close(entered)
		<-proceed
		return nil
	}
	tr := startRelay(t, store, nil)
	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	<-entered
	pub := dial(t, tr.url)
	ok, reason := pub.publish(during) // stored, and fanned out to the filed subscription
	require.True(t, ok, reason)
	require.Eventually(t, func() bool {
		s := tr.subscription(c, "s")
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.pending.len() == 1
	}, waitTimeout, time.Millisecond)
	also := k.note(t, "also during", nil)
	ok, _ = pub.publish(also)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		s := tr.subscription(c, "s")
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.pending.len() == 2
	}, waitTimeout, time.Millisecond)
	close(proceed) // the query now sees both events
	first, second := c.event("s"), c.event("s")
	require.ElementsMatch(t, []string{during.ID, also.ID}, []string{first.ID, second.ID})
	c.eose("s")
	require.Empty(t, c.drain(), "held live copies of stored events are dropped")
}

// subscription finds the open subscription id of the server side of client c
// (the only connection whose subs hold id).
func (tr *testRelay) subscription(_ *client, id string) *subscription {
	tr.connsMu.Lock()
	defer tr.connsMu.Unlock()
	for conn := range tr.conns {
		conn.mu.Lock()
		s := conn.subs.get(id)
		conn.mu.Unlock()
		if s != nil {
			return s
		}
	}
	return &subscription{}
}

func TestReqQueryFailure(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.queryHook = func(context.Context) error { return errors.New("relation does not exist") }
	tr := startRelay(t, store, nil)
	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	require.Equal(t, "error: could not run the query", c.closed("s"))
	require.Eventually(t, func() bool { return tr.index.size() == 0 }, waitTimeout, time.Millisecond)
	c.send("REQ", "s", goFilter()) // the id is free again
	require.Equal(t, "error: could not run the query", c.closed("s"))
}
