package wsconn

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// eventHead is the relay's `["EVENT",<quoted id>,` for a plain id.
func eventHead(sub string) []byte { return []byte(`["EVENT",` + strconv.Quote(sub) + `,`) }

// TestWriteBatchFrames: the writer's frames of each length class (7-bit,
// 16-bit, 64-bit), plain and EVENT messages (head, shared body, "]") in any
// succession, reach a stock WebSocket client as the messages written, in order:
// from a large batch (a vectored write) and from a small one (copied into one
// buffer, writeCopyBytes).
func TestWriteBatchFrames(t *testing.T) {
	t.Parallel()
	ev := func(sub string, body []byte) Msg { return Msg{Head: eventHead(sub), Body: body} }
	msgs := []Msg{ev("s", []byte("{}")), plainMsg([]byte("a")), plainMsg(bytes.Repeat([]byte("b"), 125)),
		ev("s", bytes.Repeat([]byte("1"), 111)), ev("t", bytes.Repeat([]byte("2"), 112)), // 125 and 126 bytes
		plainMsg(bytes.Repeat([]byte("c"), 126)), plainMsg(bytes.Repeat([]byte("d"), 65535)),
		ev("sub", bytes.Repeat([]byte("3"), 65536)), plainMsg(bytes.Repeat([]byte("e"), 65536)), plainMsg([]byte("f")),
		ev("last", []byte(`{"id":"x"}`))}
	require.Equal(t, 125, msgs[3].Size())
	require.Equal(t, 126, msgs[4].Size())
	small := []Msg{ev("s", []byte("{}")), ev("t", bytes.Repeat([]byte("2"), 112)), plainMsg([]byte("a")),
		ev("u", bytes.Repeat([]byte("4"), 200)), plainMsg(bytes.Repeat([]byte("c"), 126)), ev("last", []byte(`{"id":"y"}`))}
	n := 0
	for _, m := range small {
		n += maxServerFrameHeader + m.Size()
	}
	require.LessOrEqual(t, n, writeCopyBytes, "the small batch is copied")
	written := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			written <- err
			return
		}
		c := &Writer{ws: New(ws.NetConn())}
		if err := c.writeBatch(msgs, time.Now().Add(10*time.Second)); err != nil {
			written <- err
			return
		}
		written <- c.writeBatch(small, time.Now().Add(10*time.Second))
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer ws.Close()
	for i, want := range append(slices.Clone(msgs), small...) {
		typ, got, err := ws.ReadMessage()
		require.NoError(t, err, "message %d", i)
		require.Equal(t, websocket.TextMessage, typ)
		require.Equal(t, want.Bytes(), got, "message %d", i)
	}
	require.NoError(t, <-written)
}

// TestBatchDeadline: the writer moves the socket's write deadline only when
// the one set is a quarter of WriteTimeout short of now + WriteTimeout, and
// always after a control write (which sets its own).
func TestBatchDeadline(t *testing.T) {
	const wt = 8 * time.Second
	c := &Writer{}
	before := time.Now()
	first := c.batchDeadline(wt)
	require.False(t, first.IsZero(), "the first batch sets a deadline")
	require.WithinDuration(t, before.Add(8*time.Second), first, time.Second)
	require.True(t, c.batchDeadline(wt).IsZero(), "a deadline set just now stays")
	c.wdl -= int64(time.Second)
	require.True(t, c.batchDeadline(wt).IsZero(), "one second short of 8: it stays")
	c.wdl -= int64(2 * time.Second)
	require.False(t, c.batchDeadline(wt).IsZero(), "three seconds short: it moves")
	c.wdl = 0 // a ping, a pong or the goodbye
	require.False(t, c.batchDeadline(wt).IsZero(), "after a control write it is set again")
}

// testOwner is a Writer's owner that says goodbye with 1000 once closing.
type testOwner struct {
	w       Writer
	mem     Budget
	timeout time.Duration
	closing atomic.Bool
	failed  chan error
}

