package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/ephemeral"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// startAppRelay serves a relay with the default configuration on db's Postgres
// store, outbox and ephemeral bus, as node.Relay wires it.
func startAppRelay(t *testing.T, db *pgtest.DB, edit func(*Config)) (*testRelay, *store.Store) {
	t.Helper()
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	st := store.New(db.Pool, startWriter(t, db), cfg.Limits.TopicRules)
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: pgStore{st}, Feed: NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry(),
		Ephemeral: ephemeral.New(db.Pool, nil)}))
	require.NoError(t, err)
	return serveRelay(t, r), st
}

// authAs authenticates c as k the way apps do (nostr-tools' onauth, NDK's
// signIn policy): it answers the challenge the relay sent on connect.
func (c *client) authAs(k key, relayURL string) {
	c.t.Helper()
	c.authenticate(k, c.challenge(), relayURL)
}

// reqSeq numbers the subscriptions of req, across the parallel tests that use it.
var reqSeq atomic.Int64

// reqResult is what a REQ got: the event ids before EOSE, or the CLOSED reason.
type reqResult struct {
	ids    []string
	closed string
}

// req runs a REQ to EOSE or CLOSED, under a subscription id of its own (a live
// event of an earlier subscription may still arrive after its CLOSE was sent;
// it is skipped).
func (c *client) req(sub string, filter map[string]any) reqResult {
	c.t.Helper()
	sub = fmt.Sprintf("%s-%d", sub, reqSeq.Add(1))
	c.send("REQ", sub, filter)
	var r reqResult
	for {
		msg := c.next()
		if len(msg) > 1 && str(c.t, msg[1]) != sub {
			continue
		}
		switch str(c.t, msg[0]) {
		case "EVENT":
			var ev nostr.Event
			require.NoError(c.t, ev.UnmarshalJSON(msg[2]))
			r.ids = append(r.ids, ev.ID)
		case "EOSE":
			c.send("CLOSE", sub)
			return r
		case "CLOSED":
			r.closed = str(c.t, msg[2])
			return r
		default:
			c.t.Fatalf("unexpected %s", join(msg))
		}
	}
}

// count runs a COUNT and returns the count, or -1 and the CLOSED reason.
func (c *client) count(sub string, filter map[string]any) (int, string) {
	c.t.Helper()
	c.send("COUNT", sub, filter)
	msg := c.next()
	// Skip late live events of earlier subscriptions.
	for len(msg) > 1 && str(c.t, msg[1]) != sub {
		msg = c.next()
	}
	switch str(c.t, msg[0]) {
	case "COUNT":
		var body struct{ Count int }
		require.NoError(c.t, json.Unmarshal(msg[2], &body))
		return body.Count, ""
	case "CLOSED":
		return -1, str(c.t, msg[2])
	}
	c.t.Fatalf("unexpected %s", join(msg))
	return 0, ""
}

// appShape is one event shape a stock app sends, and the REQ it reads it with.
type appShape struct {
	nip, name string
	// make builds the event concerning who (its author, or for events addressed
	// to a person, the person addressed); s gives the stored note the session
	// replies to and a member who may author messages.
	make func(t *testing.T, s *appSession, who key) *nostr.Event
	// read is the filter the app reads it back with.
	read func(ev *nostr.Event, who key) map[string]any
	// answers: what the relay says when who is a newcomer and when a member:
	// "ok" (OK true, no message), "pending" (OK true, pending: ...) or a refusal
	// prefix such as "restricted:".
	newcomer, member string
	// live: the app's live subscription (limit 0) gets it when it is published.
	ephemeral bool
}

// appSession is the shared state of TestAppSessions: a member's note in topic
// "nostr" and a second member (another reader, and a DM sender).
type appSession struct {
	tr           *testRelay
	note         *nostr.Event
	sender       key
	otherMember  key
	memberTopics []string
}

