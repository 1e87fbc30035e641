//go:build linux && (amd64 || arm64)

package wsconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// waitingForRoom reports whether a writer of c waits in the write poller.
func waitingForRoom(c *Conn) bool {
	wp := theWPoll.Load()
	if wp == nil {
		return false
	}
	wp.mu.Lock()
	defer wp.mu.Unlock()
	return int(c.fd) < len(wp.slots) && wp.slots[c.fd].c == c && wp.slots[c.fd].wake != nil
}

// smallBuffers dials with a 16 KiB receive buffer.
var smallBuffers = &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		err = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
	}
	return nc, err
}}

// setSendBuffer sets the socket's send buffer through a duplicate of c's
// descriptor (NetConn).
func setSendBuffer(t *testing.T, c *Conn, n int) {
	nc := c.NetConn()
	require.NoError(t, nc.(*net.TCPConn).SetWriteBuffer(n))
	require.NoError(t, nc.Close())
}

// TestBareDescriptor: after the upgrade a TCP socket is held as a bare,
// non-blocking descriptor (the net.Conn is let go); NetConn still gives a
// *net.TCPConn on it, and nil once it is closed.
func TestBareDescriptor(t *testing.T) {
	t.Parallel()
	got := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := (&Upgrader{}).Upgrade(w, req)
		if err == nil {
			got <- c
		}
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer ws.Close()
	c := <-got
	require.Nil(t, c.nc)
	require.GreaterOrEqual(t, c.fd, int32(0))
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(c.fd), syscall.F_GETFL, 0)
	require.Zero(t, errno)
	require.NotZero(t, flags&syscall.O_NONBLOCK, "the descriptor stays non-blocking")
	nc := c.NetConn()
	require.IsType(t, &net.TCPConn{}, nc)
	require.Equal(t, ws.LocalAddr().String(), nc.RemoteAddr().String())
	require.NoError(t, nc.Close())
	require.NoError(t, c.WriteMessage([]byte("hello"), time.Now().Add(5*time.Second)))
	_, msg, err := ws.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "hello", string(msg))
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Close(), net.ErrClosed, "the descriptor is closed once")
	require.Nil(t, c.NetConn())
	_, _, err = ws.ReadMessage()
	require.Error(t, err, "the peer sees the socket closed")
}

// TestSlowReaderDroppedBareDescriptor: a peer that never reads, its socket
// full, is dropped by the write timeout with no deadline of Go's on the
// socket (it is a bare descriptor): the writer waits in the write poller,
// fails with a timeout no earlier than three quarters of the timeout, the
// owner is told, the budgets are given back and the socket closed.
func TestSlowReaderDroppedBareDescriptor(t *testing.T) {
	t.Parallel()
	const wt = 400 * time.Millisecond
	o := newTestOwner(wt)
	var conn *Conn
	ws := serveWriter(t, o, smallBuffers, func(c *Conn) {
		conn = c
		setSendBuffer(t, c, 16<<10)
	})
	require.Nil(t, conn.nc, "a bare descriptor")
	start := time.Now()
	for range 40 {
		require.Equal(t, Taken, o.w.Push(Msg{Body: bytes.Repeat([]byte("x"), 16<<10)}))
	}
	o.w.Kick(o)
	require.Eventually(t, func() bool { return waitingForRoom(conn) }, 5*time.Second, time.Millisecond,
		"the writer waits in the write poller")
	var err error
	select {
	case err = <-o.failed:
	case <-time.After(10 * wt):
		t.Fatal("the writer was not dropped within ten times the write timeout")
	}
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
	require.GreaterOrEqual(t, time.Since(start), wt*3/4)
	<-o.w.Done()
	require.Zero(t, o.held())
	require.Zero(t, o.relayHeld())
	require.Nil(t, conn.NetConn(), "the socket is closed")
	require.False(t, waitingForRoom(conn))
	// The peer gets what was written, then the end.
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the socket was closed: %v", err)
			break
		}
	}
}

