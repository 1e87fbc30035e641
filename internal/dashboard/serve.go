package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// CheckExposure refuses to serve on an address other hosts can reach without a
// token: the page shows the node's internals.
func CheckExposure(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", listen, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the dashboard on %s would be reachable from other hosts: give it a bearer token (--token-file), or bind it to 127.0.0.1", listen)
}

// ReadToken reads a token file (one line, at least 16 characters).
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", errors.New("token file: the token must be at least 16 characters")
	}
	return token, nil
}

// Serve samples and serves on ln until ctx is done.
func Serve(ctx context.Context, ln net.Listener, d *Dashboard, token string) error {
	srv := &http.Server{Handler: d.Handler(token), ReadHeaderTimeout: 5 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // open event streams end with the context below
		return nil
	})
	g.Go(func() error {
		srv.BaseContext = func(net.Listener) context.Context { return gctx }
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("dashboard: %w", err)
		}
		return nil
	})
	return g.Wait()
}
