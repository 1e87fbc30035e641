// Package httpserver serves a daemon's HTTP endpoints (APIs, /healthz,
// /metrics) on a listener for as long as a context lives.
package httpserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds the graceful shutdown after ctx ends; requests still
// running then (long-lived streams) are cut off.
const ShutdownTimeout = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down gracefully. Request
// contexts derive from ctx, so long-lived handlers (event streams) end with it.
// It returns nil after a shutdown and the server's error otherwise.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Pinger is what Healthz needs of a database pool.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Healthz answers 200 "ok" when the database answers a ping within a second,
// 503 with the reason otherwise: the /healthz of the consumer daemons.
func Healthz(db Pinger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := db.Ping(ctx); err != nil {
			http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
