package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveProfiles serves Go's runtime profiles (net/http/pprof, /debug/pprof/)
// on addr, an address of its own (--debug-listen), until ctx ends: profiling
// is opt-in and never exposed on the public listener. An empty addr starts
// nothing. The listener is opened before Start returns, so a bad address is an
// error here rather than a log line later.
func serveProfiles(ctx context.Context, addr string, logger *slog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("debug server stopped", "err", err)
		}
	}()
	logger.Info("serving profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}
