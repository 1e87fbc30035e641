package store

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// index applies the whole outbox to the search index, as the indexer would.
func (f *fixture) index(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rows, err := outbox.ReadAfter(ctx, f.db.Pool, 0, 10000, nil)
	require.NoError(t, err)
	h := &indexer.Handler{Kinds: indexer.NewKinds(indexer.DefaultKinds)}
	require.NoError(t, pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error { return h.Handle(ctx, tx, rows) }))
}

func TestSearchFilter(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tokyo := f.event(t, 0, 1, base, nostr.Tags{topic("travel")}, "昨日は東京タワーに行った")
	ramen := f.event(t, 1, 1, base+1, nostr.Tags{topic("food")}, "東京 ramen ramen ramen")
	ramen2 := f.event(t, 1, 1, base+2, nostr.Tags{topic("food")}, "ramen in osaka, running late")
	article := f.event(t, 2, 30023, base+3, nostr.Tags{topic("food"), {"d", "a"}}, "the best ramen shops")
	deleted := f.event(t, 0, 1, base+4, nostr.Tags{topic("food")}, "ramen deleted later")
	f.ingest(t, tokyo, ramen, ramen2, article, deleted)
	f.index(t)
	f.ingest(t, f.event(t, 0, 5, base+5, nostr.Tags{{"e", deleted.ID}}, ""))
	// The index has not seen the deletion yet: the join with the events still hides it.

	q := func(filter nostr.Filter) []string {
		if filter.Limit == 0 {
			filter.Limit = 100
		}
		return f.query(t, filter)
	}
	require.Equal(t, sorted([]string{tokyo.ID, ramen.ID}), sorted(q(nostr.Filter{Search: "東京"})))
	require.Equal(t, []string{ramen.ID}, q(nostr.Filter{Search: "東京", Tags: nostr.TagMap{"t": {"food"}}}))
	require.Equal(t, []string{ramen.ID, ramen2.ID}, q(nostr.Filter{Search: "ramen", Kinds: []int{1}}), "relevance first")
	require.Equal(t, []string{article.ID}, q(nostr.Filter{Search: "ramen", Kinds: []int{30023}}))
	require.Equal(t, []string{ramen2.ID}, q(nostr.Filter{Search: "run", Authors: []string{ramen2.PubKey}}), "inflections by prefix of the stem")
	require.Equal(t, []string{ramen2.ID}, q(nostr.Filter{Search: "ramen include:spam language:en", Since: ptr(base + 2), Until: ptr(base + 2)}), "unsupported extensions are ignored")
	require.Len(t, q(nostr.Filter{Search: "ramen", Limit: 2}), 2)
	require.Empty(t, q(nostr.Filter{Search: "🎉"}), "nothing searchable matches nothing")
	require.Empty(t, q(nostr.Filter{Search: "include:spam"}))

	n, err := f.store.Count(ctx, []nostr.Filter{{Search: "ramen"}, {Search: "東京"}}, protocol.Viewer{})
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
}

func ptr(ts nostr.Timestamp) *nostr.Timestamp { return &ts }

func sorted(ids []string) []string { return slices.Sorted(slices.Values(ids)) }
