package relay

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// groupLeakRelays is the setup of the groups' leak tests: a store with the
// node key and a relay admin, two relays over it (one with the event cache,
// one without), a way to start more (a lagging replica), and the indexer's
// consumer (NIP-50 in the relay, the HTTP search).
type groupLeakRelays struct {
	db             *pgtest.DB
	node           nodekey.Key
	admin          key
	st             pgStore
	cached, direct *testRelay
	// start serves a relay over s (the store, or a lagging replica of it).
	start func(s Store, cache bool) *testRelay
	// indexed waits until the indexer has applied the outbox.
	indexed func()
}

func newGroupLeakRelays(t *testing.T) *groupLeakRelays {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	admin := newKey(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	require.NoError(t, st.SetGroups(store.Groups{Sign: node.Sign,
		Policy: groups.Policy{Node: node.PubKey, Creators: groups.CreatorsMembers, Admins: map[string]bool{admin.pk: true}}}))
	// (s: the store, or a lagging replica of it whose Read is a frozen
	// snapshot's; either has every other part of the store, its Primary
	// parts the primary's)
	start := func(s Store, cache bool) *testRelay {
		cfg := testConfig()
		cfg.Info.Self, cfg.Groups, cfg.GroupAdmins = node.PubKey, true, []string{admin.pk}
		if !cache {
			cfg.CacheBytes = 0
		}
		reg := prometheus.NewRegistry()
		r, err := New(cfg, WithEventCache(cfg, Deps{Store: s, Feed: NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg}))
		require.NoError(t, err)
		return serveRelay(t, r)
	}
	cached, direct := start(st, true), start(st, false)
	require.Positive(t, cached.cfg.CacheBytes, "the default config has an event cache")

	ix, err := consumer.New(db.Pool, &indexer.Handler{Kinds: indexer.NewKinds(append(slices.Clone(indexer.DefaultKinds), 9))},
		consumer.Config{Name: indexer.ConsumerName})
	require.NoError(t, err)
	ixCtx, stopIndexer := context.WithCancel(ctx)
	ixDone := make(chan error, 1)
	go func() { ixDone <- ix.Run(ixCtx) }()
	t.Cleanup(func() { stopIndexer(); require.NoError(t, <-ixDone) })
	return &groupLeakRelays{db: db, node: node, admin: admin, st: st, cached: cached, direct: direct, start: start,
		indexed: func() {
			t.Helper()
			testkit.WaitCaughtUp(t, db.Pool, indexer.ConsumerName)
		}}
}

// authed dials tr and authenticates as k (NIP-42).
func authed(t *testing.T, k key, tr *testRelay) *client {
	t.Helper()
	c := dial(t, tr.url)
	c.authAs(k, tr.url)
	return c
}

// TestGroupPrivateLeak is the acceptance test of private and hidden groups:
// a private group's messages and moderation events, and a hidden group's
// state, are offered to an outsider (anonymous, and authenticated as no
// member), to a removed member and to one who left, on every read path a
// client reaches (REQ answered by the database, by the event cache and by a
// lagging replica's handoff; REQ by ids, by kinds, with #h; COUNT; NIP-50
// search in the relay and the indexer's HTTP search; NIP-77; live
// subscriptions opened before; a group turned private again), and none
// gets them; a member and a relay admin do (so the test can fail).
func TestGroupPrivateLeak(t *testing.T) {
	t.Parallel()
	lr := newGroupLeakRelays(t)
	ctx := context.Background()
	node, admin, st, start, cached, direct, indexed := lr.node, lr.admin, lr.st, lr.start, lr.cached, lr.direct, lr.indexed

	alice, bob, carol, dave, erin, frank := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	authed := func(k key, tr *testRelay) *client { return authed(t, k, tr) }
	pub := authed(alice, cached)
	pub.accepted(alice.note(t, "hello", nil))
	pub.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("priv")}, ""))
	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("priv"), {"name", "Priv"}}, ""))
	for _, k := range []key{bob, dave, erin} {
		authed(k, cached).accepted(k.signed(t, groups.KindJoinRequest, nostr.Tags{h("priv")}, ""))
	}
	// Written while the group was public: old messages close with it.
	early := alice.signed(t, 9, nostr.Tags{h("priv")}, "early secret words")
	pub.accepted(early)
	publicNote := carol.note(t, "a public secret recipe", nil)
	pub.accepted(publicNote)
	// A replica that stopped replaying here: it holds the group as public.
	lagging := start(freeze(t, st), false)

	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("priv"), {"name", "Priv"}, {"private"}}, ""))
	// Writes: an unauthenticated connection is asked to authenticate; a
	// non-member is refused; a member writes.
	anonWriter := dial(t, cached.url)
	anonWriter.challenge()
	late := bob.signed(t, 9, nostr.Tags{h("priv")}, "late secret words")
	anonWriter.refused(late, "auth-required: this group is private")
	authed(carol, cached).refused(carol.signed(t, 9, nostr.Tags{h("priv")}, "let me in secret"), "restricted: only members of this private group")
	authed(bob, cached).accepted(late)
	// Losing access: removed by an admin, or left.
	pub.accepted(alice.signed(t, groups.KindRemoveUser, nostr.Tags{h("priv"), {"p", dave.pk}}, ""))
	authed(erin, cached).accepted(erin.signed(t, groups.KindLeaveRequest, nostr.Tags{h("priv")}, ""))

	// A hidden (not private) group: its state only to members.
	pub.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("hid")}, ""))
	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("hid"), {"name", "Hid"}, {"hidden"}}, ""))
	indexed()

	// What is secret: every event of priv's scope but its state, and hid's state.
	everything := func(tr *testRelay) []*nostr.Event {
		c := authed(admin, tr)
		var out []*nostr.Event
		for _, f := range []map[string]any{{"#h": []string{"priv"}}, {"kinds": []int{39000, 39001, 39002, 39003}}} {
			c.send("REQ", "all", f)
			for {
				msg := c.next()
				if str(t, msg[0]) == "EOSE" {
					break
				}
				require.Equal(t, "EVENT", str(t, msg[0]), join(msg))
				var ev nostr.Event
				require.NoError(t, json.Unmarshal(msg[2], &ev))
				out = append(out, &ev)
			}
			c.send("CLOSE", "all")
		}
		return out
	}
	var secret []string
	privState := 0
	for _, ev := range everything(direct) {
		id, _ := protocol.GroupOf(ev)
		switch {
		case id == "priv" && protocol.IsGroupStateKind(ev.Kind):
			privState++ // (a private group's state is public)
		case id == "priv" || id == "hid" && protocol.IsGroupStateKind(ev.Kind):
			secret = append(secret, ev.ID)
		}
	}
	require.Contains(t, secret, early.ID)
	require.Contains(t, secret, late.ID)
	require.GreaterOrEqual(t, len(secret), 12, "messages, moderation events, hid's state")
	require.Equal(t, 4, privState)

	type reader struct {
		name   string
		key    *key // nil: anonymous
		member bool // reads everything secret
	}
	readers := []reader{{"anonymous", nil, false}, {"outsider", &carol, false}, {"removed member", &dave, false},
		{"member who left", &erin, false}, {"member", &alice, true}, {"relay admin", &admin, true}}
	leaked := func(got []string) []string {
		var out []string
		for _, id := range got {
			if slices.Contains(secret, id) {
				out = append(out, id)
			}
		}
		return out
	}
	// check is one read path for one reader: what it got of the secret. A
	// path that asks for part of it (by author, #d, search) gives a member
	// some, the others everything.
	check := func(r reader, path string, got []string) {
		t.Helper()
		l := leaked(got)
		switch {
		case r.member && slices.Contains([]string{"by author", "#d", "search", "#h"}, path[strings.LastIndex(path, " REQ ")+5:]):
			require.NotEmpty(t, l, "%s on %s: a member reads them", r.name, path)
		case r.member:
			require.ElementsMatch(t, secret, l, "%s on %s: a member reads everything", r.name, path)
		default:
			require.Empty(t, l, "%s on %s: leaked", r.name, path)
		}
	}
	pathsOf := map[string]*testRelay{"database": direct, "event cache": cached, "lagging replica": lagging}
	for _, r := range readers {
		for name, tr := range pathsOf {
			c := dial(t, tr.url)
			if r.key != nil {
				c.authAs(*r.key, tr.url)
			}
			secretKinds := []int{9, 9000, 9001, 9002, 9007, 9021, 9022, 39000, 39001, 39002, 39003}
			check(r, name+" REQ by kinds", c.req("kinds", map[string]any{"kinds": secretKinds, "limit": 500}).ids)
			check(r, name+" REQ by ids", c.req("ids", map[string]any{"ids": secret}).ids)
			check(r, name+" REQ without a filter", c.req("all", map[string]any{"limit": 500}).ids)
			check(r, name+" REQ by author", c.req("authors", map[string]any{"authors": []string{alice.pk, bob.pk, node.PubKey}}).ids)
			check(r, name+" REQ #d", c.req("d", map[string]any{"#d": []string{"priv", "hid"}}).ids)
			search := c.req("search", map[string]any{"search": "secret"})
			check(r, name+" REQ search", search.ids)
			require.Contains(t, search.ids, publicNote.ID, "search works")
			hreq := c.req("h", map[string]any{"#h": []string{"priv"}})
			switch {
			case r.member:
				check(r, name+" REQ #h", hreq.ids)
			case r.key == nil:
				require.Regexp(t, "^auth-required: ", hreq.closed, "%s: #h of a private group", r.name)
			default:
				require.Regexp(t, "^restricted: ", hreq.closed, "%s: #h of a private group", r.name)
			}
			n, reason := c.count("count", map[string]any{"kinds": secretKinds})
			require.Empty(t, reason)
			require.Len(t, c.req("kinds", map[string]any{"kinds": secretKinds, "limit": 500}).ids, n,
				"%s on %s: COUNT counts what a REQ returns", r.name, name)
			_, need := syncThrough(t, c, "neg", map[string]any{"kinds": secretKinds}, nil, 0)
			check(r, name+" NIP-77", need)
			// {} (for an anonymous reader: served from the fingerprint tree).
			if r.key == nil && tr != lagging {
				treeCurrent(t, tr)
			}
			before := negTreeSessions(tr)
			_, need = syncThrough(t, c, "negall", map[string]any{}, nil, 0)
			check(r, name+" NIP-77 {}", need)
			require.Contains(t, need, publicNote.ID)
			if r.key == nil && tr != lagging {
				require.Equal(t, before+1, negTreeSessions(tr), "%s: served from the tree", name)
			}
		}
	}
	// COUNT: the outsiders count fewer than a member.
	member, outsider := authed(alice, direct), dial(t, direct.url)
	nm, _ := member.count("c1", map[string]any{"kinds": []int{9}})
	no, _ := outsider.count("c2", map[string]any{"kinds": []int{9}})
	require.Equal(t, 2, nm)
	require.Equal(t, 0, no)

	// The indexer's HTTP search answers anyone: never a secret.
	q, err := textsearch.ParseQuery("secret")
	require.NoError(t, err)
	hits, _, err := indexer.Search(ctx, lr.db.Pool, indexer.SearchParams{Query: q, Limit: 50}, time.Now())
	require.NoError(t, err)
	var hitIDs []string
	for _, hit := range hits {
		hitIDs = append(hitIDs, hit.EventID)
	}
	require.Contains(t, hitIDs, publicNote.ID)
	require.Empty(t, leaked(hitIDs), "indexer search")

	// Live: subscriptions opened before; a member removed while subscribed.
	live, liveMember := map[string]*client{}, map[string]bool{}
	for _, r := range readers {
		for name, tr := range map[string]*testRelay{"database": direct, "event cache": cached} {
			c := dial(t, tr.url)
			if r.key != nil {
				c.authAs(*r.key, tr.url)
			}
			c.send("REQ", "live", map[string]any{"kinds": []int{1, 9}, "limit": 0})
			c.eose("live")
			live[r.name+" on "+name], liveMember[r.name+" on "+name] = c, r.member
		}
	}
	authed(frank, cached).accepted(frank.signed(t, groups.KindJoinRequest, nostr.Tags{h("priv")}, ""))
	frankLive := authed(frank, direct)
	frankLive.send("REQ", "live", map[string]any{"kinds": []int{1, 9}, "limit": 0})
	frankLive.eose("live")
	before := bob.signed(t, 9, nostr.Tags{h("priv")}, "while frank is here")
	authed(bob, cached).accepted(before)
	require.Equal(t, before.ID, frankLive.event("live").ID, "a member gets it live")
	pub.accepted(alice.signed(t, groups.KindRemoveUser, nostr.Tags{h("priv"), {"p", frank.pk}}, ""))
	after := bob.signed(t, 9, nostr.Tags{h("priv")}, "frank is gone")
	authed(bob, cached).accepted(after)
	fence := carol.note(t, "after everything", nil)
	pub.accepted(fence)
	require.Equal(t, fence.ID, frankLive.event("live").ID, "a removed member gets no event of the group live")
	for name, c := range live {
		var got []string
		for {
			ev := c.event("live")
			if ev.ID == fence.ID {
				break
			}
			got = append(got, ev.ID)
		}
		if liveMember[name] {
			require.Equal(t, []string{before.ID, after.ID}, got, name)
		} else {
			require.Empty(t, got, "%s: live events of a private group", name)
		}
	}

	// Turned public, the old messages are read by anyone; private again, at
	// once by no outsider, from the database or the cache.
	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("priv"), {"name", "Priv"}}, "turned public"))
	for _, tr := range []*testRelay{direct, cached} {
		require.Contains(t, dial(t, tr.url).req("open", map[string]any{"kinds": []int{9}, "limit": 50}).ids, early.ID)
	}
	for _, tr := range []*testRelay{direct, cached} {
		_, need := syncThrough(t, dial(t, tr.url), "open", map[string]any{}, nil, 0)
		require.Contains(t, need, early.ID, "NIP-77 {} from the tree")
	}
	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("priv"), {"name", "Priv"}, {"private"}}, "private again"))
	for _, tr := range []*testRelay{direct, cached} {
		require.Empty(t, leaked(dial(t, tr.url).req("closed", map[string]any{"kinds": []int{9}, "limit": 50}).ids))
		// NIP-77 {} right after, from the tree: none of it. (A session
		// waits for the tree itself, a second at most; under make test's
		// load the tree may need longer: the session would read the
		// database, rightly, but this test is about the tree.)
		treeCurrent(t, tr)
		before := negTreeSessions(tr)
		_, need := syncThrough(t, dial(t, tr.url), "closed", map[string]any{}, nil, 0)
		require.Empty(t, leaked(need), "NIP-77 {} right after the group turned private")
		require.Contains(t, need, publicNote.ID)
		require.Equal(t, before+1, negTreeSessions(tr), "served from the tree")
	}
}

