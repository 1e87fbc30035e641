package trust

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestRunUnderTrustRole runs the trust daemon as a login user of the trust
// group role (internal/dbroles): it follows the outbox to the head and publishes
// its assertions through the store path.
func TestRunUnderTrustRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := e.db.LoginAsService(t, dbroles.Trust)
	k := newKeys(2)
	seed, alice := k[0], k[1]
	e.ingest(t, follows(t, seed, 100, pub(alice)), note(t, alice, 100))
	head, err := outbox.Head(ctx, e.db.Pool)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{DatabaseURL: url, Listen: "127.0.0.1:0", NodeKey: e.node, Seeds: []string{pub(seed)},
			RecomputeInterval: time.Hour, PublishInterval: 50 * time.Millisecond,
			AsOf: func() int64 { return asOf }, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	}()
	provider, err := e.node.Derive(ProviderPurpose)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var last int64
		var assertions int
		_ = e.db.Pool.QueryRow(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName).Scan(&last)
		_ = e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE kind = 30382 AND pubkey = $1", provider.PubKey).Scan(&assertions)
		return last >= head && assertions > 0
	}, 20*time.Second, 20*time.Millisecond, "trust-v1 reaches the head and publishes under its role")
	cancel()
	require.NoError(t, <-done)
}
