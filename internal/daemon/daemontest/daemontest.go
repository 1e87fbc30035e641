// Package daemontest runs a daemon's command line inside a test, as its main
// would, and stops it the way SIGTERM does.
package daemontest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
)

// StopTimeout bounds how long a daemon may take to stop once cancelled.
const StopTimeout = 10 * time.Second

// Start runs app with args in the background. stop cancels it, as SIGTERM
// does, and fails the test unless it returns nil within StopTimeout; it runs
// at the latest when the test ends, and only once.
func Start(t testing.TB, app *cli.App, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.RunContext(ctx, args) }()
	var once sync.Once
	stop = func() {
		t.Helper()
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s stopped with an error: %v", app.Name, err)
				}
			case <-time.After(StopTimeout):
				t.Errorf("%s did not stop within %s", app.Name, StopTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// WaitOK waits until a GET of url answers 200 (the daemon is up), for at most
// StopTimeout, and returns the body.
func WaitOK(t testing.TB, url string) string {
	t.Helper()
	deadline := time.Now().Add(StopTimeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = fmt.Errorf("status %d, %v", resp.StatusCode, rerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitLease waits until the consumer named holds its lease in
// cn_relay.consumer_offsets (a running instance owns it), for at most
// StopTimeout.
func WaitLease(t testing.TB, pool *pgxpool.Pool, consumer string) {
	t.Helper()
	deadline := time.Now().Add(StopTimeout)
	for {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM cn_relay.consumer_offsets
			WHERE consumer = $1 AND owner_id IS NOT NULL`, consumer).Scan(&n)
		if err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no lease after %s (err %v)", consumer, StopTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ReloadCase is a configuration reload checked by CheckReload: the daemon
// starts reading Start from File (its --config), then File holds Changed (a
// changed live flag, --log-level, and a changed restart flag, Restart),
// then Bad (refused whole).
type ReloadCase struct {
	Name       string // the daemon ("indexer"): its log lines say "<name>: configuration ..."
	File       string
	Start      string
	Changed    string
	Restart    string // the restart flag Changed changes
	Bad        string
	MetricsURL string // where /metrics is served
	Args       []string
	NewApp     func(stdout, stderr io.Writer) *cli.App
}

// CheckReload runs tc: the first reload is applied (cn_config_generation 2,
// one log line naming log-level as changed and Restart as needing a
// restart), the second is refused (cn_config_reload_failures_total 1, the
// generation stays 2, one error line).
func CheckReload(t *testing.T, tc ReloadCase) {
	t.Helper()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(tc.File, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tc.Start)
	requests := make(chan struct{})
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(daemon.WithReload(context.Background(), tc.NewApp, tc.Args, requests))
	done := make(chan error, 1)
	go func() { done <- tc.NewApp(io.Discard, logs).RunContext(ctx, tc.Args) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s stopped with an error: %v", tc.Name, err)
			}
		case <-time.After(StopTimeout):
			t.Errorf("%s did not stop", tc.Name)
		}
	}()
	waitMetric := func(name string, want int) {
		t.Helper()
		deadline := time.Now().Add(StopTimeout)
		for {
			got, err := Metric(tc.MetricsURL, name)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s = %d (%v), want %d; logs:\n%s", tc.Name, name, got, err, want, logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitMetric("cn_config_generation", 1)
	write(tc.Changed)
	requests <- struct{}{}
	waitMetric("cn_config_generation", 2)
	applied := `"msg":"` + tc.Name + `: configuration reloaded"`
	if n := strings.Count(logs.String(), applied); n != 1 {
		t.Fatalf("%d lines %s, want 1:\n%s", n, applied, logs)
	}
	for _, want := range []string{`"changed":"log-level"`, `"needs_restart":"` + tc.Restart + `"`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the reload's line lacks %s:\n%s", want, logs)
		}
	}
	write(tc.Bad)
	requests <- struct{}{}
	waitMetric("cn_config_reload_failures_total", 1)
	waitMetric("cn_config_generation", 2)
	if n := strings.Count(logs.String(), `"msg":"`+tc.Name+`: configuration reload refused; the running configuration stays"`); n != 1 {
		t.Fatalf("%d refusal lines, want 1:\n%s", n, logs)
	}
}

// Metric returns the value of the unlabelled metric name served at url.
func Metric(url, name string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("no metric %s at %s", name, url)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
