package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
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
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "moderator", "--listen", addr, "--database-url", db.URL, "--node-key-file", keyFile)
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	require.Contains(t, daemontest.WaitOK(t, "http://"+addr+"/metrics"), "cn_moderation_rule_evaluation_seconds")
	daemontest.WaitLease(t, db.Pool, moderation.ConsumerName)
	stop()
}

func TestBadCommandLines(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "node.key")
	_, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	loose := filepath.Join(t.TempDir(), "loose.key")
	require.NoError(t, os.WriteFile(loose, []byte("ab\n"), 0o644))
	for _, args := range [][]string{
		{"moderator", "--node-key-file", keyFile},                                 // no database
		{"moderator", "--database-url", "postgres://x"},                           // no key
		{"moderator", "--database-url", "postgres://x", "--node-key-file", loose}, // readable by others
		{"moderator", "--database-url", "postgres://x", "--node-key-file", keyFile, "--classifier-url", "ftp://x"},
		{"moderator", "--database-url", "postgres://x", "--node-key-file", keyFile, "--batch-size", "0"},
		{"moderator", "--database-url", "postgres://x", "--node-key-file", keyFile, "extra"},
	} {
		err := newApp(io.Discard, io.Discard).RunContext(context.Background(), args)
		require.Error(t, err, "%v", args)
	}
}
