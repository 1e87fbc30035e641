//go:build !(linux && (amd64 || arm64))

package wsconn

import "net"

// Without epoll every connection is kept as its net.Conn and read by a
// goroutine of its own; no descriptor is ever bare.
const pollerAvailable = false

type poller struct{}

func thePoller() *poller                         { return nil }
func (p *poller) add(c *Conn) error              { return nil }
func (p *poller) rearm(c *Conn)                  {}
func (p *poller) remove(c *Conn)                 {}
func (p *poller) unregister(c *Conn)             {}
func forgetWriter(c *Conn)                       {}
func detach(net.Conn) (int32, bool)              { return -1, false }
func (c *Conn) dupConn() net.Conn                { return nil }
func (c *Conn) writeFD(b []byte) error           { return net.ErrClosed }
func (c *Conn) writeNowFD(b []byte) (int, error) { return 0, net.ErrClosed }

func (c *Conn) writeBuffers(bufs net.Buffers) error { return net.ErrClosed }
func readFD(int32, []byte) (int, error)             { return 0, net.ErrClosed }
func closeDescriptor(int32)                         {}
