package relay

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestPGFeedDoesNotWakeForRowsRead: a notification whose seq a read has
// already returned does not wake the follower (it would read nothing); one
// for a later seq does, and Notified follows both.
func TestPGFeedDoesNotWakeForRowsRead(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	feed := NewPGFeed(db.Pool, nil)

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	r, err := outbox.Append(ctx, tx, []outbox.Record{
		{Op: outbox.OpUpsert, EventID: "a", TopicID: "go", Kind: 1, CreatedAt: 1},
		{Op: outbox.OpUpsert, EventID: "b", TopicID: "go", Kind: 1, CreatedAt: 2},
	})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	rows, err := feed.ReadAfter(ctx, r.First-1, 10, nil)
	require.NoError(t, err)
	require.Len(t, rows, 2)

	wakes := make(chan int64) // unbuffered: the listener waits for each wake-up to be taken
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed.Listen(lctx, func() {
			select {
			case wakes <- feed.Notified():
			case <-lctx.Done():
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-wakes // connected

	for _, seq := range []int64{r.Last, r.Last + 1} { // read already; not yet
		_, err := db.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, strconv.FormatInt(seq, 10))
		require.NoError(t, err)
	}
	require.Equal(t, r.Last+1, <-wakes, "the first wake-up is the later seq's")
	require.Equal(t, r.Last+1, feed.Notified())
}
