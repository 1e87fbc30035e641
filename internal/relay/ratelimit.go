package relay

import (
	"sync"
	"sync/atomic"
)

// connCounter counts open connections per client address.
type connCounter struct {
	max atomic.Int64 // live: setMax

	mu sync.Mutex
	n  map[string]int
}

func newConnCounter(max int) *connCounter {
	c := &connCounter{n: make(map[string]int)}
	c.setMax(max)
	return c
}

// setMax makes max the limit of new connections; open ones stay.
func (c *connCounter) setMax(max int) { c.max.Store(int64(max)) }

// acquire counts one more connection from ip, unless ip is at the limit.
func (c *connCounter) acquire(ip string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(c.n[ip]) >= c.max.Load() {
		return false
	}
	c.n[ip]++
	return true
}

// release counts one connection from ip fewer.
func (c *connCounter) release(ip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip] <= 1 {
		delete(c.n, ip)
		return
	}
	c.n[ip]--
}