func appShapes() []appShape {
	replyTags := func(s *appSession) nostr.Tags {
		return nostr.Tags{{"e", s.note.ID, "", "root"}, {"p", s.note.PubKey}}
	}
	byAuthor := func(kinds ...int) func(*nostr.Event, key) map[string]any {
		return func(_ *nostr.Event, who key) map[string]any {
			return map[string]any{"kinds": kinds, "authors": []string{who.pk}}
		}
	}
	byID := func(ev *nostr.Event, _ key) map[string]any { return map[string]any{"ids": []string{ev.ID}} }
	toWho := func(kind int) func(*nostr.Event, key) map[string]any {
		return func(_ *nostr.Event, who key) map[string]any {
			return map[string]any{"kinds": []int{kind}, "#p": []string{who.pk}}
		}
	}
	return []appShape{
		{nip: "01", name: "profile", newcomer: "pending", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 0, nil, `{"name":"someone","about":"hello"}`)
			}, read: byAuthor(0)},
		{nip: "01", name: "note with a hashtag", newcomer: "ok", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 1, nostr.Tags{{"t", "Nostr"}}, "gm #nostr")
			}, read: func(ev *nostr.Event, _ key) map[string]any {
				return map[string]any{"#t": []string{"nostr"}, "ids": []string{ev.ID}}
			}},
		{nip: "02", name: "follow list", newcomer: "pending", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 3, nostr.Tags{{"p", s.note.PubKey}}, "")
			}, read: byAuthor(3)},
		{nip: "10", name: "reply", newcomer: "ok", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 1, replyTags(s), "a reply")
			}, read: func(ev *nostr.Event, _ key) map[string]any {
				return map[string]any{"kinds": []int{1}, "#e": []string{ev.Tags[0][1]}, "ids": []string{ev.ID}}
			}},
		{nip: "17", name: "DM relay list", newcomer: "pending", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 10050, nostr.Tags{{"relay", "wss://dm.example"}}, "")
			}, read: byAuthor(10050)},
		{nip: "17", name: "gift-wrapped DM to who", newcomer: "restricted:", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return newKey(t).signed(t, protocol.KindGiftWrap, nostr.Tags{{"p", who.pk}}, "c2VhbGVk")
			}, read: toWho(protocol.KindGiftWrap)},
		{nip: "18", name: "repost", newcomer: "ok", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 6, nostr.Tags{{"e", s.note.ID, ""}, {"p", s.note.PubKey}}, s.note.String())
			}, read: func(ev *nostr.Event, _ key) map[string]any {
				return map[string]any{"kinds": []int{6}, "#e": []string{ev.Tags[0][1]}, "ids": []string{ev.ID}}
			}},
		{nip: "22", name: "comment", newcomer: "ok", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 1111, nostr.Tags{{"E", s.note.ID, "", s.note.PubKey}, {"K", "1"}, {"P", s.note.PubKey},
					{"e", s.note.ID, "", s.note.PubKey}, {"k", "1"}, {"p", s.note.PubKey}}, "a comment")
			}, read: byID},
		{nip: "25", name: "reaction", newcomer: "ok", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 7, replyTags(s), "+")
			}, read: func(ev *nostr.Event, _ key) map[string]any {
				return map[string]any{"kinds": []int{7}, "#e": []string{ev.Tags[0][1]}, "ids": []string{ev.ID}}
			}},
		{nip: "46", name: "remote-signing request", newcomer: "ok", member: "ok", ephemeral: true,
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return newKey(t).signed(t, 24133, nostr.Tags{{"p", who.pk}}, "bmlwNDQ=")
			}, read: toWho(24133)},
		{nip: "51", name: "follow set", newcomer: "pending", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 30000, nostr.Tags{{"d", "friends"}, {"p", s.note.PubKey}}, "")
			}, read: byAuthor(30000)},
		{nip: "51", name: "bookmark set", newcomer: "pending", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return who.signed(t, 30003, nostr.Tags{{"d", "later"}, {"e", s.note.ID}}, "")
			}, read: byAuthor(30003)},
		{nip: "51", name: "interest list, read by #t", newcomer: "pending", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 10015, nostr.Tags{{"t", "nostr"}, {"t", "Go"}}, "")
			}, read: func(_ *nostr.Event, who key) map[string]any {
				return map[string]any{"kinds": []int{10015}, "#t": []string{"go"}, "authors": []string{who.pk}}
			}},
		{nip: "56", name: "report of who", newcomer: "restricted:", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return s.otherMember.signed(t, protocol.KindReport, nostr.Tags{{"p", who.pk, "spam"}}, "")
			}, read: toWho(protocol.KindReport)},
		{nip: "57", name: "profile zap receipt for who", newcomer: "restricted:", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return newKey(t).signed(t, protocol.KindZapReceipt, nostr.Tags{{"p", who.pk}, {"bolt11", "lnbc10n1"},
					{"description", `{"kind":9734}`}}, "")
			}, read: toWho(protocol.KindZapReceipt)},
		{nip: "65", name: "relay list", newcomer: "pending", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 10002, nostr.Tags{{"r", "wss://relay.example"}, {"r", "wss://read.example", "read"}}, "")
			}, read: byAuthor(10002)},
		{nip: "78", name: "app data", newcomer: "pending", member: "ok",
			make: func(t *testing.T, _ *appSession, who key) *nostr.Event {
				return who.signed(t, 30078, nostr.Tags{{"d", "app/settings"}}, `{"theme":"dark"}`)
			}, read: byAuthor(30078)},
		{nip: "04", name: "legacy DM to who", newcomer: "restricted:", member: "ok",
			make: func(t *testing.T, s *appSession, who key) *nostr.Event {
				return s.sender.signed(t, protocol.KindEncryptedDM, nostr.Tags{{"p", who.pk}}, "c2VjcmV0?iv=aXY=")
			}, read: toWho(protocol.KindEncryptedDM)},
	}
}

