package backoff

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJitteredStaysInItsWindow(t *testing.T) {
	t.Parallel()
	base, limit := 100*time.Millisecond, 5*time.Second
	for attempt, ceiling := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, limit, limit} {
		for range 200 {
			d := Jittered(base, limit, attempt)
			require.GreaterOrEqual(t, d, ceiling/2, "attempt %d", attempt)
			require.LessOrEqual(t, d, ceiling, "attempt %d", attempt)
		}
	}
	for _, attempt := range []int{31, 64, 1 << 20} {
		d := Jittered(base, limit, attempt)
		require.GreaterOrEqual(t, d, limit/2, "a large attempt is capped, not overflowed")
		require.LessOrEqual(t, d, limit)
	}
	require.LessOrEqual(t, Jittered(base, limit, -1), base, "a negative attempt counts as the first")
	require.Zero(t, Jittered(base, 0, 3), "no limit, no wait")
}

func TestSleep(t *testing.T) {
	t.Parallel()
	require.True(t, Sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, Sleep(ctx, time.Hour), "a done context ends the sleep at once")
}