func (o *testOwner) WriteTimeout() time.Duration { return o.timeout }
func (o *testOwner) Closing() bool               { return o.closing.Load() }
func (o *testOwner) GoodbyeDue() bool            { return o.closing.Load() }
func (o *testOwner) Goodbye() {
	_ = o.w.WriteClose(CloseNormal, "bye", time.Now().Add(o.timeout))
}
func (o *testOwner) WriteFailed(err error) {
	o.close()
	o.failed <- err
}
func (o *testOwner) InlineBlocked() {}

// close starts closing (once).
func (o *testOwner) close() {
	if o.closing.Load() {
		return
	}
	o.w.BeginClose()
	o.closing.Store(true)
}

// The owner's handler: pings are answered by the writer.
func (o *testOwner) OnMessage([]byte) {}
func (o *testOwner) OnPing(p []byte)  { o.w.AnswerPing(o, p) }
func (o *testOwner) OnPong()          {}
func (o *testOwner) OnEnd(err error)  {}
func (o *testOwner) held() int64      { return o.mem.Held() }
func (o *testOwner) relayHeld() int64 { return o.mem.parent.Held() }
func newTestOwner(timeout time.Duration) *testOwner {
	o := &testOwner{timeout: timeout, failed: make(chan error, 1)}
	o.mem.Init(1<<20, NewBudget(4<<20, nil))
	return o
}

// serveWriter upgrades one connection, hands it to o's Writer and returns
// the client's end (gorilla's, with dial's options).
func serveWriter(t *testing.T, o *testOwner, dial *websocket.Dialer, setup func(*Conn)) *websocket.Conn {
	t.Helper()
	ready := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := (&Upgrader{}).Upgrade(w, req)
		if err != nil {
			return
		}
		if setup != nil {
			setup(c)
		}
		o.w.Init(c, 10000, &o.mem)
		o.w.Start(o)
		c.Serve(o, Options{})
		close(ready)
	}))
	t.Cleanup(srv.Close)
	ws, _, err := dial.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	<-ready
	return ws
}

// TestWriterPromises: messages pushed and kicked (Kick, KickInline or KickHere, pings asked
// for between them) reach the peer whole and in queue order; their bytes are
// charged to the connection's and the parent budget until written; a ping is
// answered with its payload; the goodbye's close frame carries its code, and
// the writer ends for good (Done) having closed the socket.
func TestWriterPromises(t *testing.T) {
	t.Parallel()
	o := newTestOwner(5 * time.Second)
	ws := serveWriter(t, o, websocket.DefaultDialer, nil)
	const n = 500
	msg := func(i int) Msg {
		body := []byte(strconv.Itoa(i) + strings.Repeat("x", i%300))
		if i%2 == 0 {
			return Msg{Head: eventHead("s"), Body: body}
		}
		return Msg{Body: body}
	}
	go func() {
		for i := range n {
			if o.w.Push(msg(i)) != Taken {
				panic("refused")
			}
			if i%50 == 0 {
				o.w.PingSoon(o)
			}
			switch i % 3 {
			case 0:
				o.w.Kick(o)
			case 1:
				o.w.KickInline(o)
			default:
				o.w.KickHere(o)
			}
		}
	}()
	for i := range n {
		typ, got, err := ws.ReadMessage()
		require.NoError(t, err, "message %d", i)
		require.Equal(t, websocket.TextMessage, typ)
		require.Equal(t, string(msg(i).Bytes()), string(got), "message %d", i)
	}
	require.Eventually(t, func() bool { return o.held() == 0 && o.relayHeld() == 0 }, 5*time.Second, time.Millisecond,
		"every byte written goes back to both budgets")

	pong := make(chan string, 1)
	ws.SetPongHandler(func(p string) error { pong <- p; return nil })
	read := make(chan error, 1)
	go func() {
		_, _, err := ws.ReadMessage()
		read <- err
	}()
	require.NoError(t, ws.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(5*time.Second)))
	require.Equal(t, "p1", <-pong)

	o.close()
	o.w.Kick(o)
	var ce *websocket.CloseError
	require.ErrorAs(t, <-read, &ce)
	require.Equal(t, CloseNormal, ce.Code)
	require.Equal(t, "bye", ce.Text)
	<-o.w.Done()
	require.False(t, o.w.Active(), "no writer runs after the goodbye")
}

