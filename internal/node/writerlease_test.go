package node_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// metric is the sum of the relay's samples of the metric named name (its
// labels ignored).
func metric(t *testing.T, metricsURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			v, err := strconv.ParseFloat(f[1], 64)
			require.NoError(t, err, line)
			sum += v
		}
	}
	require.NoError(t, sc.Err())
	return sum
}

// awaitMetric polls the relay's metric until it equals want, for 20 s at
// most.
func awaitMetric(t *testing.T, metricsURL, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for metric(t, metricsURL, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s is not %v within 20 s", name, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSecondRelayKeepsEveryAcknowledgedEventInREQs: a relay alone answers
// REQs from its event cache without reading the outbox head (the writer
// lease: cn_relay_writer_lease_sole); a second relay started mid-run, while a
// client publishes to the first, takes that away before it acknowledges
// anything, so that every event either relay acknowledged is in every later
// REQ, on either relay, the ones the first answers from memory included.
func TestSecondRelayKeepsEveryAcknowledgedEventInREQs(t *testing.T) {
	db := pgtest.New(t)
	logger := slog.New(slog.DiscardHandler)
	ttl := 2 * time.Second // (a newcomer waits out at most this)
	cfgA, cfgB := nodetest.RelayConfig(t), nodetest.RelayConfig(t)
	metricsA, metricsB := "http://"+cfgA.MetricsListen+"/metrics", "http://"+cfgB.MetricsListen+"/metrics"
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfgA, WriterLeaseTTL: ttl, Logger: logger}, false)
	awaitMetric(t, metricsA, "cn_relay_writer_lease_sole", 1)

	alice, bob := testkit.NewKey(t), testkit.NewKey(t)
	n := 0
	note := func(sk string) *nostr.Event {
		n++
		return testkit.SignNow(t, sk, 1, nostr.Tags{{"t", "lease"}}, fmt.Sprint("note ", n))
	}
	// publish has pub acknowledge a new note and req answer a REQ for it.
	publish := func(pub, req *testkit.Client, sk, what string) {
		t.Helper()
		ev := note(sk)
		ok, reason := pub.Publish(ev)
		require.True(t, ok, reason)
		require.Len(t, req.Query(map[string]any{"ids": []string{ev.ID}}), 1, "%s: an acknowledged event is missing from a later REQ", what)
	}

	// The first relay alone: its REQs are answered from memory.
	pubA, reqA := testkit.Dial(t, "ws://"+cfgA.Listen), testkit.Dial(t, "ws://"+cfgA.Listen)
	for range 50 {
		publish(pubA, reqA, alice.SK, "one relay")
	}
	require.Positive(t, metric(t, metricsA, `cn_relay_cache_answers_total{result="hit"}`), "the relay alone answered no REQ from memory")
	require.Equal(t, 1.0, metric(t, metricsA, "cn_relay_writer_lease_sole"))

	// The second relay starts while a client publishes to the first.
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var acked []string // by the first relay, while the second starts
	bg := testkit.Dial(t, "ws://"+cfgA.Listen)
	bgDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			ev := testkit.SignNow(t, bob.SK, 1, nostr.Tags{{"t", "lease"}}, fmt.Sprint("background ", i))
			got, err := bg.PublishCtx(ctx, ev)
			if ctx.Err() != nil {
				bgDone <- nil
				return
			}
			if err != nil || !got.OK {
				bgDone <- fmt.Errorf("background publish: %v %+v", err, got)
				return
			}
			mu.Lock()
			acked = append(acked, ev.ID)
			mu.Unlock()
		}
	}()
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfgB, WriterLeaseTTL: ttl, Logger: logger}, false)
	pubB, reqB := testkit.Dial(t, "ws://"+cfgB.Listen), testkit.Dial(t, "ws://"+cfgB.Listen)

	// Publish to one, REQ on the other, both ways, the first answering from
	// memory.
	hits := metric(t, metricsA, `cn_relay_cache_answers_total{result="hit"}`)
	for range 200 {
		publish(pubB, reqA, alice.SK, "published to the second relay, REQ on the first")
		publish(pubA, reqB, alice.SK, "published to the first relay, REQ on the second")
	}
	cancel()
	require.NoError(t, <-bgDone)
	require.Greater(t, metric(t, metricsA, `cn_relay_cache_answers_total{result="hit"}`), hits+100,
		"the first relay answered (almost) no REQ from memory with two relays running: the test proves nothing")

	// Every event the first acknowledged while the second started is in a
	// REQ on either.
	mu.Lock()
	ids := acked
	mu.Unlock()
	require.NotEmpty(t, ids)
	for _, c := range []*testkit.Client{reqA, reqB} {
		for i := 0; i < len(ids); i += 100 {
			chunk := ids[i:min(i+100, len(ids))]
			require.Len(t, c.Query(map[string]any{"ids": chunk}), len(chunk), "events acknowledged while the second relay started are missing")
		}
	}
	// Neither is sole now.
	require.Zero(t, metric(t, metricsA, "cn_relay_writer_lease_sole"))
	require.Zero(t, metric(t, metricsB, "cn_relay_writer_lease_sole"))
}
