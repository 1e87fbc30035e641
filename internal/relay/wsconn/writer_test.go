package wsconn

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
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