// TestAppSessions publishes, one row per event shape an app sends (the NIP
// examples of 01, 02, 04, 10, 17, 18, 22, 25, 46, 51, 56, 57, 65, 78), for a newcomer
// and for a member, over a real WebSocket against the default configuration
// and the Postgres store: the answer, then the REQ the app reads it with,
// unauthenticated, authenticated as who, and authenticated as another member.
// Private kinds (4, 1059) go only to who; pending and refused events to no one;
// ephemeral ones live only, never stored.
func TestAppSessions(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tr, _ := startAppRelay(t, db, nil)
	pub := dial(t, tr.url)
	join := func(k key) {
		ok, reason := pub.publish(k.signed(t, 1, nostr.Tags{{"t", "intro"}}, "hi, I am new here"))
		require.True(t, ok, reason)
	}
	author, sender, other := newKey(t), newKey(t), newKey(t)
	for _, k := range []key{author, sender, other} {
		join(k)
	}
	note := author.signed(t, 1, nostr.Tags{{"t", "nostr"}}, "the note everyone replies to")
	ok, reason := pub.publish(note)
	require.True(t, ok, reason)
	s := &appSession{tr: tr, note: note, sender: sender, otherMember: other}

	anon := dial(t, tr.url)
	otherReader := dial(t, tr.url)
	otherReader.authAs(other, tr.url)
	for _, shape := range appShapes() {
		for _, role := range []string{"newcomer", "member"} {
			t.Run(fmt.Sprintf("NIP-%s %s by a %s", shape.nip, shape.name, role), func(t *testing.T) {
				who := newKey(t)
				want := shape.newcomer
				if role == "member" {
					join(who)
					want = shape.member
				}
				whoReader := dial(t, tr.url)
				whoReader.authAs(who, tr.url)
				var live *client
				ev := shape.make(t, s, who)
				filter := shape.read(ev, who)
				if shape.ephemeral {
					live = whoReader
					liveFilter := map[string]any{"limit": 0}
					for k, v := range filter {
						liveFilter[k] = v
					}
					live.send("REQ", "live", liveFilter)
					live.eose("live")
				}

				ok, reason := pub.publish(ev)
				switch want {
				case "ok":
					require.True(t, ok, reason)
					require.Empty(t, reason)
				case "pending":
					require.True(t, ok, reason)
					require.Equal(t, store.MsgPending, reason)
				default:
					require.False(t, ok, reason)
					require.True(t, strings.HasPrefix(reason, want), "want %s, got %q", want, reason)
				}
				if live != nil {
					got := live.event("live")
					require.Equal(t, ev.ID, got.ID, "ephemeral events are delivered live")
					live.send("CLOSE", "live")
				}

				served := want == "ok" && !shape.ephemeral
				private := protocol.IsPrivateKind(ev.Kind)
				expect := func(r reqResult, sees bool, reader string) {
					t.Helper()
					require.Empty(t, r.closed, reader)
					if sees {
						require.Equal(t, []string{ev.ID}, r.ids, reader)
					} else {
						require.Empty(t, r.ids, reader)
					}
				}
				a := anon.req("anon", filter)
				if private {
					require.True(t, strings.HasPrefix(a.closed, "auth-required: "), "anon: %q", a.closed)
				} else {
					expect(a, served, "unauthenticated reader")
				}
				expect(whoReader.req("who", filter), served, "who")
				expect(otherReader.req("other", filter), served && !private, "another member")
				n, _ := otherReader.count("other-count", filter)
				if served && !private {
					require.Equal(t, 1, n)
				} else {
					require.Zero(t, n, "COUNT reveals nothing")
				}
			})
		}
	}
}

