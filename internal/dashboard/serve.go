package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/platform/httpserver"
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

// ReadToken reads a token file (one line, at least 16 characters). Like the
// node key, the file must be readable by its owner only: a token others can
// read protects nothing.
func ReadToken(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s is readable by others (mode %04o): chmod 600 it", path, info.Mode().Perm())
	}
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
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Run(gctx) })
	g.Go(func() error {
		if err := httpserver.Serve(gctx, ln, d.Handler(token)); err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		return nil
	})
	return g.Wait()
}
