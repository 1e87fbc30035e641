package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

func TestEventAcceptedAfterIngest(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c := dial(t, tr.url)
	ev := newKey(t).note(t, "hello", nil)
	ok, reason := c.publish(ev)
	require.True(t, ok, reason)
	require.Empty(t, reason)
	require.Len(t, tr.store.ingested(), 1)
	require.Equal(t, ev.ID, tr.store.ingested()[0].ID)
	require.Equal(t, 1.0, testutil.ToFloat64(tr.m.events.WithLabelValues("accepted")))
}

func TestEventRejected(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Limits.MaxContentBytes = 10; c.Limits.MaxTags = 3; c.Auth.Enabled = false })
	c := dial(t, tr.url)
	k := newKey(t)
	other := newKey(t)
	resign := func(ev *nostr.Event) *nostr.Event { require.NoError(t, ev.Sign(k.sk)); return ev }
	cases := []struct {
		name   string
		ev     func() *nostr.Event
		prefix string
	}{
		{"bad signature", func() *nostr.Event {
			ev := k.note(t, "x", nil)
			ev.Sig = other.note(t, "x", nil).Sig
			return ev
		}, "invalid: bad signature"},
		{"bad id", func() *nostr.Event {
			ev := k.note(t, "x", nil)
			ev.Content = "changed"
			return ev
		}, "invalid: bad event id"},
		{"missing topic", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) { ev.Tags = nostr.Tags{} })
		}, "restricted: missing topic"},
		{"future", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) { ev.CreatedAt = nostr.Now() + 3600 })
		}, "invalid: created_at too far in the future"},
		{"expired", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "1000"}) })
		}, "invalid: expired"},
		{"content too long", func() *nostr.Event { return k.note(t, strings.Repeat("a", 11), nil) }, "invalid: content too long"},
		{"too many tags", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) {
				ev.Tags = append(ev.Tags, nostr.Tag{"a1", "1"}, nostr.Tag{"a2", "2"}, nostr.Tag{"a3", "3"})
			})
		}, "invalid: too many tags"},
		{"auth kind", func() *nostr.Event {
			return resign(&nostr.Event{Kind: 22242, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}})
		}, "invalid: kind 22242"},
		{"protected without auth support", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"-"}) })
		}, "restricted: "},
		{"protected ephemeral without auth support", func() *nostr.Event {
			return k.note(t, "x", func(ev *nostr.Event) { ev.Kind = 20001; ev.Tags = append(ev.Tags, nostr.Tag{"-"}) })
		}, "restricted: "},
	}
	for _, tc := range cases {
		ev := tc.ev()
		ok, reason := c.publish(ev)
		require.False(t, ok, tc.name)
		require.True(t, strings.HasPrefix(reason, tc.prefix), "%s: got %q, want prefix %q", tc.name, reason, tc.prefix)
	}
	require.Empty(t, tr.store.ingested(), "rejected events must not reach the store")
	require.Equal(t, 7.0, testutil.ToFloat64(tr.m.events.WithLabelValues("invalid")))
	require.Equal(t, 3.0, testutil.ToFloat64(tr.m.events.WithLabelValues("restricted")), "a missing topic is policy, counted as restricted")
}

// TestMutatedEventIsInvalid sends an event whose id and signature are valid for
// what its author signed with one field changed, each field in turn, to values
// of the field's JSON type (raw JSON, as a client that changed the event after
// signing sends it). Each is answered invalid: the id is checked, then the
// signature, before any rule of the relay: tags sent as [] are a bad event id,
// not "restricted: missing topic" (issue 32), and so is a topic that is not
// enabled, an expiration in the past or a created_at in 1970. Nothing reaches
// the store; the event as signed is then accepted.
func TestMutatedEventIsInvalid(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Limits.AllowedTopics = map[string]bool{"x": true} })
	c := dial(t, tr.url)
	k, other := newKey(t), newKey(t)
	ev := k.signed(t, 1, nostr.Tags{{"t", "x"}}, "hello")
	otherEv := other.signed(t, 1, nostr.Tags{{"t", "x"}}, "hello")
	sameBodyOtherKey := other.signed(t, ev.Kind, ev.Tags, ev.Content)
	want, got := map[string]string{}, map[string]string{}
	for _, tc := range []struct {
		field string
		value any
		want  string
	}{
		{"id", otherEv.ID, protocol.ReasonBadID},
		{"pubkey", other.pk, protocol.ReasonBadID},
		{"created_at", int64(ev.CreatedAt) + 1, protocol.ReasonBadID},
		{"created_at", 1, protocol.ReasonBadID},
		{"kind", 7, protocol.ReasonBadID},
		{"kind", 30023, protocol.ReasonBadID},
		{"kind", 22242, protocol.ReasonBadID},
		{"tags", []any{}, protocol.ReasonBadID},
		{"tags", [][]string{{"t", "y"}}, protocol.ReasonBadID},
		{"tags", [][]string{{"t", "x"}, {"expiration", "1000"}}, protocol.ReasonBadID},
		{"content", "", protocol.ReasonBadID},
		{"content", "hello!", protocol.ReasonBadID},
		{"sig", otherEv.Sig, protocol.ReasonBadSignature},
		{"sig", sameBodyOtherKey.Sig, protocol.ReasonBadSignature},
	} {
		var fields map[string]any
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &fields))
		require.Contains(t, fields, tc.field)
		fields[tc.field] = tc.value
		c.send("EVENT", fields)
		id := ev.ID
		if tc.field == "id" {
			id = otherEv.ID
		}
		ok, reason := c.ok(id)
		require.False(t, ok, "%s = %v", tc.field, tc.value)
		name := fmt.Sprintf("%s = %v", tc.field, tc.value)
		want[name], got[name] = tc.want, reason
	}
	require.Equal(t, want, got)
	for name, reason := range got {
		require.True(t, strings.HasPrefix(reason, "invalid: "), "%s: %q", name, reason)
	}
	require.Empty(t, tr.store.ingested(), "invalid events must not reach the store")
	ok, reason := c.publish(ev)
	require.True(t, ok, "the event as signed: %s", reason)
}

