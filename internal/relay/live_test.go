package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestEphemeralDeliveredLiveNeverStored(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	sub := dial(t, tr.url)
	sub.send("REQ", "s", map[string]any{"#t": []string{"go"}, "kinds": []int{20001}})
	sub.eose("s")
	pub := dial(t, tr.url)
	ev := newKey(t).note(t, "typing...", func(ev *nostr.Event) { ev.Kind = 20001 })
	ok, reason := pub.publish(ev)
	require.True(t, ok, reason)
	require.Equal(t, ev.ID, sub.event("s").ID)
	require.Empty(t, tr.store.ingested())
	// Not stored, so a later REQ does not return it.
	sub.send("REQ", "again", map[string]any{"#t": []string{"go"}, "kinds": []int{20001}})
	sub.eose("again")
}

// TestLiveAcrossRelays: relays sharing a store deliver each other's events, because
// live delivery follows the outbox, not the local ingest path.
func TestLiveAcrossRelays(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	a := startRelay(t, store, nil)
	b := startRelay(t, store, nil)
	sub := dial(t, b.url)
	sub.send("REQ", "s", goFilter())
	sub.eose("s")
	pub := dial(t, a.url)
	ev := newKey(t).note(t, "from a", nil)
	ok, reason := pub.publish(ev)
	require.True(t, ok, reason)
	require.Equal(t, ev.ID, sub.event("s").ID)
	requireCounter(t, b.m.liveDeliveries, 1)
	require.Equal(t, 0.0, testutil.ToFloat64(a.m.liveDeliveries))

	// Events stored by any writer (here straight into the store) are delivered too.
	direct := newKey(t).note(t, "direct", nil)
	store.store([]*nostr.Event{direct})
	require.Equal(t, direct.ID, sub.event("s").ID)
}

// TestFollowerDeliversOncePerEvent: an event with several topics has one outbox row
// per topic but reaches a subscription once; delete rows deliver nothing.
func TestFollowerDeliversOncePerEvent(t *testing.T) {
	t.Parallel()
	// Reads of two rows, so that the rows of one event straddle two reads.
	tr := startRelay(t, nil, nil, func(r *Relay) { r.follower.batchSize = 2 })
	sub := dial(t, tr.url)
	sub.send("REQ", "s", map[string]any{"#t": []string{"go", "rust", "zig"}})
	sub.eose("s")
	ev := newKey(t).note(t, "three topics", func(ev *nostr.Event) {
		ev.Tags = nostr.Tags{{"t", "go"}, {"t", "rust"}, {"t", "zig"}}
	})
	tr.store.store([]*nostr.Event{ev})
	tr.store.appendRow(outbox.Row{Op: outbox.OpDelete, EventID: ev.ID, TopicID: "go", Reason: "nip09"})
	require.Equal(t, ev.ID, sub.event("s").ID)
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.followerSeq) == 4 }, waitTimeout, time.Millisecond)
	require.Empty(t, sub.drain())
}

// TestFollowerRetriesFailedLoads: a failed Store.Events is retried from the same
// seq, so the event is still delivered.
func TestFollowerRetriesFailedLoads(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	var failures atomic.Int32
	store.eventsHook = func(context.Context) error {
		if failures.Add(1) <= 2 {
			return errors.New("database unavailable")
		}
		return nil
	}
	tr := startRelay(t, store, nil, func(r *Relay) { r.follower.retryBase = time.Millisecond })
	sub := dial(t, tr.url)
	sub.send("REQ", "s", goFilter())
	sub.eose("s")
	ev := newKey(t).note(t, "eventually", nil)
	store.store([]*nostr.Event{ev})
	require.Equal(t, ev.ID, sub.event("s").ID)
	require.GreaterOrEqual(t, testutil.ToFloat64(tr.m.followerFailures), 2.0)
}

// TestFollowerSkipsLoadsWithoutSubscriptions: with no live subscription the
// follower moves past new rows without loading their events; once one is filed,
// it loads and delivers again.
func TestFollowerSkipsLoadsWithoutSubscriptions(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	var loads atomic.Int32
	store.eventsHook = func(context.Context) error { loads.Add(1); return nil }
	// (no NIP-77 tree and no event cache: either loads every row's event)
	tr := startRelay(t, store, func(c *Config) { c.NegTree = false })
	store.store([]*nostr.Event{newKey(t).note(t, "nobody listens", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} })})
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.followerSeq) == 1 }, waitTimeout, time.Millisecond)
	require.Zero(t, loads.Load())

	sub := dial(t, tr.url)
	sub.send("REQ", "s", goFilter())
	sub.eose("s")
	ev := newKey(t).note(t, "now someone does", nil)
	store.store([]*nostr.Event{ev})
	require.Equal(t, ev.ID, sub.event("s").ID)
	require.Equal(t, int32(1), loads.Load())
}

