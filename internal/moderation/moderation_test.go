package moderation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// TestModerationEndToEnd: what a community sees through a stock client, with the
// issue's two rules.
func TestModerationEndToEnd(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.applyRules(t, issueRules)
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	alice := newAuthor(t)

	// A matching note gets the node's label within a second; a plain one none.
	spam := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "Win big at the CASINO tonight")
	ok, reason := c.Publish(spam)
	require.True(t, ok, reason)
	plain := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "goroutines are great")
	ok, reason = c.Publish(plain)
	require.True(t, ok, reason)
	var labels []*nostr.Event
	require.Eventually(t, func() bool {
		labels = c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{spam.ID}})
		return len(labels) == 1
	}, time.Second, 10*time.Millisecond, "the label is readable by REQ within a second")
	label := labels[0]
	require.Equal(t, n.key.PubKey, label.PubKey, "signed by the node key")
	ok, err := label.CheckSignature()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"L", DefaultNamespace}, []string(*label.Tags.GetFirst([]string{"L"})))
	require.Equal(t, []string{"l", "spam", DefaultNamespace}, []string(*label.Tags.GetFirst([]string{"l"})))
	require.Equal(t, alice.pk, label.Tags.GetFirst([]string{"p"}).Value())
	require.Equal(t, spam.CreatedAt, label.CreatedAt, "deterministic: created_at is the target's")
	require.Equal(t, "rule casino-spam version 1", label.Content)
	require.Equal(t, []string{label.ID}, ids(c.Query(map[string]any{"kinds": []int{1985}, "authors": []string{n.key.PubKey}})))
	var labelTopics []string
	require.NoError(t, n.db.Pool.QueryRow(context.Background(),
		"SELECT array_agg(topic_id) FROM cn_relay.events_outbox WHERE event_id = $1", label.ID).Scan(&labelTopics))
	require.Equal(t, []string{"go"}, labelTopics, "consumers see the label in the target's topics")
	n.sync(t, ConsumerName)
	require.Empty(t, c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{plain.ID}}), "no label for a plain note")

	// Three reports from one key do not reach the report rule.
	mallory := newAuthor(t)
	victim := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "an honest note")
	ok, _ = c.Publish(victim)
	require.True(t, ok)
	for i := range 3 {
		r := mallory.event(t, 1984, nostr.Tags{{"e", victim.ID, "spam"}, {"p", alice.pk}}, strings.Repeat("!", i))
		ok, reason = c.Publish(r)
		require.True(t, ok, reason)
	}
	n.sync(t, ConsumerName)
	require.Len(t, c.Query(map[string]any{"ids": []string{victim.ID}}), 1, "one reporter is one reporter")

	// Three distinct reporters hide the reported note: REQ by id, #t and search.
	target := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "a note about channels")
	ok, _ = c.Publish(target)
	require.True(t, ok)
	n.sync(t, indexer.ConsumerName)
	require.Equal(t, []string{target.ID}, search(t, n, "channels"))
	for range 3 {
		r := newAuthor(t).event(t, 1984, nostr.Tags{{"e", target.ID, "spam"}, {"p", alice.pk}}, "")
		ok, reason = c.Publish(r)
		require.True(t, ok, reason)
	}
	n.sync(t, ConsumerName)
	require.Empty(t, c.Query(map[string]any{"ids": []string{target.ID}}), "hidden from REQ by id")
	require.NotContains(t, ids(c.Query(map[string]any{"#t": []string{"go"}})), target.ID, "hidden from #t")
	n.sync(t, indexer.ConsumerName)
	require.Empty(t, search(t, n, "channels"), "hidden from search")
	reported := c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{target.ID}})
	require.Len(t, reported, 1)
	require.Equal(t, "reported", reported[0].Tags.GetFirst([]string{"l"}).Value())
	ok, reason = c.Publish(target)
	require.False(t, ok, "re-submitted by its author, it stays hidden")
	require.True(t, strings.HasPrefix(reason, "blocked:"), reason)

	items, err := Queue(context.Background(), n.db.Pool, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, map[string]int{"spam": 3}, items[0].Reports)
	require.ElementsMatch(t, []string{target.ID, victim.ID}, []string{items[0].EventID, items[1].EventID})

	// The operator unhides it: back everywhere, and the rule does not hide it again.
	outcome, err := Decide(context.Background(), n.db.Pool, n.store.Publisher(), target.ID, "unhide", "ops@test", "false alarm")
	require.NoError(t, err)
	require.Equal(t, store.Unhidden, outcome)
	require.Len(t, c.Query(map[string]any{"ids": []string{target.ID}}), 1)
	require.Contains(t, ids(c.Query(map[string]any{"#t": []string{"go"}})), target.ID)
	n.sync(t, indexer.ConsumerName)
	require.Equal(t, []string{target.ID}, search(t, n, "channels"))
	fourth := newAuthor(t).event(t, 1984, nostr.Tags{{"e", target.ID, "spam"}, {"p", alice.pk}}, "")
	ok, _ = c.Publish(fourth)
	require.True(t, ok)
	n.sync(t, ConsumerName)
	require.Len(t, c.Query(map[string]any{"ids": []string{target.ID}}), 1, "the operator's decision stands")
	items, err = Queue(context.Background(), n.db.Pool, 10)
	require.NoError(t, err)
	require.Equal(t, []string{victim.ID}, []string{items[0].EventID}, "decided events leave the queue")

	// Operator hide, then the author deletes the note: the label is taken back.
	_, err = Decide(context.Background(), n.db.Pool, n.store.Publisher(), spam.ID, "hide", "ops@test", "spam")
	require.NoError(t, err)
	require.Empty(t, c.Query(map[string]any{"ids": []string{spam.ID}}))
	require.Len(t, c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{spam.ID}}), 1, "a hide keeps the label")

	// The author deletes a labelled note: the node takes its label back (NIP-09).
	again := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "casino night, again")
	ok, _ = c.Publish(again)
	require.True(t, ok)
	n.sync(t, ConsumerName)
	againLabels := c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{again.ID}})
	require.Len(t, againLabels, 1)
	ok, reason = c.Publish(alice.event(t, 5, nostr.Tags{{"e", again.ID}}, ""))
	require.True(t, ok, reason)
	n.sync(t, ConsumerName)
	require.Empty(t, c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{again.ID}}), "the label is retracted")
	retractions := c.Query(map[string]any{"kinds": []int{5}, "authors": []string{n.key.PubKey}})
	require.Len(t, retractions, 1)
	require.Equal(t, againLabels[0].ID, retractions[0].Tags.GetFirst([]string{"e"}).Value())

	m := n.mod.m
	require.Equal(t, 2.0, testutil.ToFloat64(m.labels.WithLabelValues("casino-spam")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.labels.WithLabelValues("reported-three-times")))
	require.Equal(t, 7.0, testutil.ToFloat64(m.reports.WithLabelValues("spam")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.hides.WithLabelValues("rule")))
}

