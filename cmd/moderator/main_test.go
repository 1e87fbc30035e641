package main

import (
	"testing"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var moderator = daemontest.ConsumerDaemon{Name: "moderator", NewApp: newApp,
	Metric: "cn_moderation_rule_evaluation_seconds", Consumer: moderation.ConsumerName}

// TestRunServesAndStops runs the command against a real database: /healthz and
// /metrics answer, the consumer takes its lease, and cancel stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	key, _ := daemontest.KeyFiles(t)
	moderator.ServesAndStops(t, db.Pool, testkit.FreeAddr(t), "--database-url", db.URL, "--node-key-file", key)
}

func TestBadCommandLines(t *testing.T) {
	key, loose := daemontest.KeyFiles(t)
	moderator.Refuses(t,
		[]string{"--node-key-file", key},                                     // no database
		[]string{"--database-url", "postgres://x"},                           // no key
		[]string{"--database-url", "postgres://x", "--node-key-file", loose}, // readable by others
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--classifier-url", "ftp://x"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "--batch-size", "0"},
		[]string{"--database-url", "postgres://x", "--node-key-file", key, "extra"},
	)
}
