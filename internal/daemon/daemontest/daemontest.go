// Package daemontest runs a daemon's command line inside a test, as its main
// would, and stops it the way SIGTERM does.
package daemontest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"
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
