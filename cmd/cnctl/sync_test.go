package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// syncNode is one node of the sync test: a database, its store and a relay
// serving it.
type syncNode struct {
	db  *pgtest.DB
	st  *store.Store
	url string
}

func newSyncNode(t testing.TB) *syncNode {
	t.Helper()
	db := pgtest.New(t)
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	st := store.New(db.Pool, w, protocol.DefaultTopicRules())
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	r, err := relay.New(cfg, relay.Deps{Store: st, Feed: relay.NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rdone := make(chan error, 1)
	go func() { rdone <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-rdone)
		<-wdone
	})
	return &syncNode{db: db, st: st, url: "ws://" + ln.Addr().String()}
}

func (n *syncNode) store(t *testing.T, evs ...*nostr.Event) {
	t.Helper()
	res, err := n.st.Ingest(context.Background(), evs)
	require.NoError(t, err)
	for _, v := range res {
		require.True(t, v.OK, v.Message)
	}
}

// visible is the sorted ids of every event a public reader sees.
func (n *syncNode) visible(t *testing.T) []string {
	t.Helper()
	items, err := n.st.SyncItems(context.Background(), nostr.Filter{}, protocol.Viewer{}, 1_000_000, nil)
	require.NoError(t, err)
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	slices.Sort(ids)
	return ids
}

// TestSyncCommandBetweenTwoNodes: two nodes (two databases) got different
// events, deletions included; after `cnctl sync --direction both` both show
// the same visible set, and a second run finds nothing to move.
func TestSyncCommandBetweenTwoNodes(t *testing.T) {
	t.Parallel()
	a, b := newSyncNode(t), newSyncNode(t)
	sk := nostr.GeneratePrivateKey()
	at := nostr.Timestamp(time.Now().Add(-time.Hour).Unix())
	note := func(content string, i int) *nostr.Event {
		ev := &nostr.Event{Kind: 1, CreatedAt: at + nostr.Timestamp(i%3), Tags: nostr.Tags{{"t", "go"}}, Content: fmt.Sprint(content, " ", i)}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	deletion := func(target *nostr.Event) *nostr.Event {
		ev := &nostr.Event{Kind: 5, CreatedAt: at + 10, Tags: nostr.Tags{{"e", target.ID}, {"t", "go"}}}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	var shared []*nostr.Event
	for i := range 40 {
		shared = append(shared, note("shared", i))
	}
	a.store(t, shared...)
	b.store(t, shared...)
	for i := range 30 {
		a.store(t, note("only a", i))
	}
	var onlyB []*nostr.Event
	for i := range 25 {
		onlyB = append(onlyB, note("only b", i))
	}
	b.store(t, onlyB...)
	b.store(t, deletion(onlyB[0]))  // b deleted one of its own
	a.store(t, deletion(shared[0])) // a deleted a shared one
	require.NotEqual(t, a.visible(t), b.visible(t))

	out, err := cnctl(t, "sync", "--database-url", a.db.URL, "--relay", b.url, "--direction", "both", "--progress-every", "1ns")
	require.NoError(t, err, out)
	// Progress lines (on stderr; every one is due at 1ns).
	require.Contains(t, out, "sync: downloaded 26 of 26\n", out)
	require.Contains(t, out, "sync: uploaded 31 of 31 (31 accepted)\n", out)
	// a has 30 notes and its deletion that b lacks; b has 24 notes, its
	// deletion and the shared note a deleted, which a refuses as deleted.
	require.Contains(t, out, ": 31 only here, 26 only there", out)
	require.Contains(t, out, "down: received 26, accepted 25, pending 0, duplicate 0, refused 1 (blocked: this event was deleted: 1)", out)
	require.Contains(t, out, "up: accepted 31, refused 0", out)
	require.Equal(t, a.visible(t), b.visible(t), out)
	require.Len(t, a.visible(t), 39+30+24+2) // the shared minus one, both sides' notes, both deletions

	out, err = cnctl(t, "sync", "--database-url", a.db.URL, "--relay", b.url, "--direction", "both")
	require.NoError(t, err, out)
	require.Contains(t, out, ": 0 only here, 0 only there", out)
}

// TestSyncCommandTimesOutWithoutNIP77: a relay that never answers NEG-OPEN
// ends the sync with an error after --timeout, not a hang.
func TestSyncCommandTimesOutWithoutNIP77(t *testing.T) {
	t.Parallel()
	a := newSyncNode(t)
	silent := newSilentRelay(t)
	start := time.Now()
	out, err := cnctl(t, "sync", "--database-url", a.db.URL, "--relay", silent, "--timeout", "300ms")
	require.Error(t, err)
	require.Contains(t, oneLine(err), "NIP-77", out)
	require.Less(t, time.Since(start), 10*time.Second)
}

// TestSyncCommandTimesOutWithChattyRelay: a relay that never answers NEG-OPEN
// but keeps sending other messages (AUTH challenges, every 20 ms) does not
// extend --timeout: the sync still ends with an error.
func TestSyncCommandTimesOutWithChattyRelay(t *testing.T) {
	t.Parallel()
	a := newSyncNode(t)
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if ws.WriteMessage(websocket.TextMessage, []byte(`["AUTH","challenge"]`)) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cnctlCtx(ctx, "sync", "--database-url", a.db.URL, "--relay", "ws"+strings.TrimPrefix(srv.URL, "http"), "--timeout", "300ms")
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		require.Contains(t, oneLine(err), "NIP-77")
	case <-time.After(20 * time.Second):
		t.Fatal("the sync is still waiting 20 s later with --timeout 300ms")
	}
}

// newSilentRelay serves WebSockets that read every message and answer none,
// as a relay without NIP-77 may; it returns its ws:// URL.
func newSilentRelay(t *testing.T) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// BenchmarkSyncDown: `cnctl sync` of CN_BENCH_SYNC_EVENTS events (default
// 20,000) that only the other node has, into an empty node: reconciliation,
// download over WebSocket and storing through the import path. It reports
// events/s of the whole command. Run with -benchtime 1x.
func BenchmarkSyncDown(b *testing.B) {
	n := 20_000
	if s := os.Getenv("CN_BENCH_SYNC_EVENTS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(b, err)
		n = v
	}
	for range b.N {
		b.StopTimer()
		a, other := newSyncNode(b), newSyncNode(b)
		sk := nostr.GeneratePrivateKey()
		at := nostr.Timestamp(time.Now().Add(-time.Hour).Unix())
		evs := make([]*nostr.Event, 0, 1000)
		for i := range n {
			ev := &nostr.Event{Kind: 1, CreatedAt: at + nostr.Timestamp(i%600), Tags: nostr.Tags{{"t", "go"}}, Content: fmt.Sprint("note ", i)}
			require.NoError(b, ev.Sign(sk))
			evs = append(evs, ev)
			if len(evs) == cap(evs) || i == n-1 {
				res, err := other.st.Ingest(context.Background(), evs)
				require.NoError(b, err)
				for _, v := range res {
					require.True(b, v.OK, v.Message)
				}
				evs = evs[:0]
			}
		}
		b.StartTimer()
		start := time.Now()
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"cnctl", "sync", "--database-url", a.db.URL, "--relay", other.url, "--timeout", "60s"}, &stdout, &stderr)
		took := time.Since(start)
		out := stdout.String() + stderr.String()
		require.NoError(b, err, out)
		require.Contains(b, out, fmt.Sprintf("accepted %d, pending 0, duplicate 0, refused 0", n), out)
		b.ReportMetric(float64(n)/took.Seconds(), "events/s")
	}
}