// TestOnboarding: a newcomer's profile, follow list and relay lists, sent
// before the first post as apps do at sign-up, are answered pending, served to
// no one, not in the outbox; the first post publishes the newest version of each
// exactly once, to REQ and to a live subscription opened before; a key that
// never posts leaves nothing served.
func TestOnboarding(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tr, st := startAppRelay(t, db, nil)
	ctx := context.Background()
	alice, lurker, bob := newKey(t), newKey(t), newKey(t)
	c := dial(t, tr.url)

	live := dial(t, tr.url)
	live.send("REQ", "profiles", map[string]any{"authors": []string{alice.pk}, "kinds": []int{0, 3, 10002, 10050}, "limit": 0})
	live.eose("profiles")

	oldProfile := alice.signed(t, 0, nil, `{"name":"al"}`)
	oldProfile.CreatedAt -= 10
	require.NoError(t, oldProfile.Sign(alice.sk))
	profile := alice.signed(t, 0, nil, `{"name":"alice"}`)
	follows := alice.signed(t, 3, nostr.Tags{{"p", bob.pk}}, "")
	relays := alice.signed(t, 10002, nostr.Tags{{"r", "wss://relay.example"}}, "")
	dmRelays := alice.signed(t, 10050, nostr.Tags{{"relay", "wss://dm.example"}}, "")
	for _, ev := range []*nostr.Event{profile, oldProfile, follows, relays, dmRelays, lurker.signed(t, 0, nil, `{"name":"lurker"}`)} {
		ok, reason := c.publish(ev)
		require.True(t, ok, reason)
		require.Equal(t, store.MsgPending, reason)
	}
	ok, reason := c.publish(profile)
	require.True(t, ok)
	require.Equal(t, store.MsgPending, reason, "a resent pending event is answered the same")
	outboxRows := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox").Scan(&n))
		return n
	}
	require.Zero(t, outboxRows(), "nothing pending is in the outbox")
	require.Empty(t, c.ids(t, "before", map[string]any{"authors": []string{alice.pk, lurker.pk}}))
	live.quiet()

	post := alice.signed(t, 1, nostr.Tags{{"t", "intro"}}, "hello, I am alice")
	ok, reason = c.publish(post)
	require.True(t, ok, reason)
	want := []string{profile.ID, follows.ID, relays.ID, dmRelays.ID}
	var got []string
	for range want {
		got = append(got, live.event("profiles").ID)
	}
	require.ElementsMatch(t, want, got, "the live subscription gets the newest version of each")
	require.ElementsMatch(t, want, c.ids(t, "after", map[string]any{"authors": []string{alice.pk}, "kinds": []int{0, 3, 10002, 10050}}))
	var upserts map[string]int
	rows, err := db.Pool.Query(ctx, "SELECT event_id, count(*) FROM cn_relay.events_outbox WHERE op = 'upsert' GROUP BY event_id")
	require.NoError(t, err)
	upserts = map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		upserts[id] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{post.ID: 1, profile.ID: 1, follows.ID: 1, relays.ID: 1, dmRelays.ID: 1}, upserts,
		"each published once, the older profile never")
	var topic string
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT topic_id FROM cn_relay.events_outbox WHERE event_id = $1", profile.ID).Scan(&topic))
	require.Equal(t, protocol.NodeTopic, topic)

	// The key that never posts: nothing served, one pending row, counted.
	require.Empty(t, c.ids(t, "lurker", map[string]any{"authors": []string{lurker.pk}}))
	ps, err := st.SweepPending(ctx)
	require.NoError(t, err)
	require.Equal(t, store.PendingStats{Events: 1, Keys: 1}, ps)

	// An operator's admission publishes it (allowpubkey uses AdmitTx).
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	p, err := st.Publisher().AdmitTx(ctx, tx, st.Rules(), []string{lurker.pk}, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, int64(1), p.Range.Last-p.Range.First+1)
	require.Len(t, c.ids(t, "admitted", map[string]any{"authors": []string{lurker.pk}}), 1)
}

