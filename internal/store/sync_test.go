package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/schema"
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

	items, err := f.store.SyncItems(ctx, filter, protocol.Viewer{}, 150, nil)
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

	_, err = f.store.SyncItems(ctx, filter, protocol.Viewer{}, 149, nil)
	require.ErrorIs(t, err, ErrTooManySyncItems)

	_, err = f.db.Pool.Exec(ctx, "ANALYZE cn_relay.events")
	require.NoError(t, err)
	sql, args, ok := f.store.syncSQL(nostr.Filter{Authors: []string{evs[0].PubKey}}, protocol.Viewer{}, 500_000)
	require.True(t, ok)
	rows, err := f.db.Pool.Query(ctx, "EXPLAIN (COSTS OFF) "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := eventsPlan(lines)
	require.Contains(t, plan, "Index Scan", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
	require.NotContains(t, plan, "Sort", plan)
}

// TestSyncItemsIndexOnly: for the filters a node-to-node sync uses ({}, kinds,
// a time window) and the public viewer, the items are read by an index-only
// scan of events_sync_idx in (created_at, id) order, without a sort, and
// without column statistics (the table is never analysed here; the plan is
// pinned by syncPlanSQL), and once VACUUM has marked the pages all-visible the
// scan reads no heap page at all (Heap Fetches: 0). Before any VACUUM every
// row costs a heap visit: on a live node keeping the visibility map current is
// autovacuum's job (see docs/negentropy.md).
func TestSyncItemsIndexOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// 20,000 rows written directly (the plan is the point, not the ingest
	// path): kinds 1, 7 and 4, a tenth replaced and a tenth deleted.
	_, err := f.db.Pool.Exec(ctx, `
INSERT INTO cn_relay.events (id, pubkey, kind, created_at, content, sig, is_effective, deleted_at, deleted_reason, expires_at)
SELECT encode(sha256(('e' || i)::bytea), 'hex'), encode(sha256(('p' || i % 50)::bytea), 'hex'),
       (ARRAY[1, 7, 4])[1 + i % 3], 1700000000 + i / 3, 'x', repeat('0', 128),
       i % 10 <> 3, CASE WHEN i % 10 = 5 THEN now() END, CASE WHEN i % 10 = 5 THEN 'nip09' END,
       CASE WHEN i % 10 = 7 THEN 1700000000 + i END
FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	var stats int
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stats WHERE schemaname = 'cn_relay' AND tablename = 'events'").Scan(&stats))
	require.Zero(t, stats, "no column statistics")

	since, until := nostr.Timestamp(1700001000), nostr.Timestamp(1700004000)
	filters := map[string]nostr.Filter{
		"all":        {},
		"kinds":      {Kinds: []int{1, 7}},
		"window":     {Since: &since, Until: &until},
		"kind+since": {Kinds: []int{1}, Since: &since},
	}
	explain := func(name string, f0 nostr.Filter) string {
		sql, args, ok := f.store.syncSQL(f0, protocol.Viewer{}, 100_000)
		require.True(t, ok)
		require.True(t, syncIndexOnly(f0, protocol.Viewer{}), name)
		tx, err := f.db.Pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, syncPlanSQL) // as SyncItems does
		require.NoError(t, err)
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+sql, args...)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		plan := eventsPlan(lines)
		require.Contains(t, plan, "Index Only Scan using events_sync_idx", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "Sort", "%s:\n%s", name, plan)
		return plan
	}
	for name, f0 := range filters {
		require.NotContains(t, explain(name, f0), "Heap Fetches: 0", "before VACUUM, %s", name)
	}
	// VACUUM (not ANALYZE: no column statistics) marks the pages all-visible,
	// but only pages whose rows no running transaction may still need to see
	// otherwise (the xmin horizon): on a test cluster shared with other tests a
	// session can hold the horizon back for a moment (once seen in CI: Heap
	// Fetches 16000 of 16000). So vacuum until pg_class says every page is
	// all-visible, then check that the scans read no heap page.
	require.Eventually(t, func() bool {
		_, err := f.db.Pool.Exec(ctx, "VACUUM cn_relay.events")
		require.NoError(t, err)
		var pages, allVisible int
		require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT relpages, relallvisible FROM pg_class WHERE oid = 'cn_relay.events'::regclass").Scan(&pages, &allVisible))
		return pages > 0 && allVisible == pages
	}, 30*time.Second, 20*time.Millisecond, "VACUUM marks every page of cn_relay.events all-visible")
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stats WHERE schemaname = 'cn_relay' AND tablename = 'events'").Scan(&stats))
	require.Zero(t, stats, "still no column statistics")
	for name, f0 := range filters {
		require.Contains(t, explain(name, f0), "Heap Fetches: 0", name)
	}
	// And the items are right: the visible ones, a public reader's.
	items, err := f.store.SyncItems(ctx, nostr.Filter{Kinds: []int{1, 7, 4}}, protocol.Viewer{}, 100_000, nil)
	require.NoError(t, err)
	var want int
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events e WHERE `+
		schema.VisibleSQL("extract(epoch from now())::bigint")+` AND kind <> 4`).Scan(&want))
	require.Len(t, items, want)
	require.Positive(t, want)
}

