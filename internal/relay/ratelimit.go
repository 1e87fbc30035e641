package relay

import (
	"sync"
	"sync/atomic"
	"time"
)

// limiter is a set of token buckets, one per key (a client address or a pubkey).
// A bucket that has filled up again is indistinguishable from a new one, so forgetIdle
// forgets it; memory is bounded by the keys active within one refill period.
type limiter struct {
	rate atomic.Pointer[Rate] // live: setRate
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate Rate, now func() time.Time) *limiter {
	l := &limiter{now: now, buckets: make(map[string]*bucket)}
	l.setRate(rate)
	return l
}

// setRate makes rate the limit from now on; the buckets keep their tokens
// (at most the new burst once refilled).
func (l *limiter) setRate(rate Rate) { l.rate.Store(&rate) }

// allow takes one token from key's bucket and reports whether there was one.
// A disabled rate allows everything.
func (l *limiter) allow(key string) bool {
	rate := *l.rate.Load()
	if !rate.Enabled() {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(rate.Burst), last: now}
		l.buckets[key] = b
	} else {
		b.refill(rate, now)
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *bucket) refill(r Rate, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens += elapsed.Seconds() * r.PerSecond
		b.last = now
	}
	b.tokens = min(float64(r.Burst), b.tokens) // a burst lowered by a reload binds at once
}

// forgetIdle drops the buckets that are full again.
func (l *limiter) forgetIdle() {
	rate := *l.rate.Load()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, b := range l.buckets {
		b.refill(rate, now)
		if b.tokens >= float64(rate.Burst) {
			delete(l.buckets, k)
		}
	}
}

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
