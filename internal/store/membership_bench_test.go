package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// BenchmarkIngestMembership is BenchmarkIngest's batch=16 case with NIP-43
// membership kept, open against invite-only (which reads the authors'
// registers in every batch and refuses non-members). Every author joined
// under NIP-43 before the timer starts, in both modes.
func BenchmarkIngestMembership(b *testing.B) {
	for _, mode := range []membership.Mode{membership.Open, membership.InviteOnly} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			db := pgtest.New(b)
			pool, err := dbpool.Open(context.Background(), db.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
			if err != nil {
				b.Fatal(err)
			}
			st := New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
			if err := st.SetMembership(Membership{Self: node.PubKey, Sign: node.Sign, Mode: mode}); err != nil {
				b.Fatal(err)
			}
			evs := signedNotes(b, b.N, 500)
			ctx := context.Background()
			var changes []membership.Change
			seen := map[string]bool{}
			for _, ev := range evs {
				if !seen[ev.PubKey] {
					seen[ev.PubKey] = true
					changes = append(changes, membership.Change{Pubkey: ev.PubKey, Add: true, Via: membership.ViaOperator})
				}
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Publisher().MembershipTx(ctx, tx, st.Rules(), changes); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			var next int
			var mu sync.Mutex
			take := func() []*nostr.Event {
				mu.Lock()
				defer mu.Unlock()
				if next >= len(evs) {
					return nil
				}
				end := min(next+16, len(evs))
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
						res, err := st.Ingest(ctx, part)
						if err != nil {
							b.Error(err)
							return
						}
						for _, v := range res {
							if !v.OK {
								b.Errorf("refused: %s", v.Message)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(len(evs))/time.Since(start).Seconds(), "events/s")
		})
	}
}
