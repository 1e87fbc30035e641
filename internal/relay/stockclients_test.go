package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// startPGRelay serves a relay on the Postgres store and outbox of a fresh
// database, under the default configuration (edit may change it).
func startPGRelay(t *testing.T, edit func(*Config)) (*testRelay, *pgtest.DB) {
	t.Helper()
	db := pgtest.New(t)
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	st := pgStore{store.New(db.Pool, startWriter(t, db), cfg.Limits.TopicRules)}
	reg := prometheus.NewRegistry()
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: reg}))
	require.NoError(t, err)
	return serveRelay(t, r), db
}

// signedBy returns an event of kind by k with tags and content, created now.
func (k key) signed(t *testing.T, kind int, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: content}
	require.NoError(t, ev.Sign(k.sk))
	return ev
}

// ids collects the events of a REQ up to EOSE.
func (c *client) ids(t *testing.T, sub string, filter map[string]any) []string {
	t.Helper()
	delete(c.closedSubs, sub)
	c.send("REQ", sub, filter)
	var out []string
	for {
		msg := c.next()
		switch str(t, msg[0]) {
		case "EVENT":
			if other := str(t, msg[1]); other != sub {
				require.True(t, c.closedSubs[other] || true, "an event for subscription %q: %s", other, join(msg))
				continue // (a live event of a subscription closed here, sent before the relay read the CLOSE)
			}
			var ev nostr.Event
			require.NoError(t, ev.UnmarshalJSON(msg[2]))
			out = append(out, ev.ID)
		case "EOSE":
			require.Equal(t, sub, str(t, msg[1]))
			c.send("CLOSE", sub)
			c.closedSubs[sub] = true
			return out
		default:
			t.Fatalf("unexpected %s", join(msg))
		}
	}
}

// TestStockClientsEndToEnd walks through what a stock client (one that knows
// nothing of topics) does against the default configuration, over a real
// WebSocket, with the Postgres store and live delivery through the outbox.
func TestStockClientsEndToEnd(t *testing.T) {
	t.Parallel()
	tr, db := startPGRelay(t, nil)
	alice, bob, zapper := newKey(t), newKey(t), newKey(t)
	c := dial(t, tr.url)

	// A newcomer's profile waits for a first post (identity writers: members),
	// which publishes it.
	profile := alice.signed(t, 0, nil, `{"name":"alice"}`)
	ok, reason := c.publish(profile)
	require.True(t, ok)
	require.Equal(t, store.MsgPending, reason)
	note := alice.signed(t, 1, nostr.Tags{{"t", "go"}}, "hello #go")
	ok, reason = c.publish(note)
	require.True(t, ok, reason)
	follows := alice.signed(t, 3, nostr.Tags{{"p", bob.pk}}, "")
	relays := alice.signed(t, 10002, nostr.Tags{{"r", "wss://relay.example"}}, "")
	for _, ev := range []*nostr.Event{profile, follows, relays} {
		ok, reason = c.publish(ev)
		require.True(t, ok, "kind %d: %s", ev.Kind, reason)
	}

	// Live subscriptions as clients open them: the note's hashtag, its reactions.
	live := dial(t, tr.url)
	live.send("REQ", "topic", map[string]any{"#t": []string{"go"}, "limit": 0})
	live.eose("topic")
	live.send("REQ", "reactions", map[string]any{"kinds": []int{7}, "#e": []string{note.ID}, "limit": 0})
	live.eose("reactions")

	// Bob has never posted; everything he sends references the note.
	ref := nostr.Tags{{"e", note.ID}, {"p", alice.pk}}
	reaction := bob.signed(t, 7, ref, "+")
	ok, reason = c.publish(reaction)
	require.True(t, ok, reason)
	// Live events arrive per subscription; alice's note may also arrive on
	// "topic" (it was stored just before the REQ, and the follower may fan it out
	// after), so the checks look for what they expect and for what must not come.
	onTopic := map[string]bool{}
	awaitLive := func(sub, id string) {
		t.Helper()
		for {
			msg := live.expect("EVENT")
			var ev nostr.Event
			require.NoError(t, ev.UnmarshalJSON(msg[2]))
			s := str(t, msg[1])
			if s == "topic" {
				onTopic[ev.ID] = true
			}
			if s == sub && ev.ID == id {
				return
			}
		}
	}
	awaitLive("reactions", reaction.ID)
	hashtagged := bob.signed(t, 1, nostr.Tags{{"t", "go"}}, "a note of my own")
	ok, reason = c.publish(hashtagged)
	require.True(t, ok, reason)
	awaitLive("topic", hashtagged.ID)
	require.False(t, onTopic[reaction.ID],
		"#t delivers events with the t tag, not the reaction that only inherited the topic (NIP-01)")

	reply := bob.signed(t, 1, nostr.Tags{{"e", note.ID, "", "root"}, {"p", alice.pk}}, "welcome")
	repost := bob.signed(t, 6, ref, note.String())
	report := bob.signed(t, 1984, nostr.Tags{{"e", note.ID, "spam"}, {"p", alice.pk}}, "")
	zap := zapper.signed(t, 9735, nostr.Tags{{"e", note.ID}, {"p", alice.pk}, {"bolt11", "lnbc1"}}, "")
	comment := bob.signed(t, 1111, nostr.Tags{{"E", note.ID}, {"K", "1"}, {"P", alice.pk}}, "a NIP-22 comment")
	for _, ev := range []*nostr.Event{reply, repost, report, zap, comment} {
		ok, reason = c.publish(ev)
		require.True(t, ok, "kind %d: %s", ev.Kind, reason)
	}
	bobProfile := bob.signed(t, 0, nil, `{"name":"bob"}`)
	ok, reason = c.publish(bobProfile)
	require.True(t, ok, "a reply makes its author a member: %s", reason)

	// What nothing stored here explains is refused, with what would help.
	orphan := bob.signed(t, 7, nostr.Tags{{"e", strings.Repeat("ab", 32)}}, "+")
	ok, reason = c.publish(orphan)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: missing topic"), reason)
	require.Contains(t, reason, "t tag")

	// The reads a stock client makes, none with #t.
	r := dial(t, tr.url)
	require.Equal(t, []string{profile.ID}, r.ids(t, "p", map[string]any{"kinds": []int{0}, "authors": []string{alice.pk}}))
	require.Equal(t, []string{follows.ID}, r.ids(t, "f", map[string]any{"kinds": []int{3}, "authors": []string{alice.pk}}))
	require.Equal(t, []string{relays.ID}, r.ids(t, "r", map[string]any{"kinds": []int{10002}, "authors": []string{alice.pk}}))
	require.ElementsMatch(t, []string{profile.ID, bobProfile.ID},
		r.ids(t, "ps", map[string]any{"kinds": []int{0}, "authors": []string{alice.pk, bob.pk}}))
	require.Equal(t, []string{reaction.ID}, r.ids(t, "x", map[string]any{"kinds": []int{7}, "#e": []string{note.ID}}))
	require.ElementsMatch(t, []string{reaction.ID, reply.ID, repost.ID, report.ID, zap.ID},
		r.ids(t, "e", map[string]any{"#e": []string{note.ID}}))
	require.Equal(t, []string{comment.ID}, r.ids(t, "E", map[string]any{"#E": []string{note.ID}}))
	require.Equal(t, []string{note.ID}, r.ids(t, "i", map[string]any{"ids": []string{note.ID}}))
	require.ElementsMatch(t, []string{note.ID, reply.ID, hashtagged.ID},
		r.ids(t, "a", map[string]any{"kinds": []int{1}, "authors": []string{alice.pk, bob.pk}}))
	require.ElementsMatch(t, []string{note.ID, hashtagged.ID}, r.ids(t, "t", map[string]any{"#t": []string{"go"}}),
		"#t matches own t tags (NIP-01)")
	r.send("COUNT", "n", map[string]any{"kinds": []int{7}, "#e": []string{note.ID}})
	require.Equal(t, `["COUNT","n",{"count":1}]`, join(r.expect("COUNT")))

	// Consumers see every event in its topics: one upsert row per topic.
	rows, err := outbox.ReadAfter(context.Background(), db.Pool, 0, 100, nil)
	require.NoError(t, err)
	got := map[string][]string{}
	for _, row := range rows {
		got[row.EventID] = append(got[row.EventID], string(row.Op)+" "+row.TopicID)
	}
	for _, ev := range []*nostr.Event{note, reaction, reply, repost, report, zap, comment, hashtagged} {
		require.Equal(t, []string{"upsert go"}, got[ev.ID], "kind %d: consumers see it in the note's topic", ev.Kind)
	}
	for _, ev := range []*nostr.Event{profile, follows, relays, bobProfile} {
		require.Equal(t, []string{"upsert " + protocol.NodeTopic}, got[ev.ID], "kind %d", ev.Kind)
	}

	// Bob takes his reaction back (NIP-09): gone from reads, delete row in "go".
	del := bob.signed(t, 5, nostr.Tags{{"e", reaction.ID}, {"k", "7"}}, "")
	ok, reason = c.publish(del)
	require.True(t, ok, reason)
	require.Empty(t, r.ids(t, "x2", map[string]any{"kinds": []int{7}, "#e": []string{note.ID}}))
	var deletes int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_relay.events_outbox WHERE op = 'delete' AND event_id = $1 AND topic_id = 'go' AND reason = 'nip09'",
		reaction.ID).Scan(&deletes))
	require.Equal(t, 1, deletes)
}

