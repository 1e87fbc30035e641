package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// BenchmarkIngest measures the database side of the relay's ingest path: batches
// of pre-signed kind-1 events (one t and one p tag, 500 authors) written by two
// concurrent group commits, as the relay does by default. Run with
// `go test ./internal/store -run '^$' -bench Ingest -benchtime 20000x`.
func BenchmarkIngest(b *testing.B) {
	for _, batch := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := pgtest.New(b)
			pool, err := dbpool.Open(context.Background(), db.URL) // the relay's session settings
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			st := New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
			evs := signedNotes(b, b.N, 500)
			ctx := context.Background()
			var next int
			var mu sync.Mutex
			take := func() []*nostr.Event {
				mu.Lock()
				defer mu.Unlock()
				if next >= len(evs) {
					return nil
				}
				end := min(next+batch, len(evs))
				out := evs[next:end]
				next = end
				return out
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for part := take(); part != nil; part = take() {
						if _, err := st.Ingest(ctx, part); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(len(evs))/time.Since(start).Seconds(), "events/s")
		})
	}
}

func signedNotes(tb testing.TB, n, authors int) []*nostr.Event {
	tb.Helper()
	keys := make([]string, authors)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	evs := make([]*nostr.Event, n)
	for i := range evs {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1_700_000_000 + i), Content: fmt.Sprintf("note %d", i),
			Tags: nostr.Tags{{"t", fmt.Sprintf("topic%d", i%20)}, {"p", fmt.Sprintf("%064x", i%1000)}}}
		if err := ev.Sign(keys[i%authors]); err != nil {
			tb.Fatal(err)
		}
		evs[i] = ev
	}
	return evs
}