// TestPeerClosesWhileWriting: a writer waiting for room on a socket whose
// peer goes away (a reset) fails at once with the socket's error, not at its
// write timeout.
func TestPeerClosesWhileWriting(t *testing.T) {
	t.Parallel()
	o := newTestOwner(time.Minute)
	var conn *Conn
	ws := serveWriter(t, o, smallBuffers, func(c *Conn) {
		conn = c
		setSendBuffer(t, c, 16<<10)
	})
	for range 40 {
		require.Equal(t, Taken, o.w.Push(Msg{Body: bytes.Repeat([]byte("x"), 16<<10)}))
	}
	o.w.Kick(o)
	require.Eventually(t, func() bool { return waitingForRoom(conn) }, 5*time.Second, time.Millisecond,
		"the writer waits in the write poller")
	start := time.Now()
	require.NoError(t, ws.NetConn().(*net.TCPConn).SetLinger(0))
	require.NoError(t, ws.NetConn().Close()) // (a reset: its buffer holds unread bytes)
	var err error
	select {
	case err = <-o.failed:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not fail when the peer left")
	}
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "not a timeout: %v", err)
	require.Less(t, time.Since(start), 10*time.Second)
	<-o.w.Done()
	require.Zero(t, o.held())
	require.Zero(t, o.relayHeld())
}

// TestNoCrossTalkAfterClose: connections closed while their writers write
// (one waiting for room, the writes going on after the close) leave their
// descriptor numbers to new connections, which get only their own frames:
// no write of a closed connection reaches a socket that took its number.
func TestNoCrossTalkAfterClose(t *testing.T) {
	// (not parallel: the descriptor numbers freed are to be reused here)
	conns := make(chan *Conn, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := (&Upgrader{}).Upgrade(w, req)
		if err != nil {
			return
		}
		conns <- c
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	// Old connections: their peers never read; each has a writer that keeps
	// writing "old" frames, also after its connection is closed.
	const olds = 6
	stop := make(chan struct{})
	var writers sync.WaitGroup
	defer func() { close(stop); writers.Wait() }()
	oldFDs := map[int32]bool{}
	var old []*Conn
	for range olds {
		ws, _, err := smallBuffers.Dial(url, nil)
		require.NoError(t, err)
		defer ws.Close()
		c := <-conns
		setSendBuffer(t, c, 16<<10)
		old = append(old, c)
		oldFDs[c.fd] = true
		writers.Add(1)
		go func() {
			defer writers.Done()
			msg := bytes.Repeat([]byte("old"), 1000)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c.WriteMessage(msg, time.Now().Add(time.Minute)) != nil {
					runtime.Gosched()
				}
			}
		}()
	}
	for _, c := range old {
		require.Eventually(t, func() bool { return waitingForRoom(c) }, 5*time.Second, time.Millisecond)
	}
	for _, c := range old {
		require.NoError(t, c.Close())
	}

	// New connections, on the numbers freed: each gets its own frames only.
	reused := false
	for i := range 2 * olds {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		require.NoError(t, err)
		c := <-conns
		reused = reused || oldFDs[c.fd]
		done := make(chan error, 1)
		go func() {
			for k := range 100 {
				if err := c.WriteMessage(fmt.Appendf(nil, "new %d %d", i, k), time.Now().Add(10*time.Second)); err != nil {
					done <- err
					return
				}
			}
			done <- c.WriteControl(OpClose, ClosePayload(CloseNormal, ""), time.Now().Add(10*time.Second))
		}()
		for k := 0; ; k++ {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				require.ErrorAs(t, err, &ce, "connection %d after %d messages", i, k)
				require.Equal(t, CloseNormal, ce.Code)
				require.Equal(t, 100, k)
				break
			}
			require.Equal(t, fmt.Sprintf("new %d %d", i, k), string(msg))
		}
		require.NoError(t, <-done)
		require.NoError(t, c.Close())
		_ = ws.Close()
	}
	require.True(t, reused, "a new connection took the number of a closed one (%v)", oldFDs)
}
