package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestTagFilterPlansNeedNoStatistics: a filter with one value of a tag other
// than t (#p, #e) and no ids or authors is driven by event_tags' key and
// reaches events through their primary key only (never a scan of events),
// whether the tables were ever analysed or not.
func TestTagFilterPlansNeedNoStatistics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.noAutovacuum(t)
	mentioned := make([]string, 30)
	for i := range mentioned {
		mentioned[i] = fmt.Sprintf("%064x", i+1)
	}
	var notes []*nostr.Event
	for batch := range 6 {
		evs := make([]*nostr.Event, 0, 500)
		for i := range 500 {
			n := batch*500 + i
			tags := nostr.Tags{topic("go"), {"p", mentioned[n%len(mentioned)]}}
			if len(notes) > 0 && n%3 == 0 {
				tags = append(tags, nostr.Tag{"e", notes[n%len(notes)].ID})
			}
			evs = append(evs, f.event(t, n%3, 1, base+nostr.Timestamp(n), tags, fmt.Sprint("note ", n)))
		}
		for _, v := range f.ingest(t, evs...) {
			require.True(t, v.OK, v.Message)
		}
		notes = append(notes, evs...)
	}

	filters := map[string]nostr.Filter{
		"#p":          {Tags: nostr.TagMap{"p": {mentioned[7]}}, Limit: 50},
		"#p #t":       {Tags: nostr.TagMap{"p": {mentioned[7]}, "t": {"go"}}, Limit: 50},
		"#e kinds":    {Tags: nostr.TagMap{"e": {notes[10].ID}}, Kinds: []int{1, 7}, Limit: 20},
		"#p since #t": {Tags: nostr.TagMap{"p": {mentioned[3]}, "t": {"go"}}, Since: ptr(base + 100), Limit: 10},
	}
	check := func(stage string) {
		for name, filter := range filters {
			plan := f.plan(t, filter)
			require.True(t, strings.HasPrefix(plan, "Limit"), "%s, %s:\n%s", stage, name, plan)
			require.Contains(t, plan, "using event_tags_pkey on event_tags", "%s, %s:\n%s", stage, name, plan)
			require.Contains(t, plan, "Index Scan using events_pkey on events", "%s, %s:\n%s", stage, name, plan)
			require.NotContains(t, plan, "Seq Scan", "%s, %s:\n%s", stage, name, plan)
			require.NotContains(t, plan, "Hash", "%s, %s:\n%s", stage, name, plan)
		}
	}

	var analysed int
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stats
		WHERE schemaname = 'cn_relay' AND tablename IN ('events', 'event_tags', 'event_topics')`).Scan(&analysed))
	require.Zero(t, analysed, "the tables must not have statistics yet")
	check("without statistics")
	_, err := f.db.Pool.Exec(ctx, "ANALYZE cn_relay.events, cn_relay.event_tags, cn_relay.event_topics")
	require.NoError(t, err)
	check("with statistics")
}

// TestIngestNeverScansSequentially: the ingest's statements are planned once
// per connection, the first time on empty tables, and yet never scan a table:
// each read is a key lookup however large the tables grow (queueGenericPlans).
func TestIngestNeverScansSequentially(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	sep := "?"
	if strings.Contains(db.URL, "?") {
		sep = "&"
	}
	// One connection, as the relay's pool is set up: its plans stay cached on it.
	pool, err := dbpool.Open(ctx, db.URL+sep+"pool_max_conns=1")
	require.NoError(t, err)
	defer pool.Close()
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny
	st := New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), rules)
	keys := []string{nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()}
	pub := func(k string) string {
		pk, err := nostr.GetPublicKey(k)
		require.NoError(t, err)
		return pk
	}
	sign := func(key string, kind int, at int, tags nostr.Tags) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: base + nostr.Timestamp(at), Tags: tags, Content: fmt.Sprint("event ", at)}
		require.NoError(t, ev.Sign(key))
		return ev
	}
	scans := func() map[string]int64 {
		_, err := pool.Exec(ctx, "SELECT pg_stat_force_next_flush()") // the ingest connection's counters
		require.NoError(t, err)
		rows, err := db.Pool.Query(ctx, `SELECT relname, seq_scan FROM pg_stat_user_tables WHERE schemaname = 'cn_relay'
			AND relname IN ('events', 'event_topics', 'event_tags', 'deletion_targets', 'members')`)
		require.NoError(t, err)
		out := map[string]int64{}
		for rows.Next() {
			var name string
			var n int64
			require.NoError(t, rows.Scan(&name, &n))
			out[name] = n
		}
		require.NoError(t, rows.Err())
		require.Len(t, out, 5)
		return out
	}

	before := scans()
	var notes []*nostr.Event
	at := 0
	for round := range 12 {
		var evs []*nostr.Event
		for i := range 100 {
			at++
			k := keys[i%3]
			switch {
			case len(notes) > 0 && i%5 == 1: // a reply: inherits by id
				evs = append(evs, sign(k, 1, at, nostr.Tags{{"e", notes[at%len(notes)].ID}}))
			case i%10 == 2: // replaceable and addressable versions
				evs = append(evs, sign(k, 0, at, nil), sign(k, 30023, at, nostr.Tags{{"d", "a"}, topic("go")}))
			case len(notes) > 0 && i%10 == 3: // a reaction to an address: inherits by key
				evs = append(evs, sign(k, 7, at, nostr.Tags{{"a", "30023:" + pub(k) + ":a"}}))
			case round > 0 && i%25 == 4: // a deletion of an earlier note of the same author
				for _, n := range notes {
					if n.PubKey == pub(k) {
						evs = append(evs, sign(k, 5, at, nostr.Tags{{"e", n.ID}, {"a", "30023:" + n.PubKey + ":a"}}))
						break
					}
				}
			default:
				evs = append(evs, sign(k, 1, at, nostr.Tags{topic("go"), {"p", pub(keys[(i+1)%3])}}))
			}
		}
		res, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
		for i, v := range res {
			require.True(t, v.OK, "%s (kind %d)", v.Message, evs[i].Kind)
			if evs[i].Kind == 1 && v.Message == "" {
				notes = append(notes, evs[i])
			}
		}
	}
	var stored int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events").Scan(&stored))
	require.Greater(t, stored, 1000)
	require.Equal(t, before, scans(), "sequential scans of the relay's tables during ingest")
}

// TestOneAuthorReadsItsIndexInOrder: "the newest N of one author" (and of one
// kind) walks a (…, created_at DESC, id) index in order and stops at the
// limit: it never fetches every event of the author to sort them (a Bitmap
// Heap Scan and a Sort, which at 1,000,000 events read ~200 heap pages for 20
// rows: Postgres 15 reads an index in order under an equality, not under = ANY
// of a one-element array). With statistics, as the relay keeps them (without,
// Postgres guesses that almost no row has deleted_at NULL, and any plan looks
// as cheap as any other).
func TestOneAuthorReadsItsIndexInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.noAutovacuum(t)
	for len(f.keys) < 30 { // (one author's events are 1/30 of the table, scattered)
		f.keys = append(f.keys, nostr.GeneratePrivateKey())
	}
	for batch := range 6 {
		evs := make([]*nostr.Event, 0, 600)
		for i := range 600 {
			n := batch*600 + i
			evs = append(evs, f.event(t, n%30, []int{1, 7}[n%60/30], base+nostr.Timestamp(n), nostr.Tags{topic("go")}, fmt.Sprint("note ", n)))
		}
		for _, v := range f.ingest(t, evs...) {
			require.True(t, v.OK, v.Message)
		}
	}
	pub := func(i int) string {
		pk, err := nostr.GetPublicKey(f.keys[i])
		require.NoError(t, err)
		return pk
	}
	filters := map[string]nostr.Filter{
		"1-author":       {Authors: []string{pub(0)}, Limit: 20},
		"1-author kinds": {Authors: []string{pub(1)}, Kinds: []int{1}, Limit: 20},
		"kinds":          {Kinds: []int{7}, Limit: 50},
	}
	check := func(stage string) {
		for name, filter := range filters {
			plan := f.plan(t, filter)
			require.Regexp(t, `^Limit\n  ->  Index Scan using \w+_created_at_idx on events e\n`, plan, "%s, %s:\n%s", stage, name, plan)
			require.NotContains(t, plan, "Bitmap", "%s, %s:\n%s", stage, name, plan)
			require.NotContains(t, plan, "Sort", "%s, %s:\n%s", stage, name, plan)
		}
	}
	_, err := f.db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events, cn_relay.event_tags, cn_relay.event_topics")
	require.NoError(t, err)
	check("with statistics")
}

// plan is EXPLAIN (COSTS OFF) of the query an anonymous REQ with filter runs,
// without the group check's InitPlan over cn_relay.group_access (eventsPlan:
// one read of that small table per statement, schema.GroupReadableSQL); the
// assertions are about how the events are reached.
func (f *fixture) plan(t *testing.T, filter nostr.Filter) string {
	t.Helper()
	where, args, ok := f.store.filterSQL(filter, protocol.Viewer{})
	require.True(t, ok)
	sql, args := f.store.selectSQL(filter, where, args, protocol.Viewer{})
	rows, err := f.db.Pool.Query(context.Background(), "EXPLAIN (COSTS OFF) "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return eventsPlan(lines)
}

// noAutovacuum keeps autovacuum off the query tables, so that their
// statistics are only what the test makes them.
func (f *fixture) noAutovacuum(t *testing.T) {
	t.Helper()
	for _, table := range []string{"events", "event_tags", "event_topics"} {
		_, err := f.db.Pool.Exec(context.Background(), "ALTER TABLE cn_relay."+table+" SET (autovacuum_enabled = false)")
		require.NoError(t, err)
	}
}