// TestPrivateKindsNeverLeak: gift wraps and NIP-04 DMs reach their recipient
// (and a DM its author) and no one else: not an unauthenticated reader, not a
// stranger, not another member, by REQ with or without kinds, by COUNT, or live.
func TestPrivateKindsNeverLeak(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tr, _ := startAppRelay(t, db, nil)
	pub := dial(t, tr.url)
	alice, bob, carol, stranger := newKey(t), newKey(t), newKey(t), newKey(t)
	for _, k := range []key{alice, bob, carol} {
		ok, reason := pub.publish(k.signed(t, 1, nostr.Tags{{"t", "intro"}}, "hi"))
		require.True(t, ok, reason)
	}
	readers := map[string]*client{"anonymous": dial(t, tr.url), "stranger": dial(t, tr.url), "carol": dial(t, tr.url),
		"bob": dial(t, tr.url), "alice": dial(t, tr.url)}
	readers["stranger"].authAs(stranger, tr.url)
	readers["carol"].authAs(carol, tr.url)
	readers["bob"].authAs(bob, tr.url)
	readers["alice"].authAs(alice, tr.url)
	// Live subscriptions that do not name the private kinds (so nobody is asked to AUTH).
	broad := map[string]any{"#p": []string{bob.pk}, "limit": 0}
	for name, c := range readers {
		c.send("REQ", "broad", broad)
		c.eose("broad")
		_ = name
	}

	wrap := newKey(t).signed(t, protocol.KindGiftWrap, nostr.Tags{{"p", bob.pk}}, "c2VhbGVk")
	dm := alice.signed(t, protocol.KindEncryptedDM, nostr.Tags{{"p", bob.pk}}, "c2VjcmV0?iv=aXY=")
	marker := carol.signed(t, 1, nostr.Tags{{"t", "intro"}, {"p", bob.pk}}, "a public mention, after the DMs")
	for _, ev := range []*nostr.Event{wrap, dm, marker} {
		ok, reason := pub.publish(ev)
		require.True(t, ok, reason)
	}
	// Live: the public mention comes last, so whatever came before it is all a
	// reader got.
	for name, c := range readers {
		var got []string
		for {
			ev := c.event("broad")
			if ev.ID == marker.ID {
				break
			}
			got = append(got, ev.ID)
		}
		switch name {
		case "bob":
			require.ElementsMatch(t, []string{wrap.ID, dm.ID}, got, name)
		case "alice":
			require.Equal(t, []string{dm.ID}, got, "%s (the DM's author)", name)
		default:
			require.Empty(t, got, name)
		}
		c.send("CLOSE", "broad")
	}
	sees := map[string][]string{"bob": {marker.ID, dm.ID, wrap.ID}, "alice": {marker.ID, dm.ID}}
	for name, c := range readers {
		want := sees[name]
		if want == nil {
			want = []string{marker.ID}
		}
		require.ElementsMatch(t, want, c.ids(t, "stored", map[string]any{"#p": []string{bob.pk}}), name)
		require.ElementsMatch(t, want, c.ids(t, "by-id", map[string]any{"ids": []string{wrap.ID, dm.ID, marker.ID}}), name)
		n, reason := c.count("count", map[string]any{"#p": []string{bob.pk}})
		require.Equal(t, len(want), n, "%s: %s", name, reason)
		kinds := c.req("kinds", map[string]any{"kinds": []int{protocol.KindGiftWrap, protocol.KindEncryptedDM}})
		if name == "anonymous" {
			require.True(t, strings.HasPrefix(kinds.closed, "auth-required: "), kinds.closed)
			continue
		}
		require.ElementsMatch(t, want[1:], kinds.ids, name)
	}
}

