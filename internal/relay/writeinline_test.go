package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// TestInlineWriteHandsOver: the live fan-out's inline writes (kickInline)
// never wait for a client that does not read. Frames the socket does not take
// whole are finished by a writer goroutine before anything else, so a client
// that then reads gets every message whole and in order, and the bytes go back
// to the connection's budget once written. Both socket buffers are made small
// so that the fan-out fills them.
func TestInlineWriteHandsOver(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.SendQueueSize, cfg.SendQueueBytes = 1000, 4<<20
	store := newFakeStore()
	r, err := New(cfg, Deps{Store: store, Feed: store})
	require.NoError(t, err)
	upgraded := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ws, err := r.upgrader.Upgrade(w, req, nil)
		if err == nil {
			require.NoError(t, ws.UnderlyingConn().(*net.TCPConn).SetWriteBuffer(16<<10))
			upgraded <- ws
		}
	}))
	defer srv.Close()
	dialer := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = nc.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return nc, err
	}}
	cl, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer cl.Close()
	c := newConn(r, <-upgraded, "127.0.0.1", "127.0.0.1")
	ended := make(chan struct{})
	c.start(func(*conn) { close(ended) })
	// The writer start ran sends the AUTH challenge; once it has ended, the
	// fan-out below writes inline.
	_, got, err := cl.ReadMessage()
	require.NoError(t, err)
	require.Contains(t, string(got), `["AUTH",`)
	for deadline := time.Now().Add(waitTimeout); c.w.Active(); time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the first writer did not end")
	}

	// 400 events of ~1 KiB: far more than the two buffers hold.
	const n = 400
	body := func(i int) []byte { return fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 1000)) }
	fanned := make(chan struct{})
	go func() {
		defer close(fanned)
		for i := range n {
			if !c.push(wsconn.Msg{Head: eventHead("s"), Body: body(i)}) {
				return
			}
			c.kickInline()
		}
	}()
	select {
	case <-fanned:
	case <-time.After(waitTimeout):
		t.Fatal("the fan-out waited for a client that does not read")
	}
	require.Positive(t, testutil.ToFloat64(r.m.liveWriteBlocked), "the socket refused some frames")
	require.False(t, c.closing(), "the connection is not closing")

	for i := range n {
		typ, got, err := cl.ReadMessage()
		require.NoError(t, err, "message %d", i)
		require.Equal(t, websocket.TextMessage, typ)
		require.Equal(t, string(wsconn.Msg{Head: eventHead("s"), Body: body(i)}.Bytes()), string(got), "message %d", i)
	}
	// Every byte written goes back to the budget (after the client had it:
	// polled, not slept).
	deadline := time.Now().Add(waitTimeout)
	for c.mem.Held() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Zero(t, c.mem.Held(), "bytes still taken from the connection's budget")
	require.NoError(t, cl.Close())
	select {
	case <-ended:
	case <-time.After(waitTimeout):
		t.Fatal("the connection did not end")
	}
	require.Zero(t, r.mem.Held(), "bytes still taken from the relay's budget")
}

// TestLiveFanoutShares: a fan-out large enough to be split among goroutines
// (fanoutShare) still delivers every note to every subscription once, in
// the order the notes were committed, two subscriptions of one connection
// alike.
func TestLiveFanoutShares(t *testing.T) {
	t.Parallel()
	const conns, notes = 300, 20
	require.GreaterOrEqual(t, 2*conns, 2*fanoutShare, "the fan-out is split")
	tr := startRelay(t, nil, func(c *Config) { c.MaxConnsPerIP = conns })
	clients := make([]*client, conns)
	for i := range clients {
		c := dial(t, tr.url)
		c.send("REQ", "a", goFilter())
		c.send("REQ", "b", goFilter())
		eosed := map[string]bool{}
		for range 2 { // (the two queries run concurrently)
			msg := c.expect("EOSE")
			eosed[str(t, msg[1])] = true
		}
		require.Equal(t, map[string]bool{"a": true, "b": true}, eosed)
		clients[i] = c
	}
	k := newKey(t)
	evs := make([]*nostr.Event, notes)
	for i := range evs {
		evs[i] = &nostr.Event{PubKey: k.pk, Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: fmt.Sprint(i)}
		evs[i].ID = evs[i].GetID()
	}
	tr.store.store(evs) // (one commit, seq in this order)
	for i, c := range clients {
		got := map[string][]string{}
		for range 2 * notes {
			msg := c.next()
			require.Equal(t, `"EVENT"`, string(msg[0]), "client %d", i)
			var ev nostr.Event
			require.NoError(t, json.Unmarshal(msg[2], &ev))
			got[str(t, msg[1])] = append(got[str(t, msg[1])], ev.ID)
		}
		for _, sub := range []string{"a", "b"} {
			for j, id := range got[sub] {
				require.Equal(t, evs[j].ID, id, "client %d, subscription %s, note %d", i, sub, j)
			}
			require.Len(t, got[sub], notes, "client %d, subscription %s", i, sub)
		}
		require.Empty(t, c.drain(), "client %d: more than each note once", i)
	}
}
