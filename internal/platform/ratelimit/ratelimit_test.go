package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimiterBurstRefillRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := New(Rate{PerSecond: 0.5, Burst: 2}, func() time.Time { return now })
	for range 2 {
		ok, _ := l.Allow("a")
		require.True(t, ok)
	}
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.Equal(t, 2*time.Second, wait)
	ok, _ = l.Allow("b") // another key has its own bucket
	require.True(t, ok)
	now = now.Add(2 * time.Second)
	ok, _ = l.Allow("a")
	require.True(t, ok)
	now = now.Add(time.Hour)
	l.ForgetIdle()
	require.Zero(t, l.Len())
	l.SetRate(Rate{})
	for range 10 {
		ok, _ = l.Allow("a")
		require.True(t, ok)
	}
}

func TestAddrKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7": "192.0.2.7", "192.0.2.7:80": "192.0.2.7", "::ffff:192.0.2.7": "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64", "[2001:db8:1:2::9]:443": "2001:db8:1:2::/64", "junk": "junk",
	} {
		require.Equal(t, want, AddrKey(in), in)
	}
}
