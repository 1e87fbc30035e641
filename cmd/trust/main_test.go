package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRunServesAndStops runs the command against a real database: /healthz and
// /metrics answer, the consumer takes its lease, and cancel stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	_, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "trust", "--listen", addr, "--database-url", db.URL, "--node-key-file", keyFile)
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	require.Contains(t, daemontest.WaitOK(t, "http://"+addr+"/metrics"), "cn_trust_runs_total")
	daemontest.WaitLease(t, db.Pool, trust.ConsumerName)
	stop()
}

func TestBadCommandLines(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "node.key")
	_, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	loose := filepath.Join(t.TempDir(), "loose.key")
	require.NoError(t, os.WriteFile(loose, []byte("ab\n"), 0o644))
	for _, args := range [][]string{
		{"trust", "--node-key-file", keyFile},                                 // no database
		{"trust", "--database-url", "postgres://x"},                           // no key
		{"trust", "--database-url", "postgres://x", "--node-key-file", loose}, // readable by others
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "--seeds", "npub1nope"},
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "--seeds", "@/nonexistent/seeds"},
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "--assert-min-rank", "0"},
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "--batch-size", "0"},
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "--recompute-interval", "10ms"},
		{"trust", "--database-url", "postgres://x", "--node-key-file", keyFile, "extra"},
	} {
		err := newApp(io.Discard, io.Discard).RunContext(context.Background(), args)
		require.Error(t, err, "%v", args)
	}
}
