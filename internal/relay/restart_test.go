package relay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestRestartDrainAnswersThenClosesWith1012: with DrainSpread set, the
// shutdown stops accepting at once, answers the EVENT it read (whose batch is
// still being written) before its connection's close, and closes every
// connection with 1012 (service restart), spread over DrainSpread: not all at
// once.
func TestRestartDrainAnswersThenClosesWith1012(t *testing.T) {
	t.Parallel()
	const spread = 400 * time.Millisecond
	store := newFakeStore()
	release := make(chan struct{})
	store.ingestHook = func(_ context.Context, evs []*nostr.Event) ([]IngestResult, error) {
		<-release
		return store.store(evs), nil
	}
	tr := startRelay(t, store, func(c *Config) { c.DrainSpread = spread; c.ShutdownTimeout = 10 * time.Second })
	pub := dial(t, tr.url)
	idle := make([]*client, 7)
	for i := range idle {
		idle[i] = dial(t, tr.url)
	}
	ev := newKey(t).note(t, "in flight at the SIGTERM", nil)
	pub.send("EVENT", ev)
	require.Eventually(t, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.batches) == 1
	}, waitTimeout, time.Millisecond)

	all := append(idle, pub)
	closedAt := make([]time.Time, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Go(func() { <-c.gone; closedAt[i] = time.Now() })
	}
	stopped := make(chan error, 1)
	go func() { stopped <- tr.stop() }()
	// The listener closes at once, before anything is answered.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", tr.url[len("ws://"):])
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, waitTimeout, time.Millisecond)
	close(release)

	ok, reason := pub.ok(ev.ID)
	require.True(t, ok, reason, "the EVENT read before the close is answered")
	wg.Wait()
	for _, c := range all {
		var cerr *websocket.CloseError
		require.ErrorAs(t, c.err, &cerr)
		require.Equal(t, 1012, cerr.Code, "service restart")
	}
	require.NoError(t, <-stopped)
	sort.Slice(closedAt, func(i, j int) bool { return closedAt[i].Before(closedAt[j]) })
	// 8 connections at spread*i/8: the last closes at least 7/8 of the spread
	// after the first (timers fire late, never early).
	require.GreaterOrEqual(t, closedAt[len(closedAt)-1].Sub(closedAt[0]), spread*6/8,
		"the closes are spread, not at once")
}

// TestRestartDrainServesTheAcceptQueue: connections that completed their TCP
// handshake before the shutdown, but that the relay had not accepted yet or
// whose request head had not come, are served (upgraded, then closed with
// 1012), not reset or cut: with SO_REUSEPORT the kernel sends them to this
// process, and "no connection attempt refused" covers them.
func TestRestartDrainServesTheAcceptQueue(t *testing.T) {
	t.Parallel()
	r, err := New(func() Config {
		c := testConfig()
		c.DrainSpread = 100 * time.Millisecond
		c.ShutdownTimeout = 10 * time.Second
		return c
	}(), Deps{Store: newFakeStore(), Feed: newFakeStore()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	// Connected before the relay serves: they wait in the accept queue.
	const n = 20
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i], err = net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conns[i].Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the shutdown begins as Serve starts
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	for i, c := range conns {
		_, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
		require.NoError(t, err, "connection %d", i)
	}
	for i, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(waitTimeout)))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "connection %d: reset or cut instead of served", i)
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode, "connection %d", i)
		// Then its close frame (after the AUTH challenge): 0x88, length, 1012.
		for {
			head := make([]byte, 2)
			_, err = io.ReadFull(br, head)
			require.NoError(t, err, "connection %d", i)
			body := make([]byte, head[1]&0x7f) // (the relay's messages here are short)
			_, err = io.ReadFull(br, body)
			require.NoError(t, err, "connection %d", i)
			if head[0] == 0x88 {
				require.Equal(t, 1012, int(body[0])<<8|int(body[1]), "connection %d", i)
				break
			}
		}
	}
	require.NoError(t, <-done)
}

// TestREQWaitsForTheFollowersStart: a REQ that comes before the follower
// knows where it starts (a relay that has just started, as at a restart) is
// answered only after: an event stored between the REQ and the follower's
// start is in its stored part. Answered at once, the REQ's snapshot would
// lack the event and the follower, starting after it, would never fan it out.
func TestREQWaitsForTheFollowersStart(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	release := make(chan struct{})
	store.headHook = func(context.Context) { <-release }
	r, err := New(testConfig(), Deps{Store: store, Feed: store})
	require.NoError(t, err)
	tr := serveRelayWait(t, r, false)
	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.m.messages.WithLabelValues("REQ")) == 1
	}, waitTimeout, time.Millisecond)
	ev := newKey(t).note(t, "stored before the follower starts", nil)
	store.store([]*nostr.Event{ev})
	close(release)
	require.Equal(t, ev.ID, c.event("s").ID)
	c.eose("s")
}
