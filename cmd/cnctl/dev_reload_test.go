package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestDevReloadsTheRelay: the dev node's relay reloads as relay does (the
// request SIGHUP sends): a live store rule changed in the dev section of
// --config reaches a connection opened before; a changed address is reported
// as needing a restart; a bad file is refused whole.
func TestDevReloadsTheRelay(t *testing.T) {
	relayAddr, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "node.yaml")
	write := func(extra string) {
		require.NoError(t, os.WriteFile(file, []byte("dev:\n  relay-listen: "+relayAddr+"\n  relay-metrics-listen: "+metrics+"\n"+extra), 0o600))
	}
	write("  max-tags: 5\n")
	args := []string{"cnctl", "dev", "--config", file, "--database-url", pgtest.EmptyDatabase(t), "--no-bridge",
		"--node-key-file", filepath.Join(t.TempDir(), "node.key"), "--indexer-listen", "127.0.0.1:0",
		"--moderator-listen", "127.0.0.1:0", "--trust-listen", "127.0.0.1:0", "--dashboard-listen", "127.0.0.1:0"}
	requests := make(chan struct{})
	var out, logs testkit.Buffer
	ctx, cancel := context.WithCancel(daemon.WithReload(context.Background(), newApp, args, requests))
	done := make(chan error, 1)
	go func() { done <- newApp(&out, &logs).RunContext(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("dev node did not stop")
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "node is up") }, 60*time.Second, 20*time.Millisecond, "%s", &logs)
	metric := func(name string) int {
		n, err := daemontest.Metric("http://"+metrics+"/metrics", name)
		if err != nil {
			return -1 // not listening yet
		}
		return n
	}
	require.Eventually(t, func() bool { return metric("cn_config_generation") == 1 }, 10*time.Second, 10*time.Millisecond)
	c := testkit.Dial(t, "ws://"+relayAddr)
	publish := func(tags int) bool {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "hi"}
		for i := 1; i < tags; i++ {
			ev.Tags = append(ev.Tags, nostr.Tag{"x", "v"})
		}
		require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
		ok, _ := c.Publish(ev)
		return ok
	}
	require.True(t, publish(4))

	write("  max-tags: 3\n  pending-max: 5\n")
	requests <- struct{}{}
	require.Eventually(t, func() bool { return metric("cn_config_generation") == 2 }, 10*time.Second, 10*time.Millisecond, "%s", &logs)
	require.False(t, publish(4), "the open connection sees the new max-tags")
	require.Contains(t, logs.String(), "relay: configuration reloaded")
	require.Contains(t, logs.String(), "changed=max-tags needs_restart=pending-max")

	write("  max-tags: 2\n  max-tagz: 1\n")
	requests <- struct{}{}
	require.Eventually(t, func() bool { return metric("cn_config_reload_failures_total") == 1 }, 10*time.Second, 10*time.Millisecond, "%s", &logs)
	require.Equal(t, 2, metric("cn_config_generation"))
	require.True(t, publish(3), "a refused file changes nothing")
}