// TestFollowerSkipsLoadsWithAnUnscopedTree: a NIP-77 tree whose fill found
// events without a topic is off for good (sessions read the database), so it
// no longer makes the follower load every row's event: without a live
// subscription, none is loaded.
func TestFollowerSkipsLoadsWithAnUnscopedTree(t *testing.T) {
	t.Parallel()
	store := newFakeStore() // (its tree fill answers unscoped)
	var loads atomic.Int32
	store.eventsHook = func(context.Context) error { loads.Add(1); return nil }
	tr := startRelay(t, store, func(c *Config) { c.NegTree = true })
	require.NotNil(t, tr.negTree, "the default config keeps a tree")
	require.Eventually(t, func() bool { return !tr.negTree.active() }, waitTimeout, time.Millisecond, "the fill ends without a tree")
	store.store([]*nostr.Event{newKey(t).note(t, "nobody listens", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} })})
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.followerSeq) == 1 }, waitTimeout, time.Millisecond)
	require.Zero(t, loads.Load())
}

// silentFeed is a Feed whose notifications never come.
type silentFeed struct{ *fakeStore }

func (silentFeed) Listen(ctx context.Context, _ func()) { <-ctx.Done() }

// TestFollowerPolls: without notifications, the poll fallback still delivers.
func TestFollowerPolls(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	r, err := New(testConfig(), Deps{Store: store, Feed: silentFeed{store}})
	require.NoError(t, err)
	r.follower.pollInterval = 20 * time.Millisecond
	tr := serveRelay(t, r)
	sub := dial(t, tr.url)
	sub.send("REQ", "s", goFilter())
	sub.eose("s")
	ev := newKey(t).note(t, "polled", nil)
	store.store([]*nostr.Event{ev})
	require.Equal(t, ev.ID, sub.event("s").ID)
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.EventRatePerIP = Rate{PerSecond: 0.001, Burst: 2}
		c.ReqRatePerIP = Rate{PerSecond: 0.001, Burst: 2}
	})
	c := dial(t, tr.url)
	k := newKey(t)
	for i := range 2 {
		ok, reason := c.publish(k.note(t, string(rune('a'+i)), nil))
		require.True(t, ok, reason)
	}
	ok, reason := c.publish(k.note(t, "too many", nil))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "rate-limited: "), reason)

	c.send("REQ", "1", goFilter())
	c.expect("EVENT")
	c.expect("EVENT")
	c.eose("1")
	c.send("COUNT", "2", goFilter())
	c.expect("COUNT")
	c.send("REQ", "3", goFilter())
	require.True(t, strings.HasPrefix(c.closed("3"), "rate-limited: "))
	require.Equal(t, 1.0, testutil.ToFloat64(tr.m.events.WithLabelValues("rate-limited")))

	pubTR := startRelay(t, nil, func(c *Config) { c.EventRatePerPubkey = Rate{PerSecond: 0.001, Burst: 1} })
	c1, c2 := dial(t, pubTR.url), dial(t, pubTR.url)
	ok, reason = c1.publish(k.note(t, "one", nil))
	require.True(t, ok, reason)
	ok, reason = c2.publish(k.note(t, "same author, other connection", nil))
	require.False(t, ok)
	require.Equal(t, reasonEventRatePubkey, reason)
	ok, reason = c2.publish(newKey(t).note(t, "other author", nil))
	require.True(t, ok, reason)
}

// TestSlowSubscriberDoesNotDelayOthers: a subscriber that stops reading is
// disconnected when its send queue overflows, while another subscriber of the same
// events keeps receiving them promptly.
func TestSlowSubscriberDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	const (
		rounds   = 10
		perRound = 40
		size     = 50000
	)
	tr := startRelay(t, nil, func(c *Config) {
		c.SendQueueSize = 64
		c.Limits.MaxContentBytes = 60000
		c.Limits.MaxMessageBytes = 65536
	})

	// The slow client subscribes and then never reads again. Its fixed-size
	// receive buffer keeps the kernel from absorbing the whole burst.
	dialer := *websocket.DefaultDialer
	dialer.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = conn.(*net.TCPConn).SetReadBuffer(256 << 10)
		}
		return conn, err
	}
	slow, _, err := dialer.Dial(tr.url, nil)
	require.NoError(t, err)
	defer slow.Close()
	require.NoError(t, slow.WriteJSON([]any{"REQ", "s", goFilter()}))
	_, challenge, err := slow.ReadMessage() // the NIP-42 challenge, sent on connect by default
	require.NoError(t, err)
	require.Contains(t, string(challenge), `["AUTH",`)
	_, eose, err := slow.ReadMessage()
	require.NoError(t, err)
	require.Contains(t, string(eose), "EOSE")

	fast := dial(t, tr.url)
	fast.send("REQ", "s", goFilter())
	fast.eose("s")

	// 20 MB in all, in commits of 40 events (2 MB) as from another relay.
	k := newKey(t)
	for r := range rounds {
		events := make([]*nostr.Event, perRound)
		for i := range events {
			content := fmt.Sprintf("%d/%d %s", r, i, strings.Repeat("x", size))
			events[i] = k.note(t, content, nil)
		}
		start := time.Now()
		tr.store.store(events)
		for i := range events {
			require.Equal(t, events[i].ID, fast.event("s").ID, "round %d event %d", r, i)
		}
		require.Less(t, time.Since(start), 2*time.Second, "round %d: the fast subscriber waited", r)
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.slowDisconnects) == 1 }, waitTimeout, time.Millisecond)
	require.Eventually(t, func() bool { return testutil.ToFloat64(tr.m.connections) == 1 }, waitTimeout, time.Millisecond,
		"the relay still holds the slow connection")

	// The slow client finds the connection closed once it reads again (after what
	// the kernel still buffered, and perhaps the goodbye NOTICE).
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(waitTimeout)))
	for {
		_, _, err := slow.ReadMessage()
		if err != nil {
			var nerr net.Error
			require.False(t, errors.As(err, &nerr) && nerr.Timeout(), "slow client still connected: %v", err)
			break
		}
	}
}

