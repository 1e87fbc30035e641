package httpserver

import (
	"context"
	"net"
	"syscall"
)

// Listen listens on the TCP address addr. With reusePort the socket is bound
// with SO_REUSEPORT (Linux, the BSDs): another process of the same user that
// sets it too may bind the same address while this one listens, and the
// kernel spreads new connections over both. That is how a new process takes
// over an address before the old one stops (docs/operations.md, "Restarts
// without downtime"); without it a second bind fails with "address already in
// use", which is what keeps two unrelated nodes off one port by mistake.
func Listen(ctx context.Context, addr string, reusePort bool) (net.Listener, error) {
	lc := net.ListenConfig{}
	if reusePort {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = setReusePort(fd) }); err != nil {
				return err
			}
			return serr
		}
	}
	return lc.Listen(ctx, "tcp", addr)
}
