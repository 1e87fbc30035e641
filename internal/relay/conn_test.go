package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestTooSlowGoodbye: a message that would take the send queue past either of its
// limits makes the client too slow. What is queued is dropped; the client gets
// NOTICE "error: too slow, disconnecting" and a close frame 1008 "too slow".
func TestTooSlowGoodbye(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		msgs       int // SendQueueSize
		bytes      int // SendQueueBytes
		size       int // of each message
		wantQueued int
	}{
		{"messages", 10, 4 << 20, 100, 10},
		{"bytes", 1000, 131072, 10000, 13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.SendQueueSize, cfg.SendQueueBytes = tc.msgs, tc.bytes
			store := newFakeStore()
			r, err := New(cfg, Deps{Store: store, Feed: store})
			require.NoError(t, err)
			upgraded := make(chan *websocket.Conn, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				ws, err := r.upgrader.Upgrade(w, req, nil)
				if err == nil {
					upgraded <- ws
				}
			}))
			defer srv.Close()
			cl := dial(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
			c := newConn(r, <-upgraded, "127.0.0.1", "127.0.0.1")

			// The writer is not running yet, so nothing leaves the queue.
			msg := noticeMsg("")
			msg = noticeMsg(strings.Repeat("x", tc.size-len(msg)))
			require.Len(t, msg, tc.size)
			queued := 0
			for c.enqueue(msg) {
				queued++
			}
			require.Equal(t, tc.wantQueued, queued)
			require.Equal(t, 1.0, testutil.ToFloat64(r.m.slowDisconnects))
			require.False(t, c.enqueue(msg), "queued after the connection started closing")

			served := make(chan struct{})
			go func() { defer close(served); c.serve() }()
			notice := cl.expect("NOTICE")
			require.Equal(t, "error: too slow, disconnecting", str(t, notice[1]))
			<-cl.gone
			var cerr *websocket.CloseError
			require.ErrorAs(t, cl.err, &cerr)
			require.Equal(t, websocket.ClosePolicyViolation, cerr.Code)
			require.Equal(t, "too slow", cerr.Text)
			select {
			case <-served:
			case <-time.After(waitTimeout):
				t.Fatal("the connection did not end")
			}
		})
	}
}

// TestPingGetsPong: a client's ping is answered with a pong carrying its
// payload (by the writer, the socket's only writer), and the connection keeps
// serving.
func TestPingGetsPong(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	ws, _, err := websocket.DefaultDialer.Dial(tr.url, nil)
	require.NoError(t, err)
	defer ws.Close()
	pongs := make(chan string, 1)
	ws.SetPongHandler(func(data string) error {
		pongs <- data
		return nil
	})
	require.NoError(t, ws.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second)))
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","s",{"limit":1}]`)))
	// Reading the EOSE runs the pong handler for a pong that came before it.
	for {
		_, msg, err := ws.ReadMessage()
		require.NoError(t, err)
		if strings.HasPrefix(string(msg), `["EOSE"`) {
			break
		}
	}
	select {
	case got := <-pongs:
		require.Equal(t, "are you there", got)
	default:
		// The pong may follow the EOSE: read on until it comes.
		require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
		select {
		case got := <-pongs:
			require.Equal(t, "are you there", got)
		case <-time.After(10 * time.Second):
			t.Fatal("no pong")
		}
	}
}

