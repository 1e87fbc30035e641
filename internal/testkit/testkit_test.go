package testkit

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestBufferTakesConcurrentWriters(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	require.Len(t, b.String(), 8*100*2)
}

func TestFreeAddrCanBeListenedOn(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", FreeAddr(t))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

func TestSignedEventsVerify(t *testing.T) {
	t.Parallel()
	k := NewKey(t)
	require.Equal(t, k.PK, Pub(k.SK))
	sks := SecretKeys(2)
	require.NotEqual(t, sks[0], sks[1])
	ev := Follows(t, sks[0], 100, Pub(sks[1]))
	require.Equal(t, 3, ev.Kind)
	require.Equal(t, Pub(sks[0]), ev.PubKey)
	require.Equal(t, Pub(sks[1]), ev.Tags.GetFirst([]string{"p"}).Value())
	for _, ev := range []*nostr.Event{ev, Sign(t, sks[1], 1, 100, nil, "hi")} {
		ok, err := ev.CheckSignature()
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// TestAwaitOffset: it returns once the offset reaches the seq, and with the
// context's error while it does not.
func TestAwaitOffset(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('kit-v1', 5)")
	require.NoError(t, err)
	WaitOffset(t, db.Pool, "kit-v1", 5)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, AwaitOffset(short, db.Pool, "kit-v1", 6), context.DeadlineExceeded)
	require.ErrorIs(t, AwaitOffset(short, db.Pool, "unregistered-v1", 1), context.DeadlineExceeded)
	done := make(chan error, 1)
	go func() { done <- AwaitOffset(ctx, db.Pool, "kit-v1", 7) }()
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.consumer_offsets SET last_seq = 7 WHERE consumer = 'kit-v1'")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.EqualValues(t, 0, WaitCaughtUp(t, db.Pool, "kit-v1"), "an empty outbox's head is 0")
}
