package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHealthzChecksDatabase: /healthz answers 200 while the database answers a
// ping in time, else 503 with the reason on one line.
func TestHealthzChecksDatabase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		ping     func(context.Context) error
		wantCode int
		wantBody string
	}{
		{"answers", func(context.Context) error { return nil }, http.StatusOK, "ok\n"},
		{"refuses", func(context.Context) error { return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused") },
			http.StatusServiceUnavailable, "database unreachable: dial tcp 127.0.0.1:5432: connect: connection refused\n"},
		{"multi-line error", func(context.Context) error { return errors.New("first\nsecond") },
			http.StatusServiceUnavailable, "database unreachable: first second\n"},
		{"hangs", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			http.StatusServiceUnavailable, "database unreachable: context deadline exceeded\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			store.pingHook = tc.ping
			tr := startRelay(t, store, nil, func(r *Relay) { r.health.timeout = 50 * time.Millisecond })
			start := time.Now()
			resp, err := http.Get(tr.http + "/healthz")
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.wantCode, resp.StatusCode)
			require.Equal(t, tc.wantBody, string(body))
			require.Less(t, time.Since(start), 2*time.Second)
		})
	}
}

// TestHealthCheckCaches: concurrent checks share one ping, and a result is reused
// until it is ttl old.
func TestHealthCheckCaches(t *testing.T) {
	t.Parallel()
	var pings atomic.Int32
	var failing atomic.Bool
	release := make(chan struct{})
	h := newHealthCheck(func(context.Context) error {
		pings.Add(1)
		<-release
		if failing.Load() {
			return errors.New("down")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	h.ttl = time.Hour

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range cap(errs) {
		wg.Go(func() { errs <- h.check() })
	}
	time.Sleep(20 * time.Millisecond) // most wait behind the first ping, the rest find its result
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), pings.Load(), "one ping for concurrent checks")

	failing.Store(true)
	require.NoError(t, h.check(), "a fresh result is reused")
	require.Equal(t, int32(1), pings.Load())

	h.ttl = 0
	require.EqualError(t, h.check(), "down")
	require.Equal(t, int32(2), pings.Load())
	failing.Store(false)
	require.NoError(t, h.check(), "recovers")
}
