package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/devnode"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// devOptionsOf runs `cnctl dev` with args up to devOptions and returns the
// options it would start the node with.
func devOptionsOf(t *testing.T, args ...string) (devnode.Options, error) {
	t.Helper()
	cmd := devCommand()
	var got devnode.Options
	cmd.Action = func(c *cli.Context) (err error) {
		got, err = devOptions(c)
		return err
	}
	app := &cli.App{Name: "cnctl", Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard}
	err := app.RunContext(context.Background(), append([]string{"cnctl", "dev"}, args...))
	return got, err
}

// TestDevFlagsReachTheNode sets each flag of `cnctl dev` in turn and checks
// that the dev node's options change; internal/node's
// TestEveryDevOptionReachesADaemon checks that each option reaches a daemon. A
// flag that is parsed and dropped (as --admin-pubkeys and --dashboard-listen
// once were) fails here.
func TestDevFlagsReachTheNode(t *testing.T) {
	for _, f := range devCommand().Flags {
		for _, env := range f.(interface{ GetEnvVars() []string }).GetEnvVars() {
			t.Setenv(env, "") // restored after the test
			require.NoError(t, os.Unsetenv(env))
		}
	}
	npub := "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"
	config := filepath.Join(t.TempDir(), "node.yaml")
	require.NoError(t, os.WriteFile(config, []byte("dev:\n  data-dir: /tmp/from-config\n"), 0o600))
	samples := map[string]string{
		"config":               config,
		"database-url":         "postgres://elsewhere/db",
		"data-dir":             "/tmp/other",
		"pg-port":              "6543",
		"relay-listen":         "127.0.0.1:1",
		"relay-metrics-listen": "127.0.0.1:6",
		"relay-public-url":     "wss://dev.example.org",
		"indexer-listen":       "127.0.0.1:2",
		"moderator-listen":     "127.0.0.1:3",
		"trust-listen":         "127.0.0.1:4",
		"dashboard-listen":     "127.0.0.1:5",
		"admin-pubkeys":        npub,
		"seeds":                strings.Repeat("ab", 32),
		"node-key-file":        "/tmp/other.key",
		"membership":           "invite",
		"nats-listen":          "127.0.0.1:7",
		"nats-url":             "nats://elsewhere:4222",
		"bridge-listen":        "127.0.0.1:8",
		"no-bridge":            "true",
		"blossom-dir":          "/tmp/blobs",
		// The store's rules (storerules.Flags).
		"max-message-bytes":      "65536",
		"max-content-bytes":      "1000",
		"max-tags":               "10",
		"created-at-lower-limit": "24h",
		"max-topics-per-event":   "3",
		"require-topic":          "false",
		"identity-writers":       "any",
		"default-topic":          "General",
		"allowed-topics":         "go",
		"pending-per-key":        "4",
		"pending-max":            "10",
		"pending-max-age":        "1h",
	}
	base, err := devOptionsOf(t)
	require.NoError(t, err)
	for _, f := range devCommand().Flags {
		name := f.Names()[0]
		value, ok := samples[name]
		require.True(t, ok, "--%s: add a sample value here (and make sure devOptions maps it)", name)
		got, err := devOptionsOf(t, "--"+name+"="+value)
		require.NoError(t, err, name)
		require.NotEqual(t, base, got, "--%s does not reach the dev node's options", name)
	}
	got, err := devOptionsOf(t, "--admin-pubkeys", npub, "--default-topic", " General ")
	require.NoError(t, err)
	require.Equal(t, []string{"3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d"}, got.AdminPubkeys, "npub accepted, as by relay")
	require.Equal(t, "general", got.Rules.DefaultTopic, "normalised")

	_, err = devOptionsOf(t, "--seeds", "nope")
	require.ErrorContains(t, err, "--seeds")
	_, err = devOptionsOf(t, "--membership", "closed")
	require.ErrorContains(t, err, "--membership")
	out, err := cnctl(t, "dev", "--admin-pubkeys", "nope")
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err), "a bad flag is a usage error: %s", out)
}

// TestDevNamesTheRelayAddressFlag: a dev node whose relay /metrics address is
// taken (a relay already runs on the host) stops, and its error names the flag.
func TestDevNamesTheRelayAddressFlag(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	out, err := cnctl(t, "dev", "--database-url", pgtest.EmptyDatabase(t), "--no-bridge", "--node-key-file", filepath.Join(t.TempDir(), "node.key"),
		"--relay-listen", "127.0.0.1:0", "--relay-metrics-listen", taken.Addr().String(), "--indexer-listen", "127.0.0.1:0",
		"--moderator-listen", "127.0.0.1:0", "--trust-listen", "127.0.0.1:0", "--dashboard-listen", "127.0.0.1:0",
		"--blossom-dir", t.TempDir())
	require.Error(t, err, out)
	require.Equal(t, "listen on metrics address "+taken.Addr().String()+": address already in use (set --relay-metrics-listen / CN_RELAY_METRICS_LISTEN)",
		oneLine(err))
}
