//go:build !unix

package relay

import "net"

// takeQueued takes nothing where accept4 is not at hand: closing the listener
// drops its accept queue.
func takeQueued(net.Listener) []net.Conn { return nil }