// TestShutdownFlushesPendingBatch: events waiting for their batch are stored and
// answered before the connections are closed with 1001.
func TestShutdownFlushesPendingBatch(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	release := make(chan struct{})
	store.ingestHook = func(_ context.Context, evs []*nostr.Event) ([]IngestResult, error) {
		<-release
		return store.store(evs), nil
	}
	tr := startRelay(t, store, func(c *Config) {
		c.BatchMaxDelay = time.Hour
		c.BatchMaxEvents = 1000
		c.IngestConcurrency = 1
	})
	c := dial(t, tr.url)
	busy := newKey(t).note(t, "keeps the only flush slot busy", nil)
	c.send("EVENT", busy)
	require.Eventually(t, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.batches) == 1
	}, waitTimeout, time.Millisecond)
	ev := newKey(t).note(t, "last words", nil)
	c.send("EVENT", ev)
	require.Empty(t, c.drain()) // the EVENT has been handed to the batcher
	require.Len(t, tr.store.ingested(), 1, "only the first event has reached the store")

	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	stopped := make(chan error, 1)
	go func() { stopped <- tr.stop() }()
	ok, reason := c.ok(busy.ID)
	require.True(t, ok, reason)
	ok, reason = c.ok(ev.ID)
	require.True(t, ok, reason)
	require.Len(t, tr.store.ingested(), 2)
	<-c.gone
	var cerr *websocket.CloseError
	require.ErrorAs(t, c.err, &cerr)
	require.Equal(t, websocket.CloseGoingAway, cerr.Code)
	require.NoError(t, <-stopped)

	_, _, err := websocket.DefaultDialer.Dial(tr.url, nil)
	require.Error(t, err, "no new connections after shutdown")
}

// TestLiveBurstToFastClient: a burst of live events several times larger than one
// follower read reaches a subscriber that reads promptly completely, each event
// once and in commit order; the subscriber is not taken for a slow client.
func TestLiveBurstToFastClient(t *testing.T) {
	t.Parallel()
	const window = 500 // EVENTs the publisher has in flight
	cases := []struct {
		name    string
		events  int
		signed  bool // the relay verifies them
		publish func(t *testing.T, tr *testRelay, evs []*nostr.Event)
	}{
		{"commits of 500 straight into the store", 2500, false, func(_ *testing.T, tr *testRelay, evs []*nostr.Event) {
			for len(evs) > 0 {
				n := min(500, len(evs))
				tr.store.store(evs[:n])
				evs = evs[n:]
			}
		}},
		{"pipelined publisher", 1000, true, func(t *testing.T, tr *testRelay, evs []*nostr.Event) {
			pub := dial(t, tr.url)
			for i, ev := range evs {
				if i >= window {
					ok, reason := pub.ok(evs[i-window].ID)
					require.True(t, ok, reason)
				}
				pub.send("EVENT", ev)
			}
			for _, ev := range evs[max(0, len(evs)-window):] {
				ok, reason := pub.ok(ev.ID)
				require.True(t, ok, reason)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One ingest at a time, so that commit order is publish order.
			tr := startRelay(t, nil, func(c *Config) { c.IngestConcurrency = 1 })
			sub := dial(t, tr.url)
			sub.send("REQ", "s", goFilter())
			sub.eose("s")
			k := newKey(t)
			evs := make([]*nostr.Event, tc.events)
			for i := range evs {
				content := fmt.Sprintf("%d %s", i, strings.Repeat("x", 1000))
				if tc.signed {
					evs[i] = k.note(t, content, nil)
					continue
				}
				// Unsigned: the store does not check, and signing is slow under -race.
				evs[i] = &nostr.Event{PubKey: k.pk, Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: content}
				evs[i].ID = evs[i].GetID()
			}
			tc.publish(t, tr, evs)
			for i, ev := range evs {
				require.Equal(t, ev.ID, sub.event("s").ID, "event %d", i)
			}
			require.Empty(t, sub.drain(), "an event came twice")
			require.Zero(t, testutil.ToFloat64(tr.m.slowDisconnects))
			requireCounter(t, tr.m.liveDeliveries, float64(tc.events))
		})
	}
}

// requireCounter waits until c reads want. A live delivery is counted once
// its fan-out has written to every subscriber, so a client may read an event
// before the count moves.
func requireCounter(t *testing.T, c prometheus.Counter, want float64) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, want, testutil.ToFloat64(c))
	}, waitTimeout, time.Millisecond)
}
