package replica_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// TestHandoffFromDelayedReplica: a relay reads REQs from a replica that
// applies the primary's commits 1 s late, while events (and deletions of
// some of them) are published at a steady rate; 500 subscriptions opened at
// random times each get every matching event exactly once, the stored part
// newest first, then EOSE, then the live part in publication (seq) order,
// and never an event whose deletion was acknowledged before the REQ was sent.
func TestHandoffFromDelayedReplica(t *testing.T) {
	c := startCluster(t)
	rep := c.AddReplica(t, "delayed", "recovery_min_apply_delay = '1s'", "hot_standby_feedback = on")
	r := startRelay(t, c, 30*time.Second, rep)
	name := replicaLabel(rep)
	r.waitMetric(t, `cn_relay_replica_usable{replica="`+name+`"}`, func(v float64) bool { return v == 1 }, "the replica serves")

	const (
		conns       = 25
		subsPerConn = 20 // relay.DefaultConfig().MaxSubscriptions
		events      = 400
		every       = 20 * time.Millisecond // 50 events/s
	)
	topic := "handoff"
	filter := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {topic}}, Limit: 5000}

	// The publisher: events in order, each waiting for its OK (publication
	// order is outbox seq order); every 5th step deletes the event published
	// 3 steps earlier.
	sk := nostr.GeneratePrivateKey()
	pub := testkit.Dial(t, r.ws)
	var (
		mu        sync.Mutex
		published = map[string]int{}       // kind-1 event id -> publication index
		deletedAt = map[string]time.Time{} // kind-1 event id -> when its deletion was acknowledged
	)
	var order []string
	sentinel := make(chan string, 1)
	pubErr := make(chan error, 1)
	start := time.Now()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range events {
			<-tick.C
			ev := testkit.SignNow(t, sk, 1, nostr.Tags{{"t", topic}}, fmt.Sprintf("event %d", i))
			if err := publishOK(pub, ev); err != nil {
				pubErr <- err
				return
			}
			mu.Lock()
			published[ev.ID] = i
			order = append(order, ev.ID)
			target := ""
			if i%5 == 4 {
				target = order[i-3]
			}
			mu.Unlock()
			if target != "" {
				del := testkit.SignNow(t, sk, 5, nostr.Tags{{"e", target}}, "")
				if err := publishOK(pub, del); err != nil {
					pubErr <- err
					return
				}
				mu.Lock()
				deletedAt[target] = time.Now()
				mu.Unlock()
			}
			if i == events-1 {
				sentinel <- ev.ID
			}
		}
		pubErr <- nil
	}()

	// 500 subscriptions opened at random times while the publisher runs.
	span := time.Duration(events) * every
	clients := make([]*testkit.Client, conns)
	var wg sync.WaitGroup
	reqErr := make(chan error, conns)
	for i := range clients {
		clients[i] = testkit.Dial(t, r.ws)
		offsets := make([]time.Duration, subsPerConn)
		for j := range offsets {
			offsets[j] = time.Duration(rand.Int64N(int64(span)))
		}
		slices.Sort(offsets)
		wg.Add(1)
		go func(cl *testkit.Client) {
			defer wg.Done()
			for j, off := range offsets {
				select {
				case <-time.After(time.Until(start.Add(off))):
				case <-t.Context().Done():
					return
				}
				if err := req(cl, fmt.Sprintf("s%d", j), filter); err != nil {
					reqErr <- err
					return
				}
			}
		}(clients[i])
	}
	wg.Wait()
	close(reqErr)
	for err := range reqErr {
		require.NoError(t, err)
	}
	require.NoError(t, <-pubErr)
	last := <-sentinel

	// Live delivery is in seq order and the sentinel is the last event: once
	// a subscription has it, it has everything before it.
	has := func(s testkit.SubState, id string) bool {
		return slices.ContainsFunc(s.Stored, func(e *nostr.Event) bool { return e.ID == id }) ||
			slices.ContainsFunc(s.Live, func(e *nostr.Event) bool { return e.ID == id })
	}
	require.Eventually(t, func() bool {
		for _, cl := range clients {
			for j := range subsPerConn {
				if s := cl.Sub(fmt.Sprintf("s%d", j)).State(); !has(s, last) {
					require.Empty(t, s.Reason, "subscription closed")
					return false
				}
			}
		}
		return true
	}, 60*time.Second, 50*time.Millisecond, "every subscription got the last event")

	mu.Lock()
	defer mu.Unlock()
	for ci, cl := range clients {
		for j := range subsPerConn {
			id := fmt.Sprintf("s%d", j)
			s := cl.Sub(id).State()
			where := fmt.Sprintf("client %d sub %s (REQ at +%s)", ci, id, s.ReqAt.Sub(start).Round(time.Millisecond))
			require.True(t, s.EOSE, where)
			seen := map[string]bool{}
			for _, ev := range append(slices.Clone(s.Stored), s.Live...) {
				_, known := published[ev.ID]
				require.True(t, known, "%s: unknown event %s", where, ev.ID)
				require.False(t, seen[ev.ID], "%s: event %d twice", where, published[ev.ID])
				seen[ev.ID] = true
				if at, ok := deletedAt[ev.ID]; ok {
					require.False(t, at.Before(s.ReqAt), "%s: event %d was deleted %s before the REQ", where, published[ev.ID], s.ReqAt.Sub(at))
				}
			}
			for k := 1; k < len(s.Stored); k++ {
				a, b := s.Stored[k-1], s.Stored[k]
				require.True(t, a.CreatedAt > b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID < b.ID), "%s: stored part out of order", where)
			}
			maxStored := -1
			for _, ev := range s.Stored {
				maxStored = max(maxStored, published[ev.ID])
			}
			prev := maxStored
			for _, ev := range s.Live {
				require.Greater(t, published[ev.ID], prev, "%s: live part out of seq order, or older than the stored part", where)
				prev = published[ev.ID]
			}
			for evID, idx := range published {
				if _, deleted := deletedAt[evID]; !deleted {
					require.True(t, seen[evID], "%s: missed event %d", where, idx)
				}
			}
		}
	}
	// The replica served, and the handoff had work to do.
	require.Greater(t, r.metric(t, `cn_relay_read_seconds_count{op="req",pool="`+name+`"}`), float64(conns*subsPerConn)/2, "most REQs read the replica")
	require.Greater(t, r.metric(t, "cn_relay_handoff_caught_events_total"), 0.0, "events between the replica and the primary were caught up")
	require.Greater(t, r.metric(t, "cn_relay_handoff_dropped_events_total"), 0.0, "events the primary had deleted were left out")
}

// replicaLabel is the replica's name in metrics (replica.Name).
func replicaLabel(s interface{ URL(string) string }) string {
	u := s.URL(dbName)
	host := strings.TrimPrefix(u, "postgres://postgres@")
	return host[:strings.Index(host, "/")]
}
