// Package backoff forwards to pkg/backoff, where the node's one retry delay
// and context-aware sleep now live: pkg/consumer and pkg/outbox use them, and
// a public package must not import an internal one.
//
// Deprecated: use pkg/backoff. This package is kept only for
// internal/relay/follower.go, which is being rewritten with the relay's
// transport (issue 51); once it imports pkg/backoff, delete this package.
package backoff

import (
	"context"
	"time"

	"github.com/kukuri/communitynode/pkg/backoff"
)

// Jittered is backoff.Jittered.
func Jittered(base, limit time.Duration, attempt int) time.Duration {
	return backoff.Jittered(base, limit, attempt)
}

// Sleep is backoff.Sleep.
func Sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) }
