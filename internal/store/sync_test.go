package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// TestSyncItems: SyncItems returns exactly the matches Query returns (without
// a limit), at most max of them, ErrTooManySyncItems over it; the query is an
// index scan without a sort for a selective filter (an author's events).
func TestSyncItems(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for len(f.keys) < 30 {
		f.keys = append(f.keys, nostr.GeneratePrivateKey())
	}
	var evs []*nostr.Event
	for i := range 1500 {
		evs = append(evs, f.event(t, i%30, 1+i%10, base+nostr.Timestamp(i/10), nostr.Tags{topic("go")}, fmt.Sprint("n ", i)))
	}
	for _, v := range f.ingest(t, evs...) {
		require.True(t, v.OK, v.Message)
	}
	filter := nostr.Filter{Kinds: []int{1}, Limit: 5} // the limit is ignored
	want, err := f.store.Query(ctx, []nostr.Filter{{Kinds: []int{1}, Limit: 1000}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, want, 150)

	items, err := f.store.SyncItems(ctx, filter, protocol.Viewer{}, 150)
	require.NoError(t, err)
	got := make([]string, len(items))
	for i, it := range items {
		got[i] = it.ID
	}
	wantIDs := make([]string, len(want))
	for i, ev := range want {
		wantIDs[i] = ev.ID
	}
	slices.Sort(got)
	slices.Sort(wantIDs)
	require.Equal(t, wantIDs, got)

	_, err = f.store.SyncItems(ctx, filter, protocol.Viewer{}, 149)
	require.ErrorIs(t, err, ErrTooManySyncItems)

	_, err = f.db.Pool.Exec(ctx, "ANALYZE cn_relay.events")
	require.NoError(t, err)
	sql, args, ok := f.store.syncSQL(nostr.Filter{Authors: []string{evs[0].PubKey}}, protocol.Viewer{}, 500_000)
	require.True(t, ok)
	rows, err := f.db.Pool.Query(ctx, "EXPLAIN (COSTS OFF) "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, plan, "Index Scan", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
	require.NotContains(t, plan, "Sort", plan)
}