// TestKickHereWritesInPlace: a query's answer queued whole and kicked with
// KickHere is written by the caller before KickHere returns (its bytes are
// back in both budgets, no writer is left running or due: a peer that reads
// takes 27 KB at once), and reaches the peer whole and in order; once the
// connection is closing, KickHere leaves the goodbye to the writer
// goroutine, which says it and ends for good.
// Kick in its place fails the first check: the writer goroutine it starts
// has not written the answer when Kick returns.
func TestKickHereWritesInPlace(t *testing.T) {
	t.Parallel()
	o := newTestOwner(5 * time.Second)
	ws := serveWriter(t, o, websocket.DefaultDialer, nil)
	body := func(i int) []byte {
		return []byte(`{"n":` + strconv.Itoa(i) + `,"c":"` + strings.Repeat("x", 500) + `"}`)
	}
	// (the writer Start runs answers its kick and ends: nothing else kicks it)
	require.Eventually(t, func() bool { return !o.w.Active() }, 5*time.Second, time.Millisecond)
	for round := range 20 {
		for i := range 50 {
			require.Equal(t, Taken, o.w.Push(Msg{Head: eventHead("s"), Body: body(i)}))
		}
		require.Equal(t, Taken, o.w.Push(Msg{Body: []byte(`["EOSE","s"]`)}))
		o.w.KickHere(o)
		require.False(t, o.w.Active(), "round %d: no writer runs or is due once KickHere returns", round)
		require.Zero(t, o.held(), "round %d: the answer is written when KickHere returns", round)
		require.Zero(t, o.relayHeld(), "round %d", round)
		for i := range 50 {
			_, got, err := ws.ReadMessage()
			require.NoError(t, err)
			require.Equal(t, string(Msg{Head: eventHead("s"), Body: body(i)}.Bytes()), string(got), "round %d message %d", round, i)
		}
		_, got, err := ws.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, `["EOSE","s"]`, string(got))
	}

	read := make(chan error, 1)
	go func() {
		_, _, err := ws.ReadMessage()
		read <- err
	}()
	o.close()
	o.w.KickHere(o)
	var ce *websocket.CloseError
	require.ErrorAs(t, <-read, &ce)
	require.Equal(t, CloseNormal, ce.Code)
	<-o.w.Done()
	require.False(t, o.w.Active(), "no writer runs after the goodbye")
}

// TestWriterWriteTimeout: a peer that does not read is dropped by the write
// timeout: the owner is told (a timeout), the writer ends for good, and the
// bytes it held go back to both budgets.
func TestWriterWriteTimeout(t *testing.T) {
	t.Parallel()
	o := newTestOwner(200 * time.Millisecond)
	dial := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return nc, err
	}}
	serveWriter(t, o, dial, func(c *Conn) {
		require.NoError(t, c.NetConn().(*net.TCPConn).SetWriteBuffer(16<<10))
	})
	for range 40 {
		require.Equal(t, Taken, o.w.Push(Msg{Body: bytes.Repeat([]byte("x"), 16<<10)}))
	}
	o.w.Kick(o)
	var ne net.Error
	require.ErrorAs(t, <-o.failed, &ne)
	require.True(t, ne.Timeout(), "%v", ne)
	<-o.w.Done()
	require.Zero(t, o.held())
	require.Zero(t, o.relayHeld())
}