// search asks the index (as /v1/search does) in topic "go".
func search(t *testing.T, n *testNode, q string) []string {
	t.Helper()
	query, err := textsearch.ParseQuery(q)
	require.NoError(t, err)
	hits, _, err := indexer.Search(context.Background(), n.db.Pool, indexer.SearchParams{Query: query, Topic: "go", Limit: 20}, time.Now())
	require.NoError(t, err)
	out := []string{}
	for _, h := range hits {
		out = append(out, h.EventID)
	}
	return out
}

// TestRejudge: a changed rule applies to new rows; a rejudge (what `cnctl
// moderation rules apply --execute --rejudge` does: the new rules, then
// moderation-v1 back to the earliest retained row, while it runs) judges the
// retained outbox again under the new version.
func TestRejudge(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.applyRules(t, "rules:\n  - {name: casino, content_regex: '(?i)casino', label: spam, action: label}\n")
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	note := newAuthor(t).event(t, 1, nostr.Tags{{"t", "go"}}, "casino")
	ok, reason := c.Publish(note)
	require.True(t, ok, reason)
	n.sync(t, ConsumerName)
	labelsOf := func() []string {
		var out []string
		for _, ev := range c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{note.ID}}) {
			out = append(out, ev.Tags.GetFirst([]string{"l"}).Value()+" "+ev.Content)
		}
		return out
	}
	require.Equal(t, []string{"spam rule casino version 1"}, labelsOf())

	n.applyRules(t, "rules:\n  - {name: casino, content_regex: '(?i)casino', label: gambling, action: label}\n")
	n.sync(t, ConsumerName)
	require.Equal(t, []string{"spam rule casino version 1"}, labelsOf(), "a rule change applies to new rows only")

	plan, err := consumer.PlanReset(context.Background(), n.db.Pool, ConsumerName, consumer.ResetTarget{Earliest: true})
	require.NoError(t, err)
	require.NoError(t, consumer.ExecuteReset(context.Background(), n.db.Pool, plan, true, "test"))
	require.Eventually(t, func() bool { return len(labelsOf()) == 2 }, waitLong, 20*time.Millisecond)
	require.ElementsMatch(t, []string{"spam rule casino version 1", "gambling rule casino version 2"}, labelsOf())
}

