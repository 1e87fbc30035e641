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

// TestNewcomerServesReadsAndHoldsAcknowledgements: a relay started while
// another relay's sole renewal may still be trusted (here a crashed one's
// row, as a SIGKILL leaves it) serves at once, answering REQs and COUNTs
// (with the outbox head read: it is not sole), and holds only the
// acknowledgements of writes, an EVENT's OK and a NIP-86 change's answer,
// until a TTL after it read that row: held, not refused (OK true, HTTP 200).
// (The lease that was reverted twice accepted no connection until then, so
// that the REQ was answered after the OK.)
func TestNewcomerServesReadsAndHoldsAcknowledgements(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	const ttl = 3 * time.Second
	admin, alice := testkit.NewKey(t), testkit.NewKey(t)
	// The crashed sole relay's row: live, sole, renewed just now.
	t0 := time.Now()
	_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.writer_lease (holder, expires_at, sole_until)
		VALUES ('crashed', now() + make_interval(secs => $1), now() + make_interval(secs => $1))`, ttl.Seconds())
	require.NoError(t, err)
	cfg := nodetest.RelayConfig(t)
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, WriterLeaseTTL: ttl, Logger: logger,
		AdminPubkeys: []string{admin.PK}}, false)
	metrics := "http://" + cfg.MetricsListen + "/metrics"
	require.Zero(t, metric(t, metrics, "cn_relay_writer_lease_holds"), "the newcomer holds the lease at once")

	pub, req := testkit.Dial(t, "ws://"+cfg.Listen), testkit.Dial(t, "ws://"+cfg.Listen)
	ev := testkit.SignNow(t, alice.SK, 1, nostr.Tags{{"t", "lease"}}, "held")
	type ack struct {
		ok  testkit.OK
		err error
		at  time.Time
	}
	acked := make(chan ack, 1)
	go func() {
		got, err := pub.PublishCtx(ctx, ev)
		acked <- ack{got, err, time.Now()}
	}()
	// Reads are served during the wait.
	require.Empty(t, req.Query(map[string]any{"authors": []string{admin.PK}}))
	n, reason := req.Count("c", map[string]any{"kinds": []int{1}})
	require.Empty(t, reason)
	require.LessOrEqual(t, n, int64(1))
	readAt := time.Now()
	require.Less(t, readAt.Sub(t0), ttl, "the REQ was not answered during the wait")
	select {
	case a := <-acked:
		t.Fatalf("the EVENT was answered %+v (err %v) %v after the crashed relay's last renewal, before its trust ended", a.ok, a.err, a.at.Sub(t0))
	default:
	}
	// A NIP-86 change is held too, and answered.
	status, body := testkit.NIP86(t, "http://"+cfg.Listen, admin.SK, "banpubkey", testkit.NewKey(t).PK, "held")
	require.Equal(t, http.StatusOK, status, string(body))
	require.GreaterOrEqual(t, time.Since(t0), ttl, "a NIP-86 change was answered while the crashed relay may trust its memory")

	a := <-acked
	require.NoError(t, a.err)
	require.True(t, a.ok.OK, a.ok.Reason)
	require.GreaterOrEqual(t, a.at.Sub(t0), ttl, "the EVENT's OK came while the crashed relay may trust its memory")
	require.True(t, a.at.After(readAt))
	require.Len(t, req.Query(map[string]any{"ids": []string{ev.ID}}), 1)
	require.Equal(t, 1.0, metric(t, metrics, "cn_relay_writer_lease_holds"))
}
