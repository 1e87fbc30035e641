//go:build ops

// Package opscheck holds the checks that need tools other than Go: a real
// Prometheus evaluating every expression of ops/, and a headless Chromium
// watching the status page and driving the console (with axe-core). `make
// test-ops` installs the tools (Debian's prometheus and chromium) and runs
// them with -tags ops.
package opscheck

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	cnnode "github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/pgembed/pgembedtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/replica"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// node is a relay and an indexer serving on loopback, on a primary with one
// streaming replica that serves the relay's reads (as ops/runbook.md "Read
// replicas" builds it): every per-pool and per-replica panel has data.
type node struct {
	db       database // the primary
	relay    string   // host:port of the relay (WebSocket)
	metrics  string   // host:port of the relay's /metrics (its --metrics-listen)
	indexer  string   // host:port of the indexer (/v1/search, /metrics)
	replica  string   // the replica's pool name in the relay's metrics (host:port)
	sk       string
	ws       *testkit.Client
	searchOK int
}

// database is the node's database on the primary.
type database struct {
	URL  string
	Pool *pgxpool.Pool
}

// baseDir returns a 0755 directory the run-as account of pgembed can
// traverse (t.TempDir is 0700 and, as root, owned by root).
func baseDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "opscheck-*")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startCluster starts a primary with the node's schema and a streaming
// replica of it (pg_basebackup -R, ops/replica/standby.conf), both stopped at
// the end of the test; it returns the database's URL on each.
func startCluster(t *testing.T) (primaryURL, replicaURL string) {
	t.Helper()
	c := pgembedtest.Start(t, opsDB)
	return c.Primary.URL(opsDB), c.AddReplica(t, "replica").URL(opsDB)
}

const opsDB = "cn_opscheck"

func startNode(t *testing.T) *node {
	t.Helper()
	primaryURL, replicaURL := startCluster(t)
	pool, err := pgxpool.New(context.Background(), primaryURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	rpool, err := pgxpool.New(context.Background(), replicaURL)
	require.NoError(t, err)
	db := database{URL: primaryURL, Pool: pool}
	ctx, cancel := context.WithCancel(context.Background())
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	// The relay hosts NIP-29 groups (a node key), so that the group panels
	// have data: traffic posts to one.
	st := store.New(db.Pool, w, protocol.DefaultTopicRules())
	nodeKey := testkit.HostGroups(t, st, testkit.GroupOpts{})
	reg.MustRegister(&groups.Collector{Q: db.Pool})
	cfg.Info.Self, cfg.Groups = nodeKey.PubKey, true
	reads := replica.New(st.Reader, db.Pool,
		[]replica.Replica{{Name: replica.Name(replicaURL), Pool: rpool}},
		replica.Config{MaxLag: cnnode.DefaultMaxReplicaLag, CheckInterval: cnnode.DefaultReplicaCheckInterval, Registerer: reg})
	sdone := make(chan error, 1)
	go func() { sdone <- reads.Run(ctx) }()
	r, err := relay.New(cfg, relay.WithEventCache(cfg, relay.Deps{Store: st, Reads: reads,
		Feed: relay.NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg}))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rdone := make(chan error, 1)
	go func() { rdone <- r.Serve(ctx, ln) }()
	ready := make(chan string, 1)
	idone := make(chan error, 1)
	go func() {
		idone <- cnnode.Indexer(ctx, cnnode.IndexerOptions{DatabaseURL: db.URL, Listen: "127.0.0.1:0", Ready: func(a string) { ready <- a }})
	}()
	metrics := httptest.NewServer(r.MetricsHandler())
	t.Cleanup(metrics.Close)
	n := &node{db: db, relay: ln.Addr().String(), metrics: metrics.Listener.Addr().String(), replica: replica.Name(replicaURL),
		sk: nostr.GeneratePrivateKey()}
	select {
	case n.indexer = <-ready:
	case err := <-idone:
		t.Fatalf("indexer: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("indexer did not start")
	}
	n.ws = testkit.Dial(t, "ws://"+n.relay)
	t.Cleanup(func() {
		n.ws.Close()
		cancel()
		<-rdone
		<-idone
		<-wdone
		<-sdone
		reads.Close()
	})
	return n
}

// traffic publishes one note, makes one REQ, one COUNT and one search: the daemons then
// have a sample for every metric the dashboards and alerts use.
func (n *node) traffic(t *testing.T, i int) {
	t.Helper()
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "ops"}}, Content: "hello operators " + time.Now().String()}
	require.NoError(t, ev.Sign(n.sk))
	n.ws.Publish(ev)
	// A group event: the first creates the group "ops", the others post to it.
	gev := &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", "ops"}}, Content: "hello group " + time.Now().String()}
	if i == 0 {
		gev.Kind, gev.Content = 9007, ""
	}
	require.NoError(t, gev.Sign(n.sk))
	n.ws.Publish(gev)
	// The event cache answers the REQ; the COUNT (NIP-45), which the cache
	// never answers, reads the database, where the replica serves it.
	n.ws.Req("s", map[string]any{"#t": []string{"ops"}, "limit": 5})
	n.ws.Count("c", map[string]any{"#t": []string{"ops"}})
	resp, err := http.Get("http://" + n.indexer + "/v1/search?q=hello&limit=5")
	require.NoError(t, err)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		n.searchOK++
	}
	// An invalid event too, so that a refusal reason has a rate.
	if i%3 == 0 {
		bad := *ev
		bad.Content = "tampered"
		require.NoError(t, n.ws.Send("EVENT", bad))
	}
}

// promQuery evaluates expr at now through Prometheus's HTTP API.
func promQuery(t *testing.T, prom, expr string) (status string, errMsg string, results int) {
	t.Helper()
	resp, err := http.Get("http://" + prom + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return "", err.Error(), 0 // not listening yet
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		return "", "prometheus is starting (HTTP 503)", 0 // not ready yet: its answer is plain text
	}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Status, body.Error, len(body.Data.Result)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
