package relay

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// TestIdleConnectionsHoldNoGoroutine: a held connection that says nothing
// has no goroutine of its own (the transport reads it when its socket is
// readable): 200 of them add none beyond a few the relay may be running.
// Not parallel: it counts the process's goroutines.
func TestIdleConnectionsHoldNoGoroutine(t *testing.T) {
	const n = 200
	tr := startRelay(t, nil, func(c *Config) { c.MaxConnsPerIP = 2 * n })
	settled := func(want int) {
		t.Helper()
		require.Eventually(t, func() bool {
			tr.connsMu.Lock()
			defer tr.connsMu.Unlock()
			if len(tr.conns) != want {
				return false
			}
			for c := range tr.conns {
				if c.w.Active() { // (a writer runs: the AUTH challenge)
					return false
				}
			}
			return true
		}, waitTimeout, time.Millisecond)
	}
	settled(0)
	runtime.GC()
	before := runtime.NumGoroutine()
	for range n {
		ws, _, err := websocket.DefaultDialer.Dial(tr.url, nil) // (no reading goroutine)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ws.Close() })
	}
	settled(n)
	after := runtime.NumGoroutine()
	require.Less(t, after-before, 10, "goroutines: %d before, %d with %d idle connections", before, after, n)
}

// TestCloseCodes: what RFC 6455 asks of the relay's side of a connection,
// seen from a client: a text message that is not UTF-8 is refused with 1007,
// a message far over the limit with 1009, an unmasked frame with 1002, and a
// client's close frame is answered with its code.
func TestCloseCodes(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	closeCode := func(ws *websocket.Conn) int {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))
		for {
			_, _, err := ws.ReadMessage()
			if err == nil {
				continue // (the AUTH challenge)
			}
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			return ce.Code
		}
	}
	dialWS := func() *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial(tr.url, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ws.Close() })
		return ws
	}

	ws := dialWS()
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte("[\"REQ\",\"s\",{\"#t\":[\"caf\xc3\"]}]")))
	require.Equal(t, websocket.CloseInvalidFramePayloadData, closeCode(ws), "invalid UTF-8")

	ws = dialWS()
	huge := `["REQ","s",{"#t":["` + strings.Repeat("a", 2*tr.cfg.Limits.MaxMessageBytes) + `"]}]`
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(huge)))
	require.Equal(t, websocket.CloseMessageTooBig, closeCode(ws), "message too big")

	ws = dialWS()
	require.NoError(t, ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye")))
	require.Equal(t, 4001, closeCode(ws), "the client's close echoed")

	// An unmasked text frame, written on the socket under the client.
	ws = dialWS()
	_, err := ws.NetConn().(*net.TCPConn).Write([]byte{0x81, 0x02, '[', ']'})
	require.NoError(t, err)
	require.Equal(t, websocket.CloseProtocolError, closeCode(ws), "unmasked frame")
}

// countingConn counts the bytes read from a socket.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestDeflateEndToEnd: with Config.Deflate, a client that asks for
// permessage-deflate gets its REQ read and a long EVENT compressed on the
// wire (fewer bytes than the message), whole once inflated.
func TestDeflateEndToEnd(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.Deflate = true })
	var wire atomic.Int64
	d := websocket.Dialer{EnableCompression: true, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{Conn: nc, n: &wire}, err
	}}
	ws, resp, err := d.Dial(tr.url, nil)
	require.NoError(t, err)
	defer ws.Close()
	require.Contains(t, resp.Header.Get("Sec-Websocket-Extensions"), "permessage-deflate")
	require.NoError(t, ws.WriteJSON([]any{"REQ", "s", goFilter()}))
	next := func() []json.RawMessage {
		t.Helper()
		for {
			_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))
			_, data, err := ws.ReadMessage()
			require.NoError(t, err)
			var msg []json.RawMessage
			require.NoError(t, json.Unmarshal(data, &msg))
			if string(msg[0]) != `"AUTH"` {
				return msg
			}
		}
	}
	require.Equal(t, `"EOSE"`, string(next()[0]))
	ev := newKey(t).note(t, strings.Repeat("a compressible note ", 200), nil)
	pub := dial(t, tr.url)
	ok, reason := pub.publish(ev)
	require.True(t, ok, reason)
	before := wire.Load()
	msg := next()
	require.Equal(t, `"EVENT"`, string(msg[0]))
	var got struct{ ID, Content string }
	require.NoError(t, json.Unmarshal(msg[2], &got))
	require.Equal(t, ev.ID, got.ID)
	require.Equal(t, ev.Content, got.Content)
	require.Less(t, wire.Load()-before, int64(len(ev.Content)/4), "the EVENT came compressed")
}
