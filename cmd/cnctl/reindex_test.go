package main

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestReindex(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	st := testkit.NewStore(db.Pool)
	sk := nostr.GeneratePrivateKey()
	var evs []*nostr.Event
	for i, kind := range []int{1, 1, 7, 30023} {
		ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(1_700_000_000 + i), Content: "東京 meetup",
			Tags: nostr.Tags{{"t", "tokyo"}, {"d", "x"}}}
		require.NoError(t, ev.Sign(sk))
		evs = append(evs, ev)
	}
	_, err := st.Ingest(ctx, evs)
	require.NoError(t, err)

	out, err := cnctl(t, "reindex", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "reindexed: 3 documents (3 loaded at seq ")
	require.Contains(t, out, "index-v1 now continues after seq ")

	out, err = cnctl(t, "reindex", "--database-url", db.URL, "--kinds", "7")
	require.NoError(t, err, out)
	require.Contains(t, out, "reindexed: 1 documents")

	_, err = cnctl(t, "reindex", "--database-url", db.URL, "--kinds", "1,x")
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
	require.Contains(t, oneLine(err), `--kinds: "x" is not a kind`)
}
