package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRunServesAndStops runs the command against a real database: the search API
// answers, the consumer registers, and cancel stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "indexer", "--listen", addr, "--database-url", db.URL, "--kinds", "1,30023")
	var resp *http.Response
	var err error
	require.Eventually(t, func() bool {
		resp, err = http.Get("http://" + addr + "/v1/search?q=nostr")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []any{}, body["items"])
	daemontest.WaitLease(t, db.Pool, "index-v1")
	stop()
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"indexer"}, // no database
		{"indexer", "--database-url", "postgres://x", "--kinds", "one"},
		{"indexer", "--database-url", "postgres://x", "--batch-size", "0"},
		{"indexer", "--database-url", "postgres://x", "--log-level", "loud"},
		{"indexer", "--database-url", "postgres://x", "extra"},
	} {
		err := newApp(io.Discard, io.Discard).RunContext(context.Background(), args)
		require.Error(t, err, "%v", args)
	}
}
