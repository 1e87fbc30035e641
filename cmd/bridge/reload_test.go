package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestReload: SIGHUP's reload (the request daemon.Main sends on it) applies
// --log-level, reports a changed --batch-size as needing a restart, and
// refuses a file with an unknown key whole; /metrics counts both.
func TestReload(t *testing.T) {
	db := pgtest.New(t)
	ns := testkit.NATS(t)
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
