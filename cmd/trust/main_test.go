package main

import (
	"testing"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var trustd = daemontest.ConsumerDaemon{Name: "trust", NewApp: newApp,
	Metric: "cn_trust_runs_total", Consumer: trust.ConsumerName}

// TestRunServesAndStops runs the command against a real database: /healthz and
// /metrics answer, the consumer takes its lease, and cancel stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	key, _ := daemontest.KeyFiles(t)
	trustd.ServesAndStops(t, db.Pool, testkit.FreeAddr(t), "--database-url", db.URL, "--node-key-file", key)
}

func TestBadCommandLines(t *testing.T) {
	key, loose := daemontest.KeyFiles(t)
	trustd.Refuses(t,
		[]string{"--node-key-file", key},                                     // no database
		[]string{"--database-url", "postgres://x"},                           // no key
		[]string{"--database-url", "postgres://x", "--node-key-file", loose}, // readable by others
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--seeds", "npub1nope"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--seeds", "@/nonexistent/seeds"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--assert-min-rank", "0"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--batch-size", "0"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--recompute-interval", "10ms"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "extra"},
	)
}