// TestIdentityWritersAny: with --identity-writers any, a newcomer's profile is
// accepted at once; and a REQ that must carry #t (the strict option) still reads
// profiles.
func TestIdentityWritersAny(t *testing.T) {
	t.Parallel()
	tr, _ := startPGRelay(t, func(c *Config) {
		c.Limits.IdentityWriters = protocol.IdentityWritersAny
		c.Limits.RequireTopicInREQ = true
	})
	k := newKey(t)
	c := dial(t, tr.url)
	profile := k.signed(t, 0, nil, `{"name":"new"}`)
	ok, reason := c.publish(profile)
	require.True(t, ok, reason)
	require.Equal(t, []string{profile.ID}, c.ids(t, "p", map[string]any{"kinds": []int{0}, "authors": []string{k.pk}}))
	c.send("REQ", "no-t", map[string]any{"kinds": []int{7}, "#e": []string{profile.ID}})
	require.Equal(t, protocol.ReasonTopicFilterRequired, c.closed("no-t"))
}

// TestInheritedTopicsRespectAllowList: an event inherits only enabled topics.
func TestInheritedTopicsRespectAllowList(t *testing.T) {
	t.Parallel()
	tr, _ := startPGRelay(t, func(c *Config) { c.Limits.AllowedTopics = map[string]bool{"go": true} })
	k := newKey(t)
	c := dial(t, tr.url)
	note := k.signed(t, 1, nostr.Tags{{"t", "go"}}, "in go")
	ok, reason := c.publish(note)
	require.True(t, ok, reason)
	ok, reason = c.publish(k.signed(t, 1, nostr.Tags{{"t", "rust"}}, "in rust"))
	require.False(t, ok)
	require.Equal(t, protocol.ReasonTopicNotEnabled, reason)
	ok, reason = c.publish(k.signed(t, 7, nostr.Tags{{"e", note.ID}}, "+"))
	require.True(t, ok, fmt.Sprint("inherits go: ", reason))
}
