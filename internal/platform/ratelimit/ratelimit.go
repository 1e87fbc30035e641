// Package ratelimit is a set of token buckets keyed by client address or
// pubkey, with the wait an HTTP answer's Retry-After needs, and the key an
// address counts under (an IPv6 client by its /64). The relay's per-IP and
// per-pubkey limits and Blossom's per-address limits are its users; rates are
// live (SetRate), so a configuration reload changes them in place.
package ratelimit

import (
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Rate is a token bucket: PerSecond tokens are added per second up to Burst.
// A zero PerSecond disables the limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Enabled reports whether the rate limits anything.
func (r Rate) Enabled() bool { return r.PerSecond > 0 }

// Limiter holds one bucket per key. A bucket that has filled up again is
// indistinguishable from a new one, so ForgetIdle (called by Allow now and
// then) forgets it: memory is bounded by the keys active within one refill
// period. Safe for concurrent use.
type Limiter struct {
	rate atomic.Pointer[Rate]
	now  func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	calls   int
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a Limiter at rate; now nil is time.Now.
func New(rate Rate, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now, buckets: make(map[string]*bucket)}
	l.SetRate(rate)
	return l
}

// SetRate makes rate the limit from now on; the buckets keep their tokens
// (at most the new burst once refilled).
func (l *Limiter) SetRate(rate Rate) { l.rate.Store(&rate) }

// forgetEvery is how many Allow calls pass between two sweeps of full buckets.
const forgetEvery = 4096

// Allow takes one token from key's bucket. It reports whether there was one
// and, when not, how long until there is (at least a second, whole seconds,
// as Retry-After says it). A disabled rate allows everything.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	rate := *l.rate.Load()
	if !rate.Enabled() {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls++; l.calls >= forgetEvery {
		l.calls = 0
		l.forgetIdleLocked(rate, now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(rate.Burst), last: now}
		l.buckets[key] = b
	} else {
		b.refill(rate, now)
	}
	if b.tokens < 1 {
		wait := math.Ceil((1 - b.tokens) / rate.PerSecond)
		return false, time.Duration(max(wait, 1)) * time.Second
	}
	b.tokens--
	return true, 0
}

func (b *bucket) refill(r Rate, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens += elapsed.Seconds() * r.PerSecond
		b.last = now
	}
	b.tokens = min(float64(r.Burst), b.tokens)
}

// ForgetIdle drops the buckets that are full again.
func (l *Limiter) ForgetIdle() {
	rate := *l.rate.Load()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetIdleLocked(rate, now)
}

func (l *Limiter) forgetIdleLocked(rate Rate, now time.Time) {
	for k, b := range l.buckets {
		b.refill(rate, now)
		if b.tokens >= float64(rate.Burst) {
			delete(l.buckets, k)
		}
	}
}

// Len is the number of buckets held.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// AddrKey is what a per-address limit counts for a client address, as the
// relay's do: an IPv4 address (also when IPv4-mapped, or with a port) as is,
// an IPv6 address as its /64, which one client typically owns in whole, and
// anything unparsable as the raw string.
func AddrKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		ap, perr := netip.ParseAddrPort(ip)
		if perr != nil {
			return ip
		}
		addr = ap.Addr()
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	prefix, err := addr.Prefix(64)
	if err != nil {
		return ip
	}
	return prefix.String()
}
