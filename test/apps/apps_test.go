//go:build apps

// Package appcheck runs the tests of test/apps, where stock Nostr app
// libraries (nostr-tools, NDK) talk to the node's relay with node's test
// runner, against a real relay: bin/relay built from this tree and started
// with its default flags on a fresh migrated database. `make test-apps`
// installs the libraries (npm ci in test/apps) and runs it with -tags apps;
// `make test` needs only Go and never builds it.
package appcheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// repoFile is a path under the repository root.
func repoFile(rel string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

// startRelay builds cmd/relay and runs it on a fresh database with the
// default flags (only the addresses are chosen: --listen on a free loopback
// port, and no metrics listener, whose default address another relay on the
// machine may hold) and a fresh node key (--node-key-file, so that it hosts
// NIP-29 groups). It returns the relay's ws:// URL; the relay is stopped
// with SIGTERM when the test ends, and its log is shown if the test failed.
func startRelay(t *testing.T, extra ...string) string {
	t.Helper()
	db := pgtest.New(t)
	bin := filepath.Join(t.TempDir(), "relay")
	build := exec.Command("go", "build", "-o", bin, "./cmd/relay")
	build.Dir = repoFile(".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/relay: %s", out)

	// A node key, as every deployment (and make run) has: the relay then hosts
	// NIP-29 groups (nip29.test.mjs).
	keyFile := filepath.Join(t.TempDir(), "node.key")
	_, _, err = nodekey.LoadOrGenerate(keyFile)
	require.NoError(t, err)

	addr := testkit.FreeAddr(t)
	var logs testkit.Buffer
	// extra comes last: a flag given twice takes its last value (TestNIP43App
	// names a key it knows).
	relay := exec.Command(bin, append([]string{"--database-url", db.URL, "--listen", addr, "--metrics-listen", "", "--node-key-file", keyFile}, extra...)...)
	relay.Stdout, relay.Stderr = &logs, &logs
	require.NoError(t, relay.Start())
	exited := make(chan error, 1)
	go func() { exited <- relay.Wait() }()
	t.Cleanup(func() {
		_ = relay.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("relay stopped with %v", err)
			}
		case <-time.After(daemontest.StopTimeout):
			_ = relay.Process.Kill()
			<-exited
			t.Errorf("relay did not stop within %s of SIGTERM", daemontest.StopTimeout)
		}
		if t.Failed() {
			t.Logf("relay log:\n%s", logs.String())
		}
	})
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	return "ws://" + addr
}

// tapCount returns the number on the TAP summary line "# <name> N" that node's
// test runner prints at the end, or fails the test when there is none.
func tapCount(t *testing.T, tap, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^# ` + name + ` (\d+)$`).FindStringSubmatch(tap)
	require.NotNil(t, m, "no %q line in the test runner's summary", name)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestStockApps runs every test of test/apps (node --test) against a relay
// with default flags, and requires each one to pass: none failed, skipped,
// cancelled or left to do.
func TestStockApps(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not installed: make test-apps needs Node.js 20 or later and npm")
	dir := repoFile("test/apps")
	_, err = os.Stat(filepath.Join(dir, "node_modules"))
	require.NoError(t, err, "test/apps has no node_modules: make test-apps installs them (npm ci)")
	url := startRelay(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --test-force-exit: NDK keeps a timer per relay (its validation ratio,
	// every 30 s) that would keep the test process alive for ever.
	cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=tap")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CN_APPS_RELAY_URL="+url)
	var tap bytes.Buffer
	cmd.Stdout = &tap
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	t.Logf("node --test against %s:\n%s", url, tap.String())
	require.NoError(t, runErr, "node --test")
	summary := tap.String()
	tests := tapCount(t, summary, "tests")
	require.Positive(t, tests, "node --test found no test")
	require.Equal(t, tests, tapCount(t, summary, "pass"), "every test passes")
	for _, name := range []string{"fail", "cancelled", "skipped", "todo"} {
		require.Zero(t, tapCount(t, summary, name), name)
	}
}

// TestNIP43App runs test/apps/nip43-join.app.mjs (a nostr-tools app that
// follows only NIP-43) against a relay with --membership invite, a node key
// and one admin, whose secret key the app gets to request an invite.
func TestNIP43App(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not installed: make test-apps needs Node.js 20 or later and npm")
	dir := repoFile("test/apps")
	_, err = os.Stat(filepath.Join(dir, "node_modules"))
	require.NoError(t, err, "test/apps has no node_modules: make test-apps installs them (npm ci)")
	keyFile := filepath.Join(t.TempDir(), "node.key")
	_, err = nodekey.Generate(keyFile)
	require.NoError(t, err)
	admin := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(admin)
	url := startRelay(t, "--node-key-file", keyFile, "--membership", "invite", "--admin-pubkeys", adminPK)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=tap", "nip43-join.app.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CN_APPS_NIP43_URL="+url, "CN_APPS_NIP43_ADMIN="+admin)
	var tap bytes.Buffer
	cmd.Stdout = &tap
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	t.Logf("node --test nip43-join.app.mjs against %s:\n%s", url, tap.String())
	require.NoError(t, runErr, "node --test")
	require.Equal(t, 1, tapCount(t, tap.String(), "pass"))
	for _, name := range []string{"fail", "cancelled", "skipped", "todo"} {
		require.Zero(t, tapCount(t, tap.String(), name), name)
	}
}

// TestBlossomApp runs test/apps/blossom.app.mjs (blossom-client-sdk: upload,
// list, download, mirror, delete) against a relay with --blossom-dir,
// --blossom-mirror-private (the mirrored blob is on a local server) and
// otherwise default flags (open membership).
func TestBlossomApp(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not installed: make test-apps needs Node.js 20 or later and npm")
	dir := repoFile("test/apps")
	_, err = os.Stat(filepath.Join(dir, "node_modules"))
	require.NoError(t, err, "test/apps has no node_modules: make test-apps installs them (npm ci)")
	url := startRelay(t, "--blossom-dir", t.TempDir(), "--blossom-mirror-private")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=tap", "blossom.app.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CN_APPS_BLOSSOM_RELAY="+url)
	var tap bytes.Buffer
	cmd.Stdout = &tap
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	t.Logf("node --test blossom.app.mjs against %s:\n%s", url, tap.String())
	require.NoError(t, runErr, "node --test")
	require.Equal(t, 1, tapCount(t, tap.String(), "pass"))
	for _, name := range []string{"fail", "cancelled", "skipped", "todo"} {
		require.Zero(t, tapCount(t, tap.String(), name), name)
	}
}
