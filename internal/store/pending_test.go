package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// membersFixture is a fixture under the default rules: identity events of
// non-members wait (IdentityWritersMembers).
func membersFixture(t *testing.T, edit func(*protocol.TopicRules)) *fixture {
	t.Helper()
	f := newFixture(t)
	rules := protocol.DefaultTopicRules()
	if edit != nil {
		edit(&rules)
	}
	f.store.SetRules(rules)
	return f
}

func (f *fixture) pendingIDs(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Pool.Query(context.Background(), "SELECT id FROM cn_relay.pending_events ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

var (
	okV      = protocol.Verdict{OK: true}
	pendingV = protocol.Verdict{OK: true, Message: MsgPending}
)

// TestPendingVersionsAndLimits: one pending row per effective key, the newest
// version; PerKey keys per pubkey; Max in all.
func TestPendingVersionsAndLimits(t *testing.T) {
	t.Parallel()
	f := membersFixture(t, nil)
	f.store.SetPendingLimits(PendingLimits{PerKey: 2, Max: 3, MaxAge: time.Hour})
	profile := f.event(t, 0, 0, base, nil, `{"name":"a"}`)
	older := f.event(t, 0, 0, base-5, nil, `{"name":"old"}`)
	newer := f.event(t, 0, 0, base+5, nil, `{"name":"new"}`)
	follows := f.event(t, 0, 3, base, nil, "")
	relays := f.event(t, 0, 10002, base, nil, "")
	require.Equal(t, []protocol.Verdict{pendingV, pendingV, pendingV}, f.ingest(t, profile, older, follows))
	require.ElementsMatch(t, []string{profile.ID, follows.ID}, f.pendingIDs(t))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: protocol.ReasonPendingKeyFull}}, f.ingest(t, relays), "a third key")
	require.Equal(t, []protocol.Verdict{pendingV}, f.ingest(t, newer), "a newer version replaces, and needs no room")
	require.ElementsMatch(t, []string{newer.ID, follows.ID}, f.pendingIDs(t))

	require.Equal(t, []protocol.Verdict{pendingV}, f.ingest(t, f.event(t, 1, 0, base, nil, `{"name":"b"}`)))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: protocol.ReasonPendingFull}},
		f.ingest(t, f.event(t, 2, 0, base, nil, `{"name":"c"}`)), "Max pending in all")

	// The first post publishes the newest version of each key, once.
	post := f.event(t, 0, 1, base+10, nostr.Tags{topic("intro")}, "hello")
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, post))
	rows, _ := f.rows(t, 0)
	require.ElementsMatch(t, []string{"upsert " + post.ID[:8] + " intro", "upsert " + newer.ID[:8] + " NODE 0:" + newer.PubKey,
		"upsert " + follows.ID[:8] + " NODE 3:" + follows.PubKey}, rows)
	require.Len(t, f.pendingIDs(t), 1, "only the other newcomer's profile waits")
	require.Equal(t, []string{newer.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Authors: []string{newer.PubKey}, Limit: 5}))
	require.Equal(t, []protocol.Verdict{{OK: true, Message: msgDuplicate}}, f.ingest(t, newer), "published: a duplicate now")
}

// TestSweepPending: the sweep publishes the pending events of keys that became
// members another way, and of keys the member gate admits; expires the rest
// after MaxAge; and counts what waits.
func TestSweepPending(t *testing.T) {
	t.Parallel()
	f := membersFixture(t, nil)
	ctx := context.Background()
	admitted, ranked, stranger := f.event(t, 0, 0, base, nil, `{"name":"a"}`), f.event(t, 1, 0, base, nil, `{"name":"r"}`),
		f.event(t, 2, 0, base, nil, `{"name":"s"}`)
	require.Equal(t, []protocol.Verdict{pendingV, pendingV, pendingV}, f.ingest(t, admitted, ranked, stranger))
	_, err := f.db.Pool.Exec(ctx, "INSERT INTO cn_relay.members (pubkey, first_event_id, joined_at) VALUES ($1, '', now())", admitted.PubKey)
	require.NoError(t, err)
	f.store.SetMemberGate(func(pk string) bool { return pk == ranked.PubKey })
	ps, err := f.store.SweepPending(ctx)
	require.NoError(t, err)
	require.Equal(t, PendingStats{Published: 2, Events: 1, Keys: 1}, ps)
	require.Equal(t, int64(1), f.store.PendingEvents())
	require.ElementsMatch(t, []string{admitted.ID, ranked.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Limit: 5}))
	var member bool
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.members WHERE pubkey = $1)", ranked.PubKey).Scan(&member))
	require.True(t, member, "the gate's key is a member now")

	// A key the gate admits publishes at once, and becomes a member.
	f.store.SetMemberGate(func(pk string) bool { return pk == stranger.PubKey })
	follows := f.event(t, 2, 3, base, nil, "")
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, follows))
	require.ElementsMatch(t, []string{stranger.ID, follows.ID}, f.query(t, nostr.Filter{Authors: []string{stranger.PubKey}, Limit: 5}),
		"and its pending profile with it")

	// Expiry.
	f.store.SetMemberGate(nil)
	f.keys = append(f.keys, nostr.GeneratePrivateKey())
	lone := f.event(t, 3, 0, base, nil, `{"name":"lone"}`)
	require.Equal(t, []protocol.Verdict{pendingV}, f.ingest(t, lone))
	f.store.now = func() time.Time { return time.Now().Add(DefaultPendingLimits().MaxAge + time.Minute) }
	ps, err = f.store.SweepPending(ctx)
	require.NoError(t, err)
	require.Equal(t, PendingStats{Expired: 1}, ps)
	require.Empty(t, f.pendingIDs(t))
}