func TestEventUnparseable(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Limits.MaxMessageBytes = 2048 })
	c := dial(t, tr.url)

	c.sendRaw(`not json`)
	msg := c.expect("NOTICE")
	require.True(t, strings.HasPrefix(str(t, msg[1]), "invalid: "), join(msg))

	c.sendRaw(`["HELLO"]`)
	c.expect("NOTICE")

	// An EVENT with a readable id is answered with OK false, as NIP-01 asks.
	id := strings.Repeat("ab", 32)
	c.sendRaw(`["EVENT",{"id":"` + id + `","kind":"one"}]`)
	ok, reason := c.ok(id)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "invalid: "), reason)

	// A REQ with a readable subscription id is answered with CLOSED.
	c.sendRaw(`["REQ","s1",42]`)
	require.True(t, strings.HasPrefix(c.closed("s1"), "invalid: "))

	// Too large, but within twice the limit: a NOTICE, and the connection stays.
	c.send("EVENT", newKey(t).note(t, strings.Repeat("x", 3000), nil))
	msg = c.expect("NOTICE")
	require.Contains(t, str(t, msg[1]), "too large")
	require.Empty(t, c.drain())
	require.Equal(t, 5.0, testutil.ToFloat64(tr.m.messages.WithLabelValues("invalid")))
}

func TestEventDuplicateFromStore(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c := dial(t, tr.url)
	ev := newKey(t).note(t, "twice", nil)
	ok, reason := c.publish(ev)
	require.True(t, ok, reason)
	ok, reason = c.publish(ev)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(reason, "duplicate: "), reason)
	require.Equal(t, 1.0, testutil.ToFloat64(tr.m.events.WithLabelValues("duplicate")))
}

func TestEventStoreVerdictAndFailure(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	tr := startRelay(t, store, nil)
	c := dial(t, tr.url)
	k := newKey(t)

	store.mu.Lock()
	store.ingestHook = func(_ context.Context, evs []*nostr.Event) ([]IngestResult, error) {
		res := make([]IngestResult, len(evs))
		for i := range res {
			res[i] = IngestResult{OK: false, Message: "blocked: deleted by its author"}
		}
		return res, nil
	}
	store.mu.Unlock()
	ok, reason := c.publish(k.note(t, "a", nil))
	require.False(t, ok)
	require.Equal(t, "blocked: deleted by its author", reason)

	store.mu.Lock()
	store.ingestHook = func(context.Context, []*nostr.Event) ([]IngestResult, error) {
		return nil, errors.New("connection refused")
	}
	store.mu.Unlock()
	ok, reason = c.publish(k.note(t, "b", nil))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "error: "), reason)

	store.mu.Lock()
	store.ingestHook = func(context.Context, []*nostr.Event) ([]IngestResult, error) { panic("boom") }
	store.mu.Unlock()
	ok, reason = c.publish(k.note(t, "c", nil))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "error: "), reason)
}

// TestEventGroupCommit: an event meeting an idle flush slot is flushed at once;
// events arriving while every slot is busy share the next Ingest call; every OK
// comes after the commit that carried it.
func TestEventGroupCommit(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	release := make(chan struct{})
	store.ingestHook = func(_ context.Context, evs []*nostr.Event) ([]IngestResult, error) {
		<-release
		return store.store(evs), nil
	}
	tr := startRelay(t, store, func(c *Config) {
		c.BatchMaxEvents = 4
		c.BatchMaxDelay = time.Hour
		c.IngestConcurrency = 1
	})
	k := newKey(t)
	first := dial(t, tr.url)
	first.send("EVENT", k.note(t, "first", nil))
	require.Eventually(t, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.batches) == 1
	}, waitTimeout, time.Millisecond, "a lone event is flushed without waiting")
	clients := make([]*client, 4)
	for i := range clients {
		clients[i] = dial(t, tr.url)
		clients[i].send("EVENT", k.note(t, string(rune('a'+i)), nil))
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.ingestWaiting) == 4 },
		waitTimeout, time.Millisecond, "the four queue behind the busy slot")
	for _, c := range append(clients, first) {
		select {
		case msg := <-c.msgs:
			t.Fatalf("answer before the commit: %s", join(msg))
		default:
		}
	}
	close(release)
	for _, c := range append(clients, first) {
		c.expect("OK")
	}
	// The OKs came over a socket, which the race detector does not see as an
	// ordering: read the batches under the store's lock.
	store.mu.Lock()
	batches := slices.Clone(store.batches)
	store.mu.Unlock()
	require.Len(t, batches, 2)
	require.Len(t, batches[0], 1)
	require.Len(t, batches[1], 4, "the events that waited share one Ingest")
	require.Equal(t, 1, testutil.CollectAndCount(tr.m.batchSize))
}
