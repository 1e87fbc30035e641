package store

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/nodekey"
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

// TestSearchInGroup: #h with search answers only the named groups' matching
// events, for each reader. readers is the table a private group extends: a
// reader, and the groups whose events that reader may find.
func TestSearchInGroup(t *testing.T) {
	f := newFixture(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	require.NoError(t, f.store.SetGroups(Groups{Sign: node.Sign, Policy: groups.Policy{Node: node.PubKey, Creators: groups.CreatorsAny}}))
	now := nostr.Now()
	mk := func(author, kind int, tags nostr.Tags, content string) *nostr.Event {
		return f.event(t, author, kind, now, tags, content)
	}
	for _, v := range f.ingest(t, mk(0, groups.KindCreateGroup, nostr.Tags{{"h", "g1"}}, ""), mk(0, groups.KindCreateGroup, nostr.Tags{{"h", "g2"}}, "")) {
		require.True(t, v.OK, v.Message)
	}
	g1a := mk(1, 1, nostr.Tags{{"h", "g1"}}, "ramen in group one")
	g1b := mk(2, 11, nostr.Tags{{"h", "g1"}, {"t", "food"}}, "more ramen, one thread")
	g2 := mk(1, 1, nostr.Tags{{"h", "g2"}}, "ramen in group two")
	topic := mk(1, 1, nostr.Tags{{"t", "food"}}, "ramen in a topic")
	// A profile with an h tag is not a group event (protocol.IsGroupEvent),
	// yet #h matches its tag, as NIP-01 says.
	profile := mk(2, 0, nostr.Tags{{"h", "g1"}}, `{"name":"ramen fan"}`)
	for _, v := range f.ingest(t, g1a, g1b, g2, topic, profile) {
		require.True(t, v.OK, v.Message)
	}
	f.index(t)
	del := mk(0, groups.KindDeleteEvent, nostr.Tags{{"h", "g1"}, {"e", g1a.ID}}, "")

	readers := []struct {
		name   string
		viewer protocol.Viewer
		groups map[string][]string // group -> what this reader finds with #h and search "ramen"
	}{
		{"anonymous", protocol.Viewer{}, map[string][]string{"g1": {g1a.ID, g1b.ID, profile.ID}, "g2": {g2.ID}}},
		{"authenticated", protocol.Viewer{Authed: []string{g1a.PubKey}}, map[string][]string{"g1": {g1a.ID, g1b.ID, profile.ID}, "g2": {g2.ID}}},
	}
	check := func(deleted string) {
		t.Helper()
		for _, r := range readers {
			for g, want := range r.groups {
				want = slices.DeleteFunc(slices.Clone(want), func(id string) bool { return id == deleted })
				evs, err := f.store.Query(context.Background(), []nostr.Filter{{Search: "ramen", Tags: nostr.TagMap{"h": {g}}, Limit: 100}}, r.viewer)
				require.NoError(t, err)
				require.Equal(t, sorted(want), sorted(idsOf(evs)), "%s in %s", r.name, g)
				evs, err = f.store.Query(context.Background(), []nostr.Filter{{Search: "ramen", Tags: nostr.TagMap{"h": {g}, "t": {"food"}}, Limit: 100}}, r.viewer)
				require.NoError(t, err)
				for _, ev := range evs {
					require.Equal(t, g1b.ID, ev.ID, "#h and #t: the group's events whose own t tag matches")
				}
			}
		}
		evs, err := f.store.Query(context.Background(), []nostr.Filter{{Search: "ramen", Tags: nostr.TagMap{"h": {"g1", "g2"}}, Kinds: []int{1}, Limit: 100}}, protocol.Viewer{})
		require.NoError(t, err)
		require.Equal(t, sorted(slices.DeleteFunc([]string{g1a.ID, g2.ID}, func(id string) bool { return id == deleted })), sorted(idsOf(evs)))
	}
	check("")
	// A 9005 hides g1a from search at once (the join with the events), and
	// from the index once the indexer applies the delete row.
	require.True(t, f.ingest(t, del)[0].OK)
	check(g1a.ID)
	f.index(t)
	check(g1a.ID)
	for _, d := range f.documents(t) {
		require.NotContains(t, d, g1a.ID)
	}
}

func idsOf(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// TestIdentityKindSQL: the SQL predicate #h search relies on is
// protocol.IsIdentityKind, kind for kind.
func TestIdentityKindSQL(t *testing.T) {
	f := newFixture(t)
	var args []any
	ph := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	rows, err := f.db.Pool.Query(context.Background(), "SELECT k FROM generate_series(0, 65535) k WHERE "+identityKindSQL("k", ph)+" ORDER BY k", args...)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	var want []int
	for k := range 65536 {
		if protocol.IsIdentityKind(k) {
			want = append(want, k)
		}
	}
	require.Equal(t, want, got)
}
