package wsconn

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// echo is a Handler that sends every message back and answers the close
// frame the reading ended with, from its turn (the one writer here).
type echo struct {
	c     *Conn
	ended chan error
}

func (e *echo) OnMessage(data []byte) {
	_ = e.c.WriteMessage(data, time.Now().Add(5*time.Second))
}
func (e *echo) OnPing(p []byte) {
	_ = e.c.WriteControl(OpPong, p, time.Now().Add(5*time.Second))
}
func (e *echo) OnPong() {}
func (e *echo) OnEnd(err error) {
	var ce *CloseError
	if errors.As(err, &ce) {
		code := ce.Code
		_ = e.c.WriteControl(OpClose, ClosePayload(code, ""), time.Now().Add(5*time.Second))
	}
	_ = e.c.Close()
	e.ended <- err
}

// serveEcho serves echo connections upgraded by u.
func serveEcho(t *testing.T, u *Upgrader, o Options) (url string, ended chan error) {
	ended = make(chan error, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := u.Upgrade(w, req)
		if err != nil {
			return
		}
		c.Serve(&echo{c: c, ended: ended}, o)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), ended
}

// TestDeflate: with permessage-deflate on, a client that asks for it gets
// the no-context-takeover form; its compressed messages are inflated, the
// server's long ones compressed (gorilla's client reads both), short ones
// plain; the limit is the inflated size's (1009).
func TestDeflate(t *testing.T) {
	t.Parallel()
	url, ended := serveEcho(t, &Upgrader{Deflate: DeflateOptions{Enabled: true}}, Options{MaxMessage: 4000})
	d := websocket.Dialer{EnableCompression: true}
	ws, resp, err := d.Dial(url, nil)
	require.NoError(t, err)
	defer ws.Close()
	require.Equal(t, deflateAnswer, resp.Header.Get("Sec-Websocket-Extensions"))
	for _, msg := range []string{"short", strings.Repeat("compress me ", 300)} {
		require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(msg)))
		_, got, err := ws.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, msg, string(got))
	}
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 4001))))
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, CloseMessageTooBig, ce.Code)
	require.Error(t, <-ended)

	// Off: not negotiated (a compressed frame is then refused with 1002: see
	// TestParserConformance).
	url, _ = serveEcho(t, &Upgrader{}, Options{})
	ws2, resp, err := d.Dial(url, nil)
	require.NoError(t, err)
	defer ws2.Close()
	require.Empty(t, resp.Header.Get("Sec-Websocket-Extensions"))
}

// TestCompressedFrameLayout: AppendText sets RSV1 on a compressed message
// only.
func TestCompressedFrameLayout(t *testing.T) {
	c := &Conn{defl: &deflater{minSize: 256}}
	long := strings.Repeat("x", 1000)
	b := c.AppendText(nil, []byte(`["EVENT","s",`), []byte(`"`+long+`"`), []byte("]"))
	require.Equal(t, byte(finBit|rsv1Bit|OpText), b[0])
	require.Less(t, len(b), 100)
	p := Parser{Deflate: true, Inflate: c.defl.inflate(0)}
	// (re-masked as a client's frame, for the parser)
	var got record
	_, _, err := p.Parse(frames(frame{op: OpText, rsv: rsv1Bit, payload: string(b[2:])}), &got)
	require.Nil(t, err)
	require.Equal(t, []string{`msg1:["EVENT","s","` + long + `"]`}, []string(got))
	b = c.AppendText(nil, nil, []byte("short"), nil)
	require.Equal(t, byte(finBit|OpText), b[0])
}