// TestPersonScopeAndDefaultTopic: events addressed to a member by p tag alone
// are stored in the person scope; to a non-member they are refused (restricted);
// the default topic takes what has no topic, never a private kind, never an
// exempt kind (a deletion).
func TestPersonScopeAndDefaultTopic(t *testing.T) {
	t.Parallel()
	f := membersFixture(t, func(r *protocol.TopicRules) { r.DefaultTopic = "general" })
	f.keys = append(f.keys, nostr.GeneratePrivateKey())
	member, _ := nostr.GetPublicKey(f.keys[0])
	newcomer, _ := nostr.GetPublicKey(f.keys[3])
	untagged := f.event(t, 0, 1, base, nil, "hello, no hashtag")
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, untagged))
	require.Equal(t, []string{"general"}, f.topics(t, untagged.ID), "single-community mode")
	require.Empty(t, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"general"}}, Limit: 5}), "#t matches own t tags only")

	wrap := f.event(t, 1, protocol.KindGiftWrap, base, nostr.Tags{{"p", member}}, "sealed")
	report := f.event(t, 1, protocol.KindReport, base, nostr.Tags{{"p", member, "spam"}}, "")
	zap := f.event(t, 2, protocol.KindZapReceipt, base, nostr.Tags{{"p", member}, {"bolt11", "lnbc1"}}, "")
	require.Equal(t, []protocol.Verdict{okV, okV, okV}, f.ingest(t, wrap, report, zap))
	for _, ev := range []*nostr.Event{wrap, report, zap} {
		require.Equal(t, []string{protocol.NodeTopic}, f.topics(t, ev.ID), "kind %d", ev.Kind)
	}
	refused := []protocol.Verdict{{OK: false, Message: protocol.ReasonPersonNotMember}}
	require.Equal(t, refused, f.ingest(t, f.event(t, 1, protocol.KindGiftWrap, base, nostr.Tags{{"p", newcomer}}, "sealed")),
		"a private kind never falls back to the default topic")
	report2 := f.event(t, 1, protocol.KindReport, base, nostr.Tags{{"p", newcomer, "spam"}}, "")
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, report2))
	require.Equal(t, []string{"general"}, f.topics(t, report2.ID), "a public person kind naming no member takes the default topic")
	deletion := f.event(t, 2, 5, base, nostr.Tags{{"e", strings.Repeat("cd", 32)}}, "") // of nothing stored here
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, deletion))
	require.Equal(t, []string{protocol.NodeTopic}, f.topics(t, deletion.ID), "an exempt kind with nothing to inherit takes the person scope")

	var members int
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cn_relay.members").Scan(&members))
	require.Equal(t, 2, members, "the default topic made the untagged author and the second reporter members; the person scope none")
}

// TestOnboardingReplaysTheSame: the outbox of an onboarding (pending events
// published by the first post) applied again from 0 leaves the index as it was.
func TestOnboardingReplaysTheSame(t *testing.T) {
	t.Parallel()
	f := membersFixture(t, nil)
	profile := f.event(t, 0, 0, base, nil, `{"name":"ada","about":"compilers"}`)
	require.Equal(t, []protocol.Verdict{pendingV}, f.ingest(t, profile))
	require.Equal(t, []protocol.Verdict{okV}, f.ingest(t, f.event(t, 0, 1, base+1, nostr.Tags{topic("intro")}, "hello")))
	f.index(t)
	first := f.documents(t)
	require.Len(t, first, 2)
	require.Contains(t, first[0]+first[1], profile.ID, "the published profile is searchable")
	f.index(t) // a replay from 0
	require.Equal(t, first, f.documents(t))
}

// documents lists the index's documents canonically.
func (f *fixture) documents(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Pool.Query(context.Background(), `SELECT event_id || ' ' || kind || ' ' || topics::text || ' ' || tsv::text
		FROM cn_index.documents ORDER BY event_id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
