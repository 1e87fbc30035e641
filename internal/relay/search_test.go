// Runs without -race for the reason given in gonostr_test.go.

//go:build !race

package relay

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// TestNIP50Search: a go-nostr client searches the relay; stored results come from
// the index-v1 consumer's index (relevance first, other filter fields applied),
// live events are matched against the query.
func TestNIP50Search(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	r, err := New(testConfig(), WithEventCache(testConfig(), Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()}))
	require.NoError(t, err)
	tr := serveRelay(t, r)
	ix, err := consumer.New(db.Pool, &indexer.Handler{Kinds: indexer.NewKinds(indexer.DefaultKinds)}, consumer.Config{Name: indexer.ConsumerName})
	require.NoError(t, err)
	ixCtx, stopIndexer := context.WithCancel(context.Background())
	ixDone := make(chan error, 1)
	go func() { ixDone <- ix.Run(ixCtx) }()
	t.Cleanup(func() { stopIndexer(); require.NoError(t, <-ixDone) })

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	rl, err := nostr.RelayConnect(ctx, tr.url)
	require.NoError(t, err)
	k := newKey(t)
	withTopic := func(topic string) func(*nostr.Event) {
		return func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", topic}} }
	}
	tokyo := k.note(t, "昨日は東京タワーに行った", withTopic("travel"))
	ramen := k.note(t, "ramen ramen ramen in 東京", withTopic("food"))
	other := k.note(t, "sushi in Osaka", withTopic("food"))
	for _, ev := range []*nostr.Event{tokyo, ramen, other} {
		require.NoError(t, rl.Publish(ctx, *ev))
	}
	testkit.WaitCaughtUp(t, db.Pool, indexer.ConsumerName)

	ids := func(f nostr.Filter) []string {
		evs, err := testkit.QuerySync(ctx, rl, f)
		require.NoError(t, err)
		var out []string
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	require.ElementsMatch(t, []string{tokyo.ID, ramen.ID}, ids(nostr.Filter{Search: "東京", Tags: nostr.TagMap{"t": {"travel", "food"}}}))
	require.Equal(t, []string{tokyo.ID}, ids(nostr.Filter{Search: "タワー", Tags: nostr.TagMap{"t": {"travel", "food"}}}))
	require.Equal(t, []string{ramen.ID}, ids(nostr.Filter{Search: "東京", Tags: nostr.TagMap{"t": {"food"}}}), "combined with #t")
	require.Empty(t, ids(nostr.Filter{Search: "東京", Authors: []string{newKey(t).pk}, Tags: nostr.TagMap{"t": {"food"}}}), "combined with authors")
	require.Len(t, ids(nostr.Filter{Search: "東京", Limit: 1, Tags: nostr.TagMap{"t": {"travel", "food"}}}), 1, "limit")
	require.Empty(t, ids(nostr.Filter{Search: "🎉", Tags: nostr.TagMap{"t": {"food"}}}), "nothing searchable")
	n, err := rl.Count(ctx, nostr.Filters{{Search: "東京", Tags: nostr.TagMap{"t": {"travel", "food"}}}})
	require.NoError(t, err)
	require.EqualValues(t, 2, n)

	// Live: only events whose text matches reach the subscription.
	sub, err := rl.Subscribe(ctx, nostr.Filters{{Search: "ramen", Tags: nostr.TagMap{"t": {"food"}}}})
	require.NoError(t, err)
	select {
	case ev := <-sub.Events:
		require.Equal(t, ramen.ID, ev.ID)
	case <-ctx.Done():
		t.Fatal("no stored result")
	}
	select {
	case <-sub.EndOfStoredEvents:
	case <-ctx.Done():
		t.Fatal("no EOSE")
	}
	miss := k.note(t, "udon tonight", withTopic("food"))
	hit := k.note(t, "the best Ramen shops", withTopic("food"))
	require.NoError(t, rl.Publish(ctx, *miss))
	require.NoError(t, rl.Publish(ctx, *hit))
	select {
	case ev := <-sub.Events:
		require.Equal(t, hit.ID, ev.ID, "the non-matching event is not delivered")
	case <-ctx.Done():
		t.Fatal("no live match")
	}
}
