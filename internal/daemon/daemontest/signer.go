package daemontest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/nodekey"
)

// KeyFiles writes a fresh node key file (mode 0600) and a key file readable by
// others (which the daemons that sign refuse), both removed when the test ends.
func KeyFiles(t testing.TB) (key, loose string) {
	t.Helper()
	key = filepath.Join(t.TempDir(), "node.key")
	if _, err := nodekey.Generate(key); err != nil {
		t.Fatalf("node key: %v", err)
	}
	loose = filepath.Join(t.TempDir(), "loose.key")
	if err := os.WriteFile(loose, []byte("ab\n"), 0o644); err != nil {
		t.Fatalf("loose key: %v", err)
	}
	return key, loose
}

// ConsumerDaemon is a consumer daemon's command line under test: its name
// (argv[0]), a fresh app, the metric its /metrics must export, and the
// consumer whose lease it takes.
type ConsumerDaemon struct {
	Name     string
	NewApp   func(stdout, stderr io.Writer) *cli.App
	Metric   string
	Consumer string
}

// ServesAndStops runs the daemon with --listen addr and args against pool's
// database: /healthz and /metrics (with Metric) answer, the consumer takes its
// lease, and a cancel (as SIGTERM) stops it cleanly.
func (d ConsumerDaemon) ServesAndStops(t testing.TB, pool *pgxpool.Pool, addr string, args ...string) {
	t.Helper()
	stop := Start(t, d.NewApp(io.Discard, io.Discard), append([]string{d.Name, "--listen", addr}, args...)...)
	WaitOK(t, "http://"+addr+"/healthz")
	if body := WaitOK(t, "http://"+addr+"/metrics"); !strings.Contains(body, d.Metric) {
		t.Fatalf("%s's /metrics has no %s", d.Name, d.Metric)
	}
	WaitLease(t, pool, d.Consumer)
	stop()
}

// Refuses requires the daemon to refuse each command line (argv without the
// name) with an error, before it serves anything.
func (d ConsumerDaemon) Refuses(t testing.TB, lines ...[]string) {
	t.Helper()
	for _, args := range lines {
		if err := d.NewApp(io.Discard, io.Discard).RunContext(context.Background(), append([]string{d.Name}, args...)); err == nil {
			t.Errorf("%s %v: no error", d.Name, args)
		}
	}
}
