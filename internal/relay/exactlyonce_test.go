package relay

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// TestSubscriptionsGetEachEventExactlyOnce: 200 subscriptions {"#t":[T]},
// opened at random moments on 20 connections while 400 events of topic T are
// published at about 100 per second through the Postgres store, each receive
// every event exactly once, before or after their EOSE: none twice (the stored
// part and the live part overlap only in seq, which settles it) and none
// missing. The events are published through the subscribers' relay, and
// through another relay process on the same database: the stored part then
// comes from the event cache without waiting for those writes (it has not
// committed them), and only the follower's order (a read of rows is applied to
// the cache before any of its events is fanned out) keeps the promise.
func TestSubscriptionsGetEachEventExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("published on another relay=%v", other), func(t *testing.T) {
			t.Parallel()
			testExactlyOnce(t, other)
		})
	}
}

func testExactlyOnce(t *testing.T, otherPublisher bool) {
	const (
		events   = 400
		subs     = 200
		conns    = 20
		interval = 10 * time.Millisecond // about 100 events/s
	)
	db := pgtest.New(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	r, err := New(testConfig(), WithEventCache(testConfig(), Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()}))
	require.NoError(t, err)
	tr := serveRelay(t, r)
	topic := fmt.Sprintf("once%d", rand.Int64())
	filter := map[string]any{"#t": []string{topic}, "limit": 500}
	// Odd subscriptions send a second filter matching the same events: a lone
	// filter is read in one statement with the outbox head, several in a
	// transaction (store.Reader.QuerySnapshot); both must hold.
	second := map[string]any{"#t": []string{topic}, "kinds": []int{1}, "limit": 500}

	// What each subscription received, in order; "EOSE" marks its end of stored events.
	type subLog struct {
		mu       sync.Mutex
		got      []string
		sentinel chan struct{} // closed when the last event (the sentinel) arrives
	}
	logs := make([]*subLog, subs)
	for i := range logs {
		logs[i] = &subLog{sentinel: make(chan struct{})}
	}
	var sentinelID string
	var sentinelMu sync.Mutex
	clients := make([]*client, conns)
	for c := range clients {
		clients[c] = dial(t, tr.url)
		go func(cl *client) {
			for {
				var msg []json.RawMessage
				select {
				case msg = <-cl.msgs:
				case <-cl.gone:
					return
				}
				if len(msg) < 2 {
					continue
				}
				var typ, sid string
				_ = json.Unmarshal(msg[0], &typ)
				_ = json.Unmarshal(msg[1], &sid)
				var i int
				if _, err := fmt.Sscanf(sid, "s%d", &i); err != nil || i < 0 || i >= subs {
					continue
				}
				l := logs[i]
				switch typ {
				case "EOSE":
					l.mu.Lock()
					l.got = append(l.got, "EOSE")
					l.mu.Unlock()
				case "EVENT":
					var ev nostr.Event
					if json.Unmarshal(msg[2], &ev) != nil {
						continue
					}
					l.mu.Lock()
					l.got = append(l.got, ev.ID)
					l.mu.Unlock()
					sentinelMu.Lock()
					if ev.ID == sentinelID {
						select {
						case <-l.sentinel: // a second copy: counted below
						default:
							close(l.sentinel)
						}
					}
					sentinelMu.Unlock()
				}
			}
		}(clients[c])
	}

	// Subscriptions open at random moments while the events are published.
	window := time.Duration(events) * interval
	at := make([]time.Duration, subs)
	for i := range at {
		at[i] = time.Duration(rand.Int64N(int64(window)))
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	start := time.Now()
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		for i, d := range at {
			<-time.After(time.Until(start.Add(d)))
			if i%2 == 1 {
				clients[i%conns].send("REQ", fmt.Sprintf("s%d", i), filter, second)
			} else {
				clients[i%conns].send("REQ", fmt.Sprintf("s%d", i), filter)
			}
		}
	}()

	pubURL := tr.url
	if otherPublisher {
		cfg := testConfig()
		cfg.CacheBytes = 0
		st2 := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
		r2, err := New(cfg, WithEventCache(cfg, Deps{Store: st2, Feed: NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()}))
		require.NoError(t, err)
		pubURL = serveRelay(t, r2).url
	}
	pub := dial(t, pubURL)
	k := newKey(t)
	var published []string
	tick := time.NewTicker(interval)
	for n := range events {
		<-tick.C
		ev := k.note(t, fmt.Sprintf("note %d", n), func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", topic}} })
		published = append(published, ev.ID)
		pub.send("EVENT", ev)
	}
	tick.Stop()
	for range events {
		msg := pub.expect("OK")
		require.Equal(t, "true", string(msg[2]), string(msg[3]))
	}
	<-opened

	// A last event: each subscription receives it after everything sent before
	// it (live delivery is in seq order, after the stored part).
	last := k.note(t, "sentinel", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", topic}} })
	sentinelMu.Lock()
	sentinelID = last.ID
	sentinelMu.Unlock()
	ok, reason := pub.publish(last)
	require.True(t, ok, reason)
	published = append(published, last.ID)
	for i, l := range logs {
		select {
		case <-l.sentinel:
		case <-time.After(10 * time.Second):
			t.Fatalf("subscription s%d did not receive the last event", i)
		}
	}

	var dupSubs, missSubs []string
	dupEvents, missEvents := 0, 0
	for i, l := range logs {
		l.mu.Lock()
		count := map[string]int{}
		eose := 0
		for _, id := range l.got {
			if id == "EOSE" {
				eose++
				continue
			}
			count[id]++
		}
		l.mu.Unlock()
		require.Equal(t, 1, eose, "s%d: one EOSE", i)
		var dups, missing int
		for _, id := range published {
			switch n := count[id]; {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
			}
			delete(count, id)
		}
		require.Empty(t, count, "s%d received events that were not published", i)
		if dups > 0 {
			dupSubs = append(dupSubs, fmt.Sprintf("s%d:%d", i, dups))
			dupEvents += dups
		}
		if missing > 0 {
			missSubs = append(missSubs, fmt.Sprintf("s%d:%d", i, missing))
			missEvents += missing
		}
	}
	require.Empty(t, dupSubs, "%d events reached a subscription twice (subscription:count): %s", dupEvents, strings.Join(dupSubs, " "))
	require.Empty(t, missSubs, "%d events never reached a subscription: %s", missEvents, strings.Join(missSubs, " "))
}
