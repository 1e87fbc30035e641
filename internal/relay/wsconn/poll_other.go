//go:build !(linux && (amd64 || arm64))

package wsconn

// Without epoll every connection is read by a goroutine of its own.
const pollerAvailable = false

type poller struct{}

func thePoller() *poller            { return nil }
func (p *poller) add(c *Conn) error { return nil }
func (p *poller) rearm(c *Conn)     {}
func (p *poller) remove(c *Conn)    {}
