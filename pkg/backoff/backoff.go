// Package backoff is the node's one retry delay and its one context-aware
// sleep, shared by the relay's outbox follower, the consumer runtime and the
// outbox LISTEN connection. It is public, under pkg/, because pkg/consumer
// and pkg/outbox use it, and a public package cannot import an internal one.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jittered returns the delay before retry number attempt (0 for the first
// retry): a uniformly random duration between half and all of base*2^attempt,
// capped at limit. The jitter keeps many processes that failed together from
// retrying in step.
func Jittered(base, limit time.Duration, attempt int) time.Duration {
	ceiling := base << min(max(attempt, 0), 30)
	if ceiling <= 0 || ceiling > limit {
		ceiling = limit
	}
	if ceiling <= 0 {
		return 0
	}
	return ceiling/2 + rand.N(ceiling/2+1)
}

// Sleep waits d or until ctx is done, whichever comes first; false means ctx is
// done.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
