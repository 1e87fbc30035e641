package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// syncBuffer is a bytes.Buffer safe for the relay's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestRunServesAndStops runs the command against a real database: it serves a
// publish and a REQ, then stops cleanly on cancel.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"relay", "--listen", addr, "--database-url", db.URL, "--name", "smoke"}, io.Discard, &logs)
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "relay did not come up: %s", logs.String())

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr, nil)
	require.NoError(t, err)
	defer ws.Close()
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "smoke"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	require.NoError(t, ws.WriteJSON([]any{"EVENT", ev}))
	var ok []any
	require.NoError(t, ws.ReadJSON(&ok))
	require.Equal(t, []any{"OK", ev.ID, true, ""}, ok)
	require.NoError(t, ws.WriteJSON([]any{"REQ", "s", map[string]any{"#t": []string{"go"}}}))
	var got []any
	require.NoError(t, ws.ReadJSON(&got))
	require.Equal(t, "EVENT", got[0])
	require.Equal(t, ev.ID, got[2].(map[string]any)["id"])
	require.NoError(t, ws.ReadJSON(&got))
	require.Equal(t, []any{"EOSE", "s"}, got)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, logs.String())
	case <-time.After(15 * time.Second):
		t.Fatal("relay did not stop")
	}
	require.Contains(t, logs.String(), `"msg":"relay stopped"`)
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"relay"}, "database-url"},
		{[]string{"relay", "--database-url", "postgres://x", "--batch-max-events", "0"}, "batch max events"},
		{[]string{"relay", "--database-url", "postgres://x", "--auth-required-for-reads"}, "not enabled"},
		{[]string{"relay", "--database-url", "postgres://x", "--log-level", "loud"}, "log level"},
		{[]string{"relay", "--database-url", "postgres://x", "extra"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		require.Error(t, err, tc.args)
		require.Contains(t, err.Error(), tc.want, tc.args)
	}
}
