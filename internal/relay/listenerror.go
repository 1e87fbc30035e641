package relay

import (
	"errors"
	"fmt"
	"os"
)

// ListenError is an address Run could not listen on: Config.Listen, or
// Config.MetricsListen when Metrics. Its text names the address and the
// system's reason ("listen on metrics address 127.0.0.1:7778: address already
// in use"); the command that set the address adds which setting to change.
type ListenError struct {
	Metrics bool
	Addr    string
	Err     error
}

func (e *ListenError) Error() string {
	what := "relay"
	if e.Metrics {
		what = "metrics"
	}
	reason := e.Err
	var sys *os.SyscallError
	if errors.As(reason, &sys) {
		reason = sys.Err // "address already in use", without "listen tcp ADDR: bind:"
	}
	return fmt.Sprintf("listen on %s address %s: %v", what, e.Addr, reason)
}

func (e *ListenError) Unwrap() error { return e.Err }