// TestEphemeralAcrossRelays: a NIP-46 request published to relay A reaches a
// subscriber on relay B (two relays, one database) and leaves no row in any
// table.
func TestEphemeralAcrossRelays(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	a, _ := startAppRelay(t, db, nil)
	b, _ := startAppRelay(t, db, nil)
	ctx := context.Background()
	rowCounts := func() string {
		rows, err := db.Pool.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname LIKE 'cn\_%' AND c.relkind IN ('r', 'p') ORDER BY 1`)
		require.NoError(t, err)
		var tables []string
		for rows.Next() {
			var name string
			require.NoError(t, rows.Scan(&name))
			tables = append(tables, name)
		}
		require.NoError(t, rows.Err())
		var out []string
		for _, table := range tables {
			var n int
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
			out = append(out, fmt.Sprintf("%s %d", table, n))
		}
		return strings.Join(out, "\n")
	}
	before := rowCounts()

	signer, app := newKey(t), newKey(t)
	sub := dial(t, b.url)
	sub.send("REQ", "nip46", map[string]any{"kinds": []int{24133}, "#p": []string{signer.pk}, "limit": 0})
	sub.eose("nip46")
	// A request larger than one notification payload travels in chunks.
	for _, content := range []string{"bmlwNDQgcmVxdWVzdA==", strings.Repeat("QUJD", 6000)} {
		req := app.signed(t, 24133, nostr.Tags{{"p", signer.pk}}, content)
		start := time.Now()
		ok, reason := dial(t, a.url).publish(req)
		require.True(t, ok, reason)
		got := sub.event("nip46")
		require.Equal(t, req.ID, got.ID)
		require.Equal(t, req.Content, got.Content)
		require.True(t, got.CheckID(), "delivered intact")
		t.Logf("%d bytes from relay A to a subscriber of relay B in %s", len(req.String()), time.Since(start))
	}
	require.Equal(t, before, rowCounts(), "ephemeral events leave no row")

	// For comparison, a stored note takes the outbox path between the relays.
	member := newKey(t)
	notes := dial(t, b.url)
	notes.send("REQ", "notes", map[string]any{"authors": []string{member.pk}, "limit": 0})
	notes.eose("notes")
	note := member.signed(t, 1, nostr.Tags{{"t", "intro"}}, "stored, for comparison")
	start := time.Now()
	ok, reason := dial(t, a.url).publish(note)
	require.True(t, ok, reason)
	require.Equal(t, note.ID, notes.event("notes").ID)
	t.Logf("a stored note from relay A to a subscriber of relay B in %s", time.Since(start))
	require.Empty(t, dial(t, b.url).ids(t, "stored", map[string]any{"kinds": []int{24133}}))
}
