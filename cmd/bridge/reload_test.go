package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestReload: SIGHUP's reload (the request daemon.Main sends on it) applies
// --log-level, reports a changed --batch-size as needing a restart, and
// refuses a file with an unknown key whole; /metrics counts both.
func TestReload(t *testing.T) {
	db := pgtest.New(t)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	t.Cleanup(ns.Shutdown)
	require.True(t, ns.ReadyForConnections(10*time.Second))
	addr := testkit.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "node.yaml")
	section := fmt.Sprintf("bridge:\n  listen: %s\n", addr)
	daemontest.CheckReload(t, daemontest.ReloadCase{Name: "bridge", File: file, NewApp: newApp,
		Args:       []string{"bridge", "--config", file, "--database-url", db.URL, "--nats-url", ns.ClientURL(), "--stream", "CN_RELOAD"},
		MetricsURL: "http://" + addr + "/metrics",
		Start:      section,
		Changed:    "log-level: debug\n" + section + "  batch-size: 7\n",
		Restart:    "batch-size",
		Bad:        section + "  batch-sise: 7\n",
	})
}