// TestServerPings: the relay pings a client that only listens every
// PingInterval (from its pinger: no writer runs on an idle connection), and
// the client's pongs keep it connected past ReadTimeout.
func TestServerPings(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.PingInterval, c.ReadTimeout = 100*time.Millisecond, time.Second })
	ws, _, err := websocket.DefaultDialer.Dial(tr.url, nil)
	require.NoError(t, err)
	defer ws.Close()
	pings := make(chan struct{}, 100)
	ws.SetPingHandler(func(data string) error {
		pings <- struct{}{}
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	read := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				read <- err
				return
			}
		}
	}()
	start := time.Now()
	deadline := time.After(waitTimeout)
	for got := 0; got < 15; got++ {
		select {
		case <-pings:
		case err := <-read:
			t.Fatalf("connection ended after %d pings: %v", got, err)
		case <-deadline:
			t.Fatalf("%d pings in %s", got, waitTimeout)
		}
	}
	require.Greater(t, time.Since(start), time.Second, "15 pings at 100 ms came faster than their interval")
	select {
	case err := <-read:
		t.Fatalf("connection ended: %v", err)
	default:
	}
}

// TestQueriesPerConnBounded: a connection runs at most MaxQueriesPerConn
// queries at once; a further REQ waits for a slot (the client's later messages
// with it) and runs as soon as one frees.
func TestQueriesPerConnBounded(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	var running, peak atomic.Int32
	entered := make(chan string, 8)
	release := make(chan struct{}, 8)
	store.queryHook = func(ctx context.Context) error {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		entered <- "query"
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	tr := startRelay(t, store, func(c *Config) { c.MaxQueriesPerConn = 2 })
	c := dial(t, tr.url)
	for _, id := range []string{"a", "b", "c"} {
		c.send("REQ", id, goFilter())
	}
	<-entered
	<-entered
	require.Equal(t, int32(2), running.Load(), "two queries run")
	release <- struct{}{} // one ends: the third takes its slot
	<-entered
	release <- struct{}{}
	release <- struct{}{}
	got := map[string]bool{}
	for range 3 {
		msg := c.expect("EOSE")
		got[str(t, msg[1])] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, got)
	require.Equal(t, int32(2), peak.Load(), "never more than MaxQueriesPerConn at once")
}

// TestConnContext: the connection's context and the children made with
// childContext (or with the context package) are cancelled when the
// connection starts closing, and a child cancelled before leaves nothing
// registered. The done channel is made only when someone asks for it, and is
// closed whether asked for before the close or after.
func TestConnContext(t *testing.T) {
	t.Parallel()
	registered := func(c *conn) int {
		c.afterMu.Lock()
		defer c.afterMu.Unlock()
		n := 0
		for a := c.afters; a != nil; a = a.next {
			n++
		}
		return n
	}
	c := &conn{}
	c.w.Init(nil, 1, &c.mem) // (as newConnOn: closeWith's kick starts no writer)
	ctx := c.context()
	a, cancelA := c.childContext(0)
	defer cancelA()
	b, cancelB := c.childContext(time.Hour)
	require.Equal(t, 2, registered(c))
	cancelB()
	require.ErrorIs(t, b.Err(), context.Canceled)
	require.Equal(t, 1, registered(c), "a cancelled child is unregistered")
	require.Nil(t, c.more.Load(), "no one asked for the done channel: the connection has none")

	done := ctx.Done()
	require.NotNil(t, c.more.Load())
	std, cancelStd := context.WithCancel(ctx)
	defer cancelStd()
	require.NoError(t, ctx.Err())
	require.NoError(t, a.Err())

	require.True(t, c.closeWith(closePeerGone))
	require.False(t, c.closeWith(closeSlow), "the first mode wins")
	<-done
	<-a.Done()
	<-std.Done()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	require.Zero(t, registered(c))
	late, cancelLate := c.childContext(0)
	defer cancelLate()
	<-late.Done()

	// Asked for only after the close: closed already.
	c2 := &conn{}
	c2.w.Init(nil, 1, &c2.mem)
	c2.closeWith(closePeerGone)
	<-c2.context().Done()

	// Asked for while the close runs: closed once (a second close panics).
	for range 200 {
		c3 := &conn{}
		c3.w.Init(nil, 1, &c3.mem)
		got := make(chan (<-chan struct{}))
		go func() { got <- c3.context().Done() }()
		c3.closeWith(closeShutdown)
		<-<-got
	}
}
