package relay

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// healthTimeout bounds the database check of /healthz.
	healthTimeout = time.Second
	// healthTTL is how long /healthz reuses the result of a database check.
	healthTTL = time.Second
)

// healthCheck is the database check of /healthz. Its result is reused for ttl and
// one check runs at a time (further callers wait for it), so however often
// /healthz is asked, the database sees about one Store.Ping per ttl at most.
type healthCheck struct {
	ping    func(context.Context) error
	timeout time.Duration // bounds one ping
	ttl     time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	checked time.Time // when err was found; zero before the first check
	err     error
}

func newHealthCheck(ping func(context.Context) error, log *slog.Logger) *healthCheck {
	return &healthCheck{ping: ping, timeout: healthTimeout, ttl: healthTTL, log: log}
}

// check returns nil when the database answered a ping at most ttl ago, else the
// reason it did not, in one line. It logs when the answer changes.
func (h *healthCheck) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checked.IsZero() && time.Since(h.checked) < h.ttl {
		return h.err
	}
	// Not the request's context: a client that hangs up must not fail the check.
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	err := h.ping(ctx)
	cancel()
	switch {
	case err != nil && h.err == nil:
		h.log.Warn("health check: database unreachable", "err", err)
	case err == nil && h.err != nil:
		h.log.Info("health check: database answers again")
	}
	h.checked, h.err = time.Now(), err
	return err
}
