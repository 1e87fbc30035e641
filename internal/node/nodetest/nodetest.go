// Package nodetest runs the node's daemons in a test the way their commands
// do (package node), on free local ports.
package nodetest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/testkit"
)

// StopTimeout bounds how long a relay may take to stop once cancelled.
const StopTimeout = 30 * time.Second

// RelayConfig is relay.DefaultConfig listening on free local ports (WebSocket
// and metrics), without rate limits.
func RelayConfig(t testing.TB) relay.Config {
	t.Helper()
	cfg := relay.DefaultConfig()
	cfg.Listen, cfg.MetricsListen = testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	return cfg
}

// StartRelay runs node.Relay(opts), what the relay command runs, until the
// test ends, and returns once its /healthz answers 200 (the test fails if the
// relay returns first, or does not answer within StopTimeout). At cleanup it
// cancels the relay and waits for it: a clean stop returns nil, and an error
// fails the test, unless mayFail (a relay whose database crashed under it),
// when it is logged.
func StartRelay(t testing.TB, opts node.RelayOptions, mayFail bool) {
	t.Helper()
	if err := opts.Relay.Validate(); err != nil {
		t.Fatalf("relay config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error // the relay's answer, once done is closed
	go func() { defer close(done); err = node.Relay(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			switch {
			case err == nil:
			case mayFail:
				if !errors.Is(err, context.Canceled) {
					t.Logf("relay stopped: %v", err)
				}
			default:
				t.Errorf("relay stopped: %v", err)
			}
		case <-time.After(StopTimeout):
			t.Errorf("relay did not stop within %s", StopTimeout)
		}
	})
	deadline := time.Now().Add(StopTimeout)
	for {
		select {
		case <-done:
			t.Fatalf("relay stopped: %v", err)
		default:
		}
		resp, gerr := http.Get("http://" + opts.Relay.Listen + "/healthz")
		if gerr == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay does not answer /healthz within %s (last: %v)", StopTimeout, gerr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
