package relay

import (
	"net"
	"runtime"
	"strings"
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
				if c.wake.Load() != 0 { // (a writer runs: the AUTH challenge)
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
