package relay

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// heldNetConns returns the sockets under the relay's connections.
func heldNetConns(r *Relay) []net.Conn {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	var out []net.Conn
	for c := range r.conns {
		out = append(out, c.w.Conn().NetConn())
	}
	return out
}

// TestHTTPOneListener: a NIP-11 request, a NIP-86 POST, /healthz and a WebSocket
// upgrade are all served on the relay's one listener; the upgrade by the
// acceptor (the socket gorilla holds is the TCP connection itself, not a
// connection net/http served), the others by net/http, keep-alive included;
// a refused upgrade is answered as net/http answered it.
func TestHTTPOneListener(t *testing.T) {
	t.Parallel()
	rpcBody := make(chan string, 1)
	mgmt := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		rpcBody <- string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":true}`))
	})
	store := newFakeStore()
	reg := prometheus.NewRegistry()
	r, err := New(testConfig(), Deps{Store: store, Feed: store, Registerer: reg, Management: mgmt})
	require.NoError(t, err)
	tr := serveRelay(t, r)

	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	c.eose("s")
	socks := heldNetConns(r)
	require.Len(t, socks, 1)
	_, isTCP := socks[0].(*net.TCPConn)
	require.True(t, isTCP, "the upgrade went through net/http: %T", socks[0])

	// NIP-11, /healthz and NIP-86 on one keep-alive connection.
	raw, err := net.Dial("tcp", strings.TrimPrefix(tr.http, "http://"))
	require.NoError(t, err)
	defer raw.Close()
	br := bufio.NewReader(raw)
	roundTrip := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		require.NoError(t, req.Write(raw))
		resp, err := http.ReadResponse(br, req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.False(t, resp.Close, "net/http keeps the connection")
		return resp, string(body)
	}
	info, _ := http.NewRequest(http.MethodGet, tr.http, nil)
	info.Header.Set("Accept", "application/nostr+json")
	resp, body := roundTrip(info)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/nostr+json", resp.Header.Get("Content-Type"))
	require.Contains(t, body, `"supported_nips"`)
	health, _ := http.NewRequest(http.MethodGet, tr.http+"/healthz", nil)
	resp, body = roundTrip(health)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok\n", body)
	rpc, _ := http.NewRequest(http.MethodPost, tr.http, strings.NewReader(`{"method":"supportedmethods","params":[]}`))
	rpc.Header.Set("Content-Type", "application/nostr+json+rpc")
	resp, body = roundTrip(rpc)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `{"result":true}`, body)
	require.Equal(t, `{"method":"supportedmethods","params":[]}`, <-rpcBody)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))

	// A bad handshake: the upgrader's answer, as before.
	bad := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"12"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	req, _ := http.NewRequest(http.MethodGet, tr.http, nil)
	req.Header = bad
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body2, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "Bad Request\n", string(body2))
	require.Equal(t, "13", resp.Header.Get("Sec-Websocket-Version"))
}

// TestConnectionsPerIPRefusal: an upgrade the relay refuses (the per-IP
// limit) is answered 429 with the body net/http's http.Error wrote.
func TestConnectionsPerIPRefusal(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.MaxConnsPerIP = 1 })
	dial(t, tr.url)
	_, resp, err := websocket.DefaultDialer.Dial(tr.url, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, "too many connections from your address\n", string(body))
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
}

// TestHTTPHeadRefused: a request head longer than maxHeadBytes is answered 431
// and closed, one slower than the head timeout is closed unanswered; neither
// leaves anything with the acceptor.
func TestHTTPHeadRefused(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil, func(r *Relay) { r.headTimeout = 300 * time.Millisecond })
	addr := strings.TrimPrefix(tr.http, "http://")
	heads := func() int {
		a := tr.acc.Load()
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.heads)
	}

	big, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer big.Close()
	head := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Pad: " +
		strings.Repeat("a", maxHeadBytes) + "\r\n\r\n"
	go func() { _, _ = io.WriteString(big, head) }()
	_ = big.SetReadDeadline(time.Now().Add(waitTimeout))
	got, err := io.ReadAll(big)
	require.NoError(t, err, "the relay closes the connection")
	require.True(t, strings.HasPrefix(string(got), "HTTP/1.1 431 "), "%q", got)
	require.Equal(t, 0, heads())

	start := time.Now()
	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	_, err = io.WriteString(slow, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
	require.NoError(t, err)
	_ = slow.SetReadDeadline(time.Now().Add(waitTimeout))
	got, err = io.ReadAll(slow)
	require.NoError(t, err, "the relay closes the connection")
	require.Empty(t, got)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Equal(t, 0, heads())

	// A head that comes in pieces within the timeout is served.
	ws, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer ws.Close()
	for _, part := range []string{"GET / HTTP/1.1\r", "\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r", "\n"} {
		_, err = io.WriteString(ws, part)
		require.NoError(t, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(ws), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
}

func TestHTTPHeadEnd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"":                           -1,
		"GET / HTTP/1.1\r\n":         -1,
		"GET / HTTP/1.1\r\n\r\n":     18,
		"GET / HTTP/1.1\n\n":         16,
		"GET / HTTP/1.1\r\nA: b\r\n": -1,
		"GET / HTTP/1.1\r\n\r\nbody": 18,
		"\n\n":                       2,
		"a\n\r":                      -1,
	} {
		require.Equal(t, want, headEnd([]byte(in)), "%q", in)
	}
}

// TestShutdownClosesHeads: a connection whose head is still being read when
// the relay shuts down is closed at once, not at the head timeout.
func TestShutdownClosesHeads(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(tr.http, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		a := tr.acc.Load()
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.heads) == 1
	}, waitTimeout, time.Millisecond)
	start := time.Now()
	require.NoError(t, tr.stop())
	require.Less(t, time.Since(start), defaultHeadTimeout/2)
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	got, err := io.ReadAll(c)
	// Closed with the head's bytes unread (the relay may close the socket
	// before it read them), the connection may be reset rather than ended.
	require.True(t, err == nil || errors.Is(err, syscall.ECONNRESET), "the relay closed the connection: %v", err)
	require.Empty(t, got)
}

// FuzzHeadEnd: headEnd finds the first empty line, as a plain search for
// "\n\n" and "\n\r\n" does.
func FuzzHeadEnd(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "a\n\n", "\n\r\n", "\r\n\r", "x\n\r\r\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := -1
		if i := strings.Index(string(b), "\n\n"); i >= 0 {
			want = i + 2
		}
		if i := strings.Index(string(b), "\n\r\n"); i >= 0 && (want < 0 || i+3 < want) {
			want = i + 3
		}
		require.Equal(t, want, headEnd(b), "%q", b)
	})
}
