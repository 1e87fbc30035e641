package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// BenchmarkStoreQuery measures REQ answers from the database (QuerySnapshot,
// the relay's path, for an anonymous reader) over 20,000 kind-1 notes of 500
// authors in 20 topics, never analysed (autovacuum is off in the tests): the
// usual shapes, each with its limit. groups=none is a node without a private
// or hidden NIP-29 group; groups=private has one (a row of
// cn_relay.group_access), so that the group predicate probes each candidate
// row. Run with
// `go test ./internal/store -run '^$' -bench StoreQuery -benchtime 2000x -count 5`.
func BenchmarkStoreQuery(b *testing.B) {
	db := pgtest.New(b)
	ctx := context.Background()
	pool, err := dbpool.Open(ctx, db.URL) // the relay's session settings
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	st := New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
	evs := signedNotes(b, 20_000, 500)
	for i := 0; i < len(evs); i += 500 {
		if _, err := st.Ingest(ctx, evs[i:i+500]); err != nil {
			b.Fatal(err)
		}
	}
	limit := func(f nostr.Filter, n int) nostr.Filter { f.Limit = n; return f }
	shapes := []struct {
		name string
		f    nostr.Filter
	}{
		{"kinds", limit(nostr.Filter{Kinds: []int{1}}, 100)},
		{"author", limit(nostr.Filter{Authors: []string{evs[7].PubKey}}, 20)},
		{"topic", limit(nostr.Filter{Tags: nostr.TagMap{"t": {"topic3"}}}, 50)},
		{"tag-p", limit(nostr.Filter{Tags: nostr.TagMap{"p": {fmt.Sprintf("%064x", 42)}}}, 20)},
		{"ids", limit(nostr.Filter{IDs: []string{evs[1].ID, evs[500].ID, evs[9000].ID, evs[19999].ID}}, 4)},
	}
	for _, groups := range []string{"none", "private"} {
		if groups == "private" {
			if _, err := pool.Exec(ctx, `INSERT INTO cn_relay.group_access VALUES ('GROUP:secret', true, false, '{}')`); err != nil {
				b.Logf("no private group: %v", err) // (a tree before migration 0026)
				continue
			}
		}
		for _, sh := range shapes {
			b.Run("groups="+groups+"/"+sh.name, func(b *testing.B) {
				for b.Loop() {
					got, _, err := st.QuerySnapshot(ctx, []nostr.Filter{sh.f}, protocol.Viewer{})
					if err != nil || len(got) == 0 {
						b.Fatalf("%d events, %v", len(got), err)
					}
				}
			})
		}
	}
}
