//go:build ops

// Package opscheck holds the checks that need tools other than Go: a real
// Prometheus evaluating every expression of ops/, and a headless Chromium
// watching the status page. `make test-ops` installs the tools (Debian's
// prometheus and chromium) and runs them with -tags ops.
package opscheck

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/require"

	cnnode "github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// node is a relay and an indexer serving on loopback, on a test database.
type node struct {
	db       *pgtest.DB
	relay    string // host:port of the relay (WebSocket)
	metrics  string // host:port of the relay's /metrics (its --metrics-listen)
	indexer  string // host:port of the indexer (/v1/search, /metrics)
	sk       string
	ws       *websocket.Conn
	searchOK int
}

func startNode(t *testing.T) *node {
	t.Helper()
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	r, err := relay.New(cfg, relay.Deps{Store: store.New(db.Pool, w, protocol.DefaultTopicRules()),
		Feed: relay.NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg})
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
	n := &node{db: db, relay: ln.Addr().String(), metrics: metrics.Listener.Addr().String(), sk: nostr.GeneratePrivateKey()}
	select {
	case n.indexer = <-ready:
	case err := <-idone:
		t.Fatalf("indexer: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("indexer did not start")
	}
	n.ws, _, err = websocket.DefaultDialer.Dial("ws://"+n.relay, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		n.ws.Close()
		cancel()
		<-rdone
		<-idone
		<-wdone
	})
	return n
}

// traffic publishes one note, makes one REQ and one search: the daemons then
// have a sample for every metric the dashboards and alerts use.
func (n *node) traffic(t *testing.T, i int) {
	t.Helper()
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "ops"}}, Content: "hello operators " + time.Now().String()}
	require.NoError(t, ev.Sign(n.sk))
	require.NoError(t, n.ws.WriteJSON([]any{"EVENT", ev}))
	require.NoError(t, n.ws.WriteJSON([]any{"REQ", "s", map[string]any{"#t": []string{"ops"}, "limit": 5}}))
	require.NoError(t, n.ws.SetReadDeadline(time.Now().Add(10*time.Second)))
	for gotOK, gotEOSE := false, false; !gotOK || !gotEOSE; {
		var msg []json.RawMessage
		require.NoError(t, n.ws.ReadJSON(&msg))
		switch string(msg[0]) {
		case `"OK"`:
			gotOK = true
		case `"EOSE"`:
			gotEOSE = true
		}
	}
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
		require.NoError(t, n.ws.WriteJSON([]any{"EVENT", bad}))
	}
}

// freePort returns a loopback address nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// promQuery evaluates expr at now through Prometheus's HTTP API.
func promQuery(t *testing.T, prom, expr string) (status string, errMsg string, results int) {
	t.Helper()
	resp, err := http.Get("http://" + prom + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return "", err.Error(), 0 // not listening yet
	}
	defer resp.Body.Close()
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
