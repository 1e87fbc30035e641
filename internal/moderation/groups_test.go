package moderation

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/internal/trust"
)

// TestGroupPipeline sends NIP-29 group events through a real relay and checks
// that the index, the moderator and trust, as real consumers on one database,
// see each group as a scope of its own (GROUP:<id>), and that a 9005 takes an
// event out of REQ, search, the index, the moderation queue and the trust
// graph alike, while a 9001 (remove-user) keeps the removed user's messages
// everywhere (docs/groups.md "Pipeline").
func TestGroupPipeline(t *testing.T) {
	n := newTestNode(t)
	testkit.HostGroups(t, n.store, testkit.GroupOpts{Node: n.key})
	n.applyRules(t, `rules:
  - {name: pizza-in-g1, groups: [g1], keywords: [pizza], label: spam, action: label}
  - {name: reported, min_reports: 1, label: reported, action: hold}
`)
	n.startModerator(t)
	graph := &trust.Graph{NodePubKey: n.key.PubKey}
	runConsumer(t, context.Background(), n.db, graph, trust.ConsumerName, 0)

	c := testkit.Dial(t, n.url)
	admin, alice, bob := newAuthor(t), newAuthor(t), newAuthor(t)
	must := func(ev *nostr.Event) *nostr.Event {
		t.Helper()
		ok, reason := c.Publish(ev)
		require.True(t, ok, "kind %d: %s", ev.Kind, reason)
		return ev
	}
	h := func(id string) nostr.Tag { return nostr.Tag{"h", id} }
	for _, g := range []string{"g1", "g2"} {
		must(admin.event(t, groups.KindCreateGroup, nostr.Tags{h(g)}, ""))
	}
	p1 := must(alice.event(t, 1, nostr.Tags{h("g1")}, "pizza tonight"))
	p2 := must(bob.event(t, 1, nostr.Tags{h("g1")}, "pizza is overrated"))
	q1 := must(alice.event(t, 1, nostr.Tags{h("g2")}, "pizza in the other group"))
	r1 := must(bob.event(t, 7, nostr.Tags{h("g1"), {"e", p1.ID}, {"p", alice.pk}}, "+"))
	rep := must(bob.event(t, 1984, nostr.Tags{h("g1"), {"e", p1.ID, "spam"}, {"p", alice.pk}}, ""))
	for _, name := range []string{indexer.ConsumerName, ConsumerName, trust.ConsumerName} {
		n.sync(t, name)
	}

	ctx := context.Background()
	scope := func(id string) []string {
		var s []string
		require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT topic_id ORDER BY topic_id), '{}') FROM cn_relay.events_outbox WHERE event_id = $1`, id).Scan(&s))
		return s
	}
	docTopics := func(id string) []string {
		var s []string
		err := n.db.Pool.QueryRow(ctx, `SELECT topics FROM cn_index.documents WHERE event_id = $1`, id).Scan(&s)
		if err != nil {
			return nil
		}
		return s
	}
	inTrust := func(id string) bool {
		var ok bool
		require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cn_trust.sources WHERE event_id = $1)`, id).Scan(&ok))
		return ok
	}
	labelled := func(id string) []string {
		var s []string
		require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(rule ORDER BY rule), '{}') FROM cn_moderation.labels WHERE target_id = $1 AND retracted_by IS NULL`, id).Scan(&s))
		return s
	}
	queue := func(group string) []string {
		items, err := GroupQueue(ctx, n.db.Pool, 50, group)
		require.NoError(t, err)
		var out []string
		for _, it := range items {
			out = append(out, it.EventID)
		}
		return out
	}
	search := func(group string) []string {
		q, err := textsearch.ParseQuery("pizza")
		require.NoError(t, err)
		hits, _, err := indexer.Search(ctx, n.db.Pool, indexer.SearchParams{Query: q, Group: group, Limit: 50}, time.Now())
		require.NoError(t, err)
		var out []string
		for _, h := range hits {
			require.Equal(t, groups.Scope(group), h.TopicID)
			out = append(out, h.EventID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

	// Every consumer sees the group as the scope of its events.
	for _, ev := range []*nostr.Event{p1, p2, r1, rep} {
		require.Equal(t, []string{"GROUP:g1"}, scope(ev.ID), "kind %d", ev.Kind)
		require.True(t, inTrust(ev.ID), "kind %d reaches trust", ev.Kind)
	}
	require.Equal(t, []string{"GROUP:g2"}, scope(q1.ID))
	require.Equal(t, []string{"GROUP:g1"}, docTopics(p1.ID))
	require.Equal(t, []string{"GROUP:g2"}, docTopics(q1.ID))
	require.Equal(t, sorted(p1.ID, p2.ID), search("g1"))
	require.Equal(t, []string{q1.ID}, search("g2"))
	require.Equal(t, []string{"pizza-in-g1", "reported"}, labelled(p1.ID), "a rule scoped to g1 labels g1's events")
	require.Equal(t, []string{"pizza-in-g1"}, labelled(p2.ID))
	require.Empty(t, labelled(q1.ID), "and no other group's")
	require.Equal(t, []string{p1.ID}, queue("g1"), "the report reaches g1's queue")
	require.Empty(t, queue("g2"))
	// Over Nostr: the group's admins read its reports with #h.
	require.Equal(t, []string{rep.ID}, ids(c.Query(map[string]any{"kinds": []int{1984}, "#h": []string{"g1"}})))
	require.Equal(t, sorted(p1.ID, p2.ID), sorted(ids(c.Query(map[string]any{"#h": []string{"g1"}, "search": "pizza"}))...))

	// 9001 remove-user: bob is no longer a member; his messages stay, in REQ
	// and in every consumer alike.
	must(admin.event(t, groups.KindRemoveUser, nostr.Tags{h("g1"), {"p", bob.pk}}, ""))
	// 9005 delete-event: p1 leaves REQ, search, the index, the queue and trust.
	must(admin.event(t, groups.KindDeleteEvent, nostr.Tags{h("g1"), {"e", p1.ID}}, ""))
	for _, name := range []string{indexer.ConsumerName, ConsumerName, trust.ConsumerName} {
		n.sync(t, name)
	}
	require.Equal(t, []string{p2.ID}, search("g1"))
	require.Nil(t, docTopics(p1.ID))
	require.Equal(t, []string{"GROUP:g1"}, docTopics(p2.ID), "a removed user's message stays indexed")
	require.False(t, inTrust(p1.ID), "a deleted message leaves the trust graph")
	require.True(t, inTrust(p2.ID))
	require.Equal(t, []string{p2.ID}, ids(c.Query(map[string]any{"#h": []string{"g1"}, "search": "pizza"})))
	require.Equal(t, []string{p2.ID}, ids(c.Query(map[string]any{"#h": []string{"g1"}, "kinds": []int{1}})))
	require.Equal(t, []string{"pizza-in-g1", "reported"}, labelled(p1.ID), "a 9005 is a moderation hide: labels stay, as for every hide")
	var labelScopes []string
	require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT array_agg(DISTINCT tt.topic_id) FROM cn_moderation.labels l
		JOIN cn_relay.event_topics tt ON tt.event_id = l.label_id WHERE l.target_id = $1`, p2.ID).Scan(&labelScopes))
	require.Equal(t, []string{protocol.NodeTopic}, labelScopes, "the node's labels are not group events: the person scope (see docs/groups.md)")
	carol := newAuthor(t)
	// A report without h is not in the group (nothing inherits a group), yet
	// it reaches the group's queue: the queue goes by the reported event.
	outside := must(carol.event(t, 1984, nostr.Tags{{"e", p2.ID, "spam"}, {"p", bob.pk}}, ""))
	n.sync(t, ConsumerName)
	require.Equal(t, []string{protocol.NodeTopic}, scope(outside.ID), "the reported person's scope (bob is a member of the community)")
	require.Equal(t, sorted(p2.ID, p1.ID), sorted(queue("g1")...))
	require.Empty(t, queue("g2"))
	items, err := GroupQueue(ctx, n.db.Pool, 50, "g1")
	require.NoError(t, err)
	hidden := map[string]bool{}
	for _, it := range items {
		hidden[it.EventID] = it.Hidden
	}
	require.Equal(t, map[string]bool{p1.ID: true, p2.ID: false}, hidden, "the queue shows the deleted event as hidden")
}
