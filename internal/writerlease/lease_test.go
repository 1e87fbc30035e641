package writerlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/writerlease"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestNewcomerWaitsOutTheSoleRelay: a relay alone is sole, from the outbox
// head on; a second relay's Register returns only once the first has
// stopped trusting its memory (here: the first does not renew, so its trust
// runs out), and from then on neither is sole; once the second releases
// its row, the first is sole again at its next renewal, and Note raises the
// floor.
func TestNewcomerWaitsOutTheSoleRelay(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = 500 * time.Millisecond
	a := writerlease.New(db.Pool, ttl, nil)
	_, ok := a.Sole()
	require.False(t, ok, "sole before Register")
	require.False(t, a.Holds(), "holds before Register")
	require.NoError(t, a.Register(ctx))
	require.True(t, a.Holds())
	floor, ok := a.Sole()
	require.True(t, ok, "a relay alone is sole")
	require.Zero(t, floor, "an empty outbox's head")

	b := writerlease.New(db.Pool, ttl, nil)
	require.NoError(t, b.Register(ctx))
	// The invariant: when the newcomer may acknowledge, the first no longer
	// trusts its memory. (The first did not renew meanwhile, so its row
	// lapsed, and the newcomer is sole now.)
	_, ok = a.Sole()
	require.False(t, ok, "the newcomer may acknowledge writes while the first relay trusts its memory")
	require.True(t, b.Holds())

	// With the second renewing, the first comes back: it waits until the
	// second no longer trusts its memory, and neither is sole.
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(runCtx) }()
	require.NoError(t, a.Register(ctx))
	_, ok = b.Sole()
	require.False(t, ok, "a relay may acknowledge writes while another trusts its memory")
	_, ok = a.Sole()
	require.False(t, ok, "sole next to a live relay")
	require.True(t, a.Holds())
	stop()
	require.NoError(t, <-ran)

	require.NoError(t, b.Release(ctx))
	require.False(t, b.Holds(), "holds after Release")
	var head int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT seq FROM cn_relay.outbox_head").Scan(&head))
	require.NoError(t, a.Register(ctx))
	floor, ok = a.Sole()
	require.True(t, ok, "sole again once the other released its row")
	require.Equal(t, head, floor)
	a.Note(head + 5)
	floor, _ = a.Sole()
	require.Equal(t, head+5, floor, "Note raises the floor")
}