// treeCurrent waits until tr's NIP-77 tree has applied the outbox head.
func treeCurrent(t *testing.T, tr *testRelay) {
	t.Helper()
	head, err := tr.Relay.follower.feed.Head(context.Background())
	require.NoError(t, err)
	_, ok := tr.Relay.negTree.snapshot(head, waitTimeout, nil)
	require.True(t, ok, "the tree applies the outbox head")
}

// negTreeSessions is the NIP-77 sessions tr served from its tree so far.
func negTreeSessions(tr *testRelay) int {
	return int(testutil.ToFloat64(tr.Relay.m.negTreeSessions))
}

// TestGroupDeletedLeak is the acceptance test of deleted groups: once a
// group is deleted (9008), none of its events (messages, moderation events,
// joins and leaves, the 9008 itself, the node's kind 5 that deletes its
// state) reaches an anonymous reader, an outsider, a former member, a member
// or the group's own admin, on every read path a client reaches (REQ from
// the database, the event cache and a lagging replica's handoff; by ids,
// kinds, authors, #h; COUNT; NIP-50 search in the relay and the indexer's
// HTTP search; NIP-77 with a filter and {}, the anonymous fingerprint tree
// included; live subscriptions opened before the 9008); a relay admin still
// reads all of it (so the test can fail), and `cnctl export` (the
// operator's copy) still has it. A REQ naming the group answers as for an
// unknown id (EOSE, no auth-required), and a write to it is refused as
// deleted whoever sends it.
func TestGroupDeletedLeak(t *testing.T) {
	t.Parallel()
	lr := newGroupLeakRelays(t)
	ctx := context.Background()
	node, admin, cached, direct := lr.node, lr.admin, lr.cached, lr.direct

	alice, bob, carol, erin := newKey(t), newKey(t), newKey(t), newKey(t)
	pub := authed(t, alice, cached)
	pub.accepted(alice.note(t, "hello", nil))
	pub.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("gone")}, ""))
	pub.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("gone"), {"name", "Gone"}}, ""))
	for _, k := range []key{bob, erin} {
		authed(t, k, cached).accepted(k.signed(t, groups.KindJoinRequest, nostr.Tags{h("gone")}, ""))
	}
	msgs := []*nostr.Event{alice.signed(t, 9, nostr.Tags{h("gone")}, "doomed words"),
		bob.signed(t, 9, nostr.Tags{h("gone")}, "doomed reply"), erin.signed(t, 9, nostr.Tags{h("gone")}, "doomed goodbye")}
	pub.accepted(msgs[0])
	authed(t, bob, cached).accepted(msgs[1])
	authed(t, erin, cached).accepted(msgs[2])
	authed(t, erin, cached).accepted(erin.signed(t, groups.KindLeaveRequest, nostr.Tags{h("gone")}, ""))
	publicNote := carol.note(t, "a public doomed recipe", nil)
	pub.accepted(publicNote)
	lr.indexed()
	// Public while it lives: read by anyone, from the cache too.
	for _, tr := range []*testRelay{direct, cached} {
		require.Contains(t, dial(t, tr.url).req("before", map[string]any{"kinds": []int{9}, "limit": 50}).ids, msgs[0].ID)
	}
	// A replica that stopped replaying here: it holds the group as public.
	lagging := lr.start(freeze(t, lr.st), false)

	type reader struct {
		name  string
		key   *key // nil: anonymous
		admin bool // a relay admin: reads everything
	}
	readers := []reader{{"anonymous", nil, false}, {"outsider", &carol, false}, {"former member", &erin, false},
		{"member", &bob, false}, {"group admin", &alice, false}, {"relay admin", &admin, true}}
	liveKinds := []int{1, 5, 9, 9000, 9001, 9002, 9007, 9008, 9021, 9022, 39000, 39001, 39002, 39003, 39005}
	// Live: subscriptions opened before the deletion, by kinds and by #h.
	live, liveAdmin := map[string]*client{}, map[string]bool{}
	for _, r := range readers {
		for name, tr := range map[string]*testRelay{"database": direct, "event cache": cached} {
			c := dial(t, tr.url)
			if r.key != nil {
				c.authAs(*r.key, tr.url)
			}
			c.send("REQ", "live", map[string]any{"kinds": liveKinds, "limit": 0})
			c.eose("live")
			c.send("REQ", "liveh", map[string]any{"#h": []string{"gone"}, "limit": 0})
			c.eose("liveh")
			live[r.name+" on "+name], liveAdmin[r.name+" on "+name] = c, r.admin
		}
	}

	del := alice.signed(t, groups.KindDeleteGroup, nostr.Tags{h("gone")}, "")
	pub.accepted(del)
	fence := carol.note(t, "after the deletion", nil)
	pub.accepted(fence)
	for name, c := range live {
		var got []string
		for {
			msg := c.expect("EVENT")
			var ev nostr.Event
			require.NoError(t, json.Unmarshal(msg[2], &ev))
			if ev.ID == fence.ID {
				break
			}
			got = append(got, ev.ID)
		}
		if liveAdmin[name] {
			require.Contains(t, got, del.ID, "%s: a relay admin gets the deletion live", name)
		} else {
			require.Empty(t, got, "%s: live events of a deleted group", name)
		}
	}
	lr.indexed()

	// Writes: refused as deleted, to a connection that has not authenticated
	// too (not asked to authenticate: that would not help).
	anonWriter := dial(t, cached.url)
	anonWriter.challenge()
	anonWriter.refused(bob.signed(t, 9, nostr.Tags{h("gone")}, "still there?"), "restricted: this group was deleted")
	authed(t, bob, cached).refused(bob.signed(t, 9, nostr.Tags{h("gone")}, "still there?"), "restricted: this group was deleted")

	// What is secret: everything of the group's scope, as a relay admin reads it.
	adm := authed(t, admin, direct)
	secret := adm.req("all", map[string]any{"#h": []string{"gone"}}).ids
	nodeDeletions := adm.req("kind5", map[string]any{"kinds": []int{5}, "authors": []string{node.PubKey}}).ids
	require.Len(t, nodeDeletions, 1, "the node deleted the group's state")
	secret = append(secret, nodeDeletions...)
	for _, id := range []string{msgs[0].ID, msgs[1].ID, msgs[2].ID, del.ID} {
		require.Contains(t, secret, id)
	}
	require.GreaterOrEqual(t, len(secret), 12, "messages, moderation events, joins, the leave, the 9008, the kind 5")
	leaked := func(got []string) []string {
		var out []string
		for _, id := range got {
			if slices.Contains(secret, id) {
				out = append(out, id)
			}
		}
		return out
	}
	check := func(r reader, path string, got []string, whole bool) {
		t.Helper()
		l := leaked(got)
		switch {
		case r.admin && whole:
			require.ElementsMatch(t, secret, l, "%s on %s: a relay admin reads everything", r.name, path)
		case r.admin:
			require.NotEmpty(t, l, "%s on %s: a relay admin reads them", r.name, path)
		default:
			require.Empty(t, l, "%s on %s: leaked", r.name, path)
		}
	}
	secretKinds := []int{5, 9, 9000, 9001, 9002, 9007, 9008, 9021, 9022, 39000, 39001, 39002, 39003, 39005}
	for _, r := range readers {
		for name, tr := range map[string]*testRelay{"database": direct, "event cache": cached, "lagging replica": lagging} {
			c := dial(t, tr.url)
			if r.key != nil {
				c.authAs(*r.key, tr.url)
			}
			check(r, name+" REQ by kinds", c.req("kinds", map[string]any{"kinds": secretKinds, "limit": 500}).ids, true)
			check(r, name+" REQ by ids", c.req("ids", map[string]any{"ids": secret}).ids, true)
			check(r, name+" REQ without a filter", c.req("all", map[string]any{"limit": 500}).ids, true)
			check(r, name+" REQ by author", c.req("authors", map[string]any{"authors": []string{alice.pk, bob.pk, erin.pk, node.PubKey}}).ids, true)
			hreq := c.req("h", map[string]any{"#h": []string{"gone"}})
			require.Empty(t, hreq.closed, "%s on %s: #h of a deleted group answers as an unknown id", r.name, name)
			check(r, name+" REQ #h", hreq.ids, false)
			search := c.req("search", map[string]any{"search": "doomed"})
			check(r, name+" REQ search", search.ids, false)
			require.Contains(t, search.ids, publicNote.ID, "search works")
			n, reason := c.count("count", map[string]any{"#h": []string{"gone"}})
			require.Empty(t, reason)
			if !r.admin {
				require.Zero(t, n, "%s on %s: COUNT #h of a deleted group", r.name, name)
			}
			n, reason = c.count("count", map[string]any{"kinds": secretKinds})
			require.Empty(t, reason)
			require.Len(t, c.req("kinds", map[string]any{"kinds": secretKinds, "limit": 500}).ids, n,
				"%s on %s: COUNT counts what a REQ returns", r.name, name)
			_, need := syncThrough(t, c, "neg", map[string]any{"kinds": secretKinds}, nil, 0)
			check(r, name+" NIP-77", need, true)
			// {} (for an anonymous reader: served from the fingerprint tree).
			if r.key == nil && tr != lagging {
				treeCurrent(t, tr)
			}
			before := negTreeSessions(tr)
			_, need = syncThrough(t, c, "negall", map[string]any{}, nil, 0)
			check(r, name+" NIP-77 {}", need, true)
			require.Contains(t, need, publicNote.ID)
			if r.key == nil && tr != lagging {
				require.Equal(t, before+1, negTreeSessions(tr), "%s: served from the tree", name)
			}
		}
	}

	// The indexer's HTTP search answers anyone: nothing of the group, with
	// group= or without.
	q, err := textsearch.ParseQuery("doomed")
	require.NoError(t, err)
	for _, group := range []string{"", "gone"} {
		hits, _, err := indexer.Search(ctx, lr.db.Pool, indexer.SearchParams{Query: q, Group: group, Limit: 50}, time.Now())
		require.NoError(t, err)
		var hitIDs []string
		for _, hit := range hits {
			hitIDs = append(hitIDs, hit.EventID)
		}
		if group == "" {
			require.Contains(t, hitIDs, publicNote.ID, "indexer search works")
		}
		require.Empty(t, leaked(hitIDs), "indexer search group=%q", group)
	}

	// cnctl export is the operator's copy: the group's history stays in it
	// (as private groups' and DMs do), so that it can be imported again.
	var exported []string
	require.NoError(t, lr.st.Export(ctx, nostr.Filter{Tags: nostr.TagMap{"h": {"gone"}}}, func(ev *nostr.Event) error {
		exported = append(exported, ev.ID)
		return nil
	}))
	require.Contains(t, exported, msgs[0].ID)
	require.Contains(t, exported, del.ID)
}