// TestModeratorHidesWhatABannedKeyGotStored: relays apply a ban within a second;
// what a banned key got stored meanwhile is hidden by the moderator (and shown
// again when the ban is lifted, with the rest of what the ban hid).
func TestModeratorHidesWhatABannedKeyGotStored(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	spammer := newAuthor(t)
	_, err := n.db.Pool.Exec(context.Background(), `INSERT INTO cn_admin.pubkeys (pubkey, status, reason, actor, at)
		VALUES ($1, 'banned', 'spam', 'test', now())`, spammer.pk)
	require.NoError(t, err)
	// This relay has no management policy: it stores the event, as a relay that
	// has not applied the ban yet would.
	ev := spammer.event(t, 1, nostr.Tags{{"t", "go"}}, "slipped through")
	ok, reason := c.Publish(ev)
	require.True(t, ok, reason)
	n.sync(t, ConsumerName)
	require.Empty(t, c.Query(map[string]any{"ids": []string{ev.ID}}), "hidden by the moderator")
	var recorded int
	require.NoError(t, n.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_admin.ban_hides WHERE pubkey = $1 AND event_id = $2", spammer.pk, ev.ID).Scan(&recorded))
	require.Equal(t, 1, recorded, "recorded as hidden by the ban, so lifting it shows the event again")
}

// TestReportsFromRankedKeysOnly: a report rule with min_reporter_rank counts
// the reporters whose trust-v1 rank (cn_trust.scores) was high enough when
// their report arrived, and records the lowest rank it relied on.
func TestReportsFromRankedKeysOnly(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.applyRules(t, "rules:\n  - {name: ranked-reports, min_reports: 2, min_reporter_rank: 20, label: reported, action: hide}\n")
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	alice := newAuthor(t)
	target := alice.event(t, 1, nostr.Tags{{"t", "go"}}, "an honest note")
	ok, reason := c.Publish(target)
	require.True(t, ok, reason)
	ranked := []author{newAuthor(t), newAuthor(t)}
	ctx := context.Background()
	for i, a := range ranked {
		_, err := n.db.Pool.Exec(ctx, `INSERT INTO cn_trust.scores (pubkey, rank, score, risk, run_id) VALUES ($1, $2, 0.1, 0, 1)`, a.pk, 40+10*i)
		require.NoError(t, err)
	}
	for range 5 { // a ring of unranked keys
		ok, reason = c.Publish(newAuthor(t).event(t, 1984, nostr.Tags{{"e", target.ID, "spam"}, {"p", alice.pk}}, ""))
		require.True(t, ok, reason)
	}
	ok, reason = c.Publish(ranked[0].event(t, 1984, nostr.Tags{{"e", target.ID, "spam"}, {"p", alice.pk}}, ""))
	require.True(t, ok, reason)
	n.sync(t, ConsumerName)
	require.Len(t, c.Query(map[string]any{"ids": []string{target.ID}}), 1, "one ranked reporter and five unranked ones are not two")

	ok, reason = c.Publish(ranked[1].event(t, 1984, nostr.Tags{{"e", target.ID, "spam"}, {"p", alice.pk}}, ""))
	require.True(t, ok, reason)
	n.sync(t, ConsumerName)
	require.Empty(t, c.Query(map[string]any{"ids": []string{target.ID}}), "two ranked reporters hide it")
	var rank float64
	require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT rank FROM cn_moderation.actions WHERE event_id = $1 AND source = 'rule'`, target.ID).Scan(&rank))
	require.Equal(t, 40.0, rank, "the decision records the lowest rank it relied on")
}