// TestStoredKeys: every stored event's id and author and its tags but t (any
// state: a deleted event's too), and the estimate from statistics before the
// first key, only once the tables have statistics.
func TestStoredKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	mentioned := fmt.Sprintf("%064x", 7)
	note := f.event(t, 0, 1, base, nostr.Tags{topic("go"), {"p", mentioned}}, "hello")
	gone := f.event(t, 1, 1, base+1, nostr.Tags{topic("go")}, "soon deleted")
	for _, v := range f.ingest(t, note, gone) {
		require.True(t, v.OK, v.Message)
	}
	for _, v := range f.ingest(t, f.event(t, 1, 5, base+2, nostr.Tags{{"e", gone.ID}}, "")) {
		require.True(t, v.OK, v.Message)
	}
	read := func() (sizes []int, keys map[string]bool) {
		keys = map[string]bool{}
		require.NoError(t, f.store.StoredKeys(ctx, func(n int) {
			require.Empty(t, keys, "the estimate comes before the keys")
			sizes = append(sizes, n)
		}, func(field string, value []byte) { keys[field+" "+string(value)] = true }))
		return sizes, keys
	}
	sizes, keys := read()
	require.Empty(t, sizes, "no statistics, no estimate")
	pub := func(i int) string {
		pk, err := nostr.GetPublicKey(f.keys[i])
		require.NoError(t, err)
		return pk
	}
	for _, k := range []string{"ids " + note.ID, "ids " + gone.ID, "authors " + pub(0), "authors " + pub(1),
		"#p " + mentioned, "#e " + gone.ID} {
		require.True(t, keys[k], "%s missing from %v", k, keys)
	}
	for k := range keys {
		require.NotContains(t, k, "#t ", "t tags are not in event_tags")
	}
	_, err := f.db.Pool.Exec(ctx, "ANALYZE cn_relay.events, cn_relay.event_tags")
	require.NoError(t, err)
	sizes, _ = read()
	require.Equal(t, []int{2*3 + 2}, sizes, "two keys per event plus the tag rows")
}

// eventsPlan is a plan without the InitPlan of the group check
// (schema.GroupReadableSQL), which reads cn_relay.group_access once per
// statement: the assertions are about the events' scan.
func eventsPlan(lines []string) string {
	var out []string
	initPlan := false
	for _, l := range lines {
		switch t := strings.TrimSpace(l); {
		case strings.HasPrefix(t, "InitPlan"):
			initPlan = true
			continue
		case initPlan && (strings.Contains(t, "group_access") || strings.HasPrefix(t, "Heap Fetches")):
			continue
		}
		initPlan = false
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
