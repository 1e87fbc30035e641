package relay

import (
	"sync"
	"time"
)

// limiter is a set of token buckets, one per key (a client address or a pubkey).
// A bucket that has filled up again is indistinguishable from a new one, so forgetIdle
// forgets it; memory is bounded by the keys active within one refill period.
type limiter struct {
	rate Rate
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate Rate, now func() time.Time) *limiter {
	return &limiter{rate: rate, now: now, buckets: make(map[string]*bucket)}
}

// allow takes one token from key's bucket and reports whether there was one.
// A disabled rate allows everything.
func (l *limiter) allow(key string) bool {
	if !l.rate.Enabled() {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(l.rate.Burst), last: now}
		l.buckets[key] = b
	} else {
		b.refill(l.rate, now)
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *bucket) refill(r Rate, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(float64(r.Burst), b.tokens+elapsed.Seconds()*r.PerSecond)
		b.last = now
	}
}

// forgetIdle drops the buckets that are full again.
func (l *limiter) forgetIdle() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, b := range l.buckets {
		b.refill(l.rate, now)
		if b.tokens >= float64(l.rate.Burst) {
			delete(l.buckets, k)
		}
	}
}

// connCounter counts open connections per client address.
type connCounter struct {
	max int

	mu sync.Mutex
	n  map[string]int
}

func newConnCounter(max int) *connCounter {
	return &connCounter{max: max, n: make(map[string]int)}
}

// acquire counts one more connection from ip, unless ip is at the limit.
func (c *connCounter) acquire(ip string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip] >= c.max {
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
