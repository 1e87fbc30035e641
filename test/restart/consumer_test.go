package restart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestConsumerRestartWithoutGap restarts a consumer (the indexer, a real
// process; the moderator, trust and the bridge take the same lease in
// pkg/consumer) the way the relay is restarted, while events keep coming: a
// new process with the same configuration (--reuse-port: the same --listen)
// starts beside the old one and waits as a standby; SIGTERM to the old one
// releases the lease, and the new one takes over at once from the offset the
// old one committed: no row skipped, none applied twice (every event has one
// search document, and the new instance's first offset is the old one's
// last).
func TestConsumerRestartWithoutGap(t *testing.T) {
	bin := build(t, "indexer")
	db := pgtest.New(t)
	ctx := context.Background()
	st := store.New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
	key := nostr.GeneratePrivateKey()
	var (
		mu  sync.Mutex
		ids []string
	)
	publish := func(n int) {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", topic}}, Content: fmt.Sprintf("note %d about restarts", n)}
		require.NoError(t, ev.Sign(key))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
		mu.Lock()
		ids = append(ids, ev.ID)
		mu.Unlock()
	}
	for i := range 50 {
		publish(i)
	}
	// Events keep coming during the handover, one every 5 ms.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for n := 50; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				publish(n)
			}
		}
	})

	addr := testkit.FreeAddr(t)
	args := []string{"--listen", addr, "--database-url", db.URL, "--reuse-port", "--batch-size", "10"}
	logs := t.TempDir()
	old := startProc(t, bin, args, filepath.Join(logs, "indexer-0.log"), "active")
	testkit.WaitOffset(t, db.Pool, indexer.ConsumerName, 1)
	next := startProc(t, bin, args, filepath.Join(logs, "indexer-1.log"), "another instance is active; waiting as standby")

	signalled := time.Now()
	require.NoError(t, old.stop(t, 30*time.Second), "the old indexer exits 0")
	exited := time.Now()
	left, err := consumer.Offset(ctx, db.Pool, indexer.ConsumerName)
	require.NoError(t, err)
	var active struct {
		Generation int64 `json:"generation"`
		LastSeq    int64 `json:"last_seq"`
	}
	var first struct {
		Generation int64 `json:"generation"`
	}
	require.NoError(t, json.Unmarshal([]byte(old.line("active")), &first))
	require.NoError(t, json.Unmarshal([]byte(next.waitLine(t, "active", 30*time.Second)), &active))
	took := time.Since(exited)
	require.Equal(t, left, active.LastSeq, "the new instance starts at the offset the old one committed")
	require.Equal(t, first.Generation+1, active.Generation, "one takeover")

	close(stop)
	wg.Wait()
	head := testkit.WaitCaughtUp(t, db.Pool, indexer.ConsumerName)
	var docs, distinct int
	mu.Lock()
	all := ids
	mu.Unlock()
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT event_id) FROM cn_index.documents WHERE event_id = ANY($1)", all).Scan(&docs, &distinct))
	require.Equal(t, len(all), distinct, "every event indexed")
	require.Equal(t, distinct, docs, "none twice")
	require.NoError(t, next.stop(t, 30*time.Second))
	t.Logf("indexer restarted at offset %d of %d (%d events): the old one exited %v after SIGTERM, the new one was active %v after that",
		left, head, len(all), exited.Sub(signalled).Round(time.Millisecond), took.Round(time.Millisecond))
}
