//go:build communityapp

// Package communityapp drives a real NIP-29 community web app, Flotilla
// (coracle-social/flotilla, built from its source by
// test/community-app/build-flotilla.sh), in headless Chromium against the
// dev node (cnctl dev) as a newcomer, a member, an admin and an outsider would
// use it: test/community-app/flotilla.mjs holds the scenarios. `make
// test-community-app` builds the app (once: it is cached), installs the
// test's npm packages and runs it with -tags communityapp; `make test` never
// builds it.
package communityapp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// repoFile is a path under the repository root.
func repoFile(rel string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

// startDevNode runs bin (cnctl) dev on a fresh database with every listener
// on a free loopback port, no bridge, a fresh node key and admin as its only
// admin, plus extra flags. It returns the relay's ws:// URL once /healthz
// answers; the node is stopped with SIGTERM when the test ends, and the end
// of its log shown if the test failed.
func startDevNode(t *testing.T, bin, admin string, extra ...string) string {
	t.Helper()
	db := pgtest.New(t)
	addr := testkit.FreeAddr(t)
	args := []string{"dev", "--database-url", db.URL, "--relay-listen", addr,
		"--relay-metrics-listen", "127.0.0.1:0", "--indexer-listen", "127.0.0.1:0",
		"--moderator-listen", "127.0.0.1:0", "--trust-listen", "127.0.0.1:0",
		"--dashboard-listen", "127.0.0.1:0", "--no-bridge",
		"--node-key-file", filepath.Join(t.TempDir(), "node.key"), "--admin-pubkeys", admin,
		"--blossom-dir", filepath.Join(t.TempDir(), "blobs")}
	var logs testkit.Buffer
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(daemontest.StopTimeout):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("cnctl dev did not stop within %s of SIGTERM", daemontest.StopTimeout)
		}
		if t.Failed() {
			lines := strings.Split(logs.String(), "\n")
			if len(lines) > 200 {
				lines = lines[len(lines)-200:]
			}
			t.Logf("cnctl dev %s (last %d lines of its log):\n%s", strings.Join(extra, " "), len(lines), strings.Join(lines, "\n"))
		}
	})
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	return "ws://" + addr
}

// TestFlotilla runs test/community-app/flotilla.mjs against two dev nodes,
// one with open membership (the default) and one invite-only, sharing one
// admin whose secret key the scenarios use to act as the admin in the app.
// Every step must pass; the script prints each step and, on a failure, the
// WebSocket frames the app exchanged with the relay.
func TestFlotilla(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not installed: make test-community-app needs Node.js 20 or later and npm")
	dir := repoFile("test/community-app")
	_, err = os.Stat(filepath.Join(dir, "node_modules"))
	require.NoError(t, err, "test/community-app has no node_modules: make test-community-app installs them (npm ci)")
	build := os.Getenv("CN_FLOTILLA_BUILD")
	require.NotEmpty(t, build, "CN_FLOTILLA_BUILD is not set: make test-community-app builds Flotilla and sets it")
	_, err = os.Stat(filepath.Join(build, "index.html"))
	require.NoError(t, err, "no Flotilla build in %s: make test-community-app builds it", build)

	bin := filepath.Join(t.TempDir(), "cnctl")
	gobuild := exec.Command("go", "build", "-o", bin, "./cmd/cnctl")
	gobuild.Dir = repoFile(".")
	out, err := gobuild.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/cnctl: %s", out)

	admin := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(admin)
	open := startDevNode(t, bin, adminPK)
	invite := startDevNode(t, bin, adminPK, "--membership", "invite")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "flotilla.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CN_FLOTILLA_BUILD="+build, "CN_OPEN_RELAY="+open,
		"CN_INVITE_RELAY="+invite, "CN_ADMIN_SECRET="+admin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	require.NoError(t, cmd.Run(), "flotilla.mjs: a step failed (see its output above)")
}
