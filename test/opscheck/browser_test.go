//go:build ops

package opscheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// chromium finds Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed (make test-ops installs Debian's chromium)")
	return ""
}

// dashboardProcess runs `cnctl dashboard` as a real process on listen.
func dashboardProcess(t *testing.T, cnctl, dbURL, listen, relayMetrics string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(cnctl, "dashboard", "--database-url", dbURL, "--listen", listen, "--relay-metrics", relayMetrics)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestStatusPageInBrowser loads the status page in headless Chromium, publishes
// events and sees the head seq and a consumer's backlog change without a
// reload; kills the dashboard process, sees the page say so, restarts it and
// sees the page reconnect by itself. It keeps a screenshot (ops/status-page.png
// when CN_UPDATE_SCREENSHOT=1).
func TestStatusPageInBrowser(t *testing.T) {
	browser := chromium(t)
	n := startNode(t)
	// A consumer that is registered but not running: its backlog grows.
	_, err := n.db.Pool.Exec(context.Background(), "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('trust-v1', 0)")
	require.NoError(t, err)
	n.traffic(t, 1)

	cnctl := filepath.Join(t.TempDir(), "cnctl")
	build := exec.Command("go", "build", "-o", cnctl, "./cmd/cnctl")
	build.Dir = repoFile(t, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	listen := testkit.FreeAddr(t)
	dash := dashboardProcess(t, cnctl, n.db.URL, listen, "http://"+n.metrics+"/metrics")

	ctx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 1100),
		chromedp.UserDataDir(t.TempDir()))...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
	require.NoError(t, err)

	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return strings.TrimSpace(s)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed: %s", what)
			}
			time.Sleep(100 * time.Millisecond) // polling the page's DOM
		}
	}
	require.Eventually(t, func() bool {
		return chromedp.Do(ctx, chromedp.Navigate("http://"+listen+"/")) == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#consumer-trust-v1"))))
	waitFor("live", func() bool { return text("#conn-state") == "live" })
	head := text("#head-seq")
	backlog := text(`#consumer-trust-v1 [data-field="backlog"]`)

	for i := range 3 {
		n.traffic(t, i)
	}
	waitFor("a new head seq", func() bool { return text("#head-seq") != head })
	waitFor("a new backlog", func() bool { return text(`#consumer-trust-v1 [data-field="backlog"]`) != backlog })
	reloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`performance.getEntriesByType("navigation").length !== 1`))
	require.NoError(t, err)
	require.False(t, reloaded, "no reload")

	// Read pools: the replica serves the REQs, usable and with a lag; the
	// primary has its row too.
	replicaRow := fmt.Sprintf(`#pools tr[data-pool=%q]`, n.replica)
	waitFor("the replica usable", func() bool { return text(replicaRow+` [data-field="state"]`) == "usable" })
	require.NotEqual(t, "–", text(replicaRow+` [data-field="lag"]`))
	require.Equal(t, "primary", text(`#pools tr[data-pool="primary"] td:nth-child(2)`))
	noPools, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("pools-none").hidden`))
	require.NoError(t, err)
	require.True(t, noPools, "the page does not say no relay reads from replicas")
	waitFor("replica reads per second and their mean duration", func() bool {
		n.traffic(t, 20)
		return text(replicaRow+` [data-field="reads"]`) != "0.00" && strings.HasSuffix(text(replicaRow+` [data-field="latency"]`), " ms")
	})

	// Kill the dashboard: the page says it is reconnecting; restart it: live again.
	require.NoError(t, dash.Process.Signal(syscall.SIGKILL))
	_, _ = dash.Process.Wait()
	waitFor("reconnecting", func() bool { return strings.HasPrefix(text("#conn-state"), "reconnecting") })
	dashboardProcess(t, cnctl, n.db.URL, listen, "http://"+n.metrics+"/metrics")
	waitFor("live again", func() bool { return text("#conn-state") == "live" })
	head = text("#head-seq")
	n.traffic(t, 5)
	waitFor("updates after the reconnect", func() bool { return text("#head-seq") != head })

	// Let the charts gather a few points, then keep a picture.
	for i := range 5 {
		n.traffic(t, 10+i)
		time.Sleep(400 * time.Millisecond) // points a few samples apart for the charts
	}
	// The page did all that under its Content-Security-Policy (no inline
	// script, no framing) and broke no rule of it.
	csp, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.cnCSPViolations)`))
	require.NoError(t, err)
	require.Equal(t, "[]", csp)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(t.TempDir(), "status-page.png")
	if os.Getenv("CN_UPDATE_SCREENSHOT") == "1" {
		shot = repoFile(t, "ops/status-page.png")
	}
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot: %s", shot)
}
