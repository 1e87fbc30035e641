package relayadmin_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testRelay is one relay process's wiring (as node.Relay does it), with
// its own pool and management watcher, on a shared database.
type testRelay struct {
	url, http string
	store     *store.Store
}

func startRelay(t *testing.T, db *pgtest.DB, admins ...string) *testRelay {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := dbpool.Open(ctx, db.URL)
	require.NoError(t, err)
	w := outbox.NewWriter(pool, outbox.WriterConfig{})
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	st := store.New(pool, w, protocol.DefaultTopicRules())
	policy, err := relayadmin.Open(ctx, pool, nil)
	require.NoError(t, err)
	set := map[string]bool{}
	for _, a := range admins {
		set[a] = true
	}
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	api := &relayadmin.API{Admin: &relayadmin.Admin{Pool: pool, Store: st.Publisher(), TopicRules: st.Rules()}, Admins: set}
	r, err := relay.New(cfg, relay.Deps{Store: st, Feed: relay.NewPGFeed(pool, nil), Registerer: prometheus.NewRegistry(),
		Policy: policy, Management: api})
	require.NoError(t, err)
	policy.OnChange(func(*relayadmin.State) { r.DisconnectBlocked() })
	api.Audience = r.Audience
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rdone, pdone := make(chan error, 1), make(chan error, 1)
	go func() { rdone <- r.Serve(ctx, ln) }()
	go func() { pdone <- policy.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-rdone
		<-pdone
		<-wdone
		pool.Close()
	})
	addr := ln.Addr().String()
	return &testRelay{url: "ws://" + addr, http: "http://" + addr, store: st}
}

// call makes a NIP-86 request; edit may spoil the NIP-98 event before signing.
func call(t *testing.T, r *testRelay, admin testkit.Key, method string, params []any, edit func(*nostr.Event)) (int, map[string]any) {
	t.Helper()
	return do(t, testkit.NIP86Request(t, r.http, admin.SK, method, params, edit))
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out), "JSON body: %s", data)
	return resp.StatusCode, out
}

func TestNIP86Auth(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin, stranger := testkit.NewKey(t), testkit.NewKey(t)
	none := startRelay(t, db)
	status, body := call(t, none, admin, "supportedmethods", nil, nil)
	require.Equal(t, http.StatusUnauthorized, status, "no admin configured: 401 for everyone")
	require.Contains(t, body["error"], "no admin")
	require.NotContains(t, info(t, none)["supported_nips"], 86.0)

	r := startRelay(t, db, admin.PK)
	require.Contains(t, info(t, r)["supported_nips"], 86.0)
	status, body = call(t, r, admin, "supportedmethods", nil, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body["result"], "banpubkey")

	for _, tc := range []struct {
		name string
		edit func(*nostr.Event)
	}{
		{"stale", func(ev *nostr.Event) { ev.CreatedAt -= 120 }},
		{"from the future", func(ev *nostr.Event) { ev.CreatedAt += 120 }},
		{"wrong u", func(ev *nostr.Event) { ev.Tags[0][1] = "http://other.example/" }},
		{"wrong method", func(ev *nostr.Event) { ev.Tags[1][1] = "GET" }},
		{"wrong payload", func(ev *nostr.Event) { ev.Tags[2][1] = strings.Repeat("0", 64) }},
		{"no payload", func(ev *nostr.Event) { ev.Tags = ev.Tags[:2] }},
		{"wrong kind", func(ev *nostr.Event) { ev.Kind = 27236 }},
	} {
		status, body := call(t, r, admin, "supportedmethods", nil, tc.edit)
		require.Equal(t, http.StatusUnauthorized, status, tc.name)
		require.Contains(t, body["error"], "unauthorized", tc.name)
	}
	// A bad signature: a valid event whose signature is then changed.
	req := signedRequest(t, r, admin, `{"method":"supportedmethods","params":[]}`, func(ev *nostr.Event) {
		ev.Sig = strings.Repeat("ab", 64)
	})
	status, body = do(t, req)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body["error"], "signature")
	req, err := http.NewRequest(http.MethodPost, r.http, strings.NewReader(`{"method":"supportedmethods","params":[]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", relayadmin.ContentType)
	status, _ = do(t, req)
	require.Equal(t, http.StatusUnauthorized, status, "no Authorization header")

	status, body = call(t, r, stranger, "supportedmethods", nil, nil)
	require.Equal(t, http.StatusForbidden, status, "a valid event by a non-admin")
	require.Contains(t, body["error"], "not an admin")
}

// signedRequest builds a NIP-86 request with a correct NIP-98 event, then lets
// after spoil the signed event.
func signedRequest(t *testing.T, r *testRelay, k testkit.Key, body string, after func(*nostr.Event)) *http.Request {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	ev := k.Sign(t, &nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"u", r.http}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}})
	after(ev)
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, r.http, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", relayadmin.ContentType)
	req.Header.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString(raw))
	return req
}

func info(t *testing.T, r *testRelay) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.http, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/nostr+json")
	_, body := do(t, req)
	return body
}

func TestNIP86Methods(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin := testkit.NewKey(t)
	r := startRelay(t, db, admin.PK)
	ok := func(method string, params ...any) any {
		t.Helper()
		status, body := call(t, r, admin, method, params, nil)
		require.Equal(t, http.StatusOK, status, "%s: %v", method, body)
		return body["result"]
	}
	pk, id := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	require.Equal(t, true, ok("banpubkey", pk, "spam"))
	require.Equal(t, []any{map[string]any{"pubkey": pk, "reason": "spam"}}, ok("listbannedpubkeys"))
	require.Equal(t, true, ok("allowpubkey", pk, "ok now"))
	require.Equal(t, []any{}, ok("listbannedpubkeys"), "allowing removes the ban")
	require.Equal(t, []any{map[string]any{"pubkey": pk, "reason": "ok now"}}, ok("listallowedpubkeys"))
	require.Equal(t, true, ok("unallowpubkey", pk))
	require.Equal(t, []any{}, ok("listallowedpubkeys"))
	require.Equal(t, true, ok("banpubkey", pk))
	require.Equal(t, true, ok("unbanpubkey", pk))
	require.Equal(t, []any{}, ok("listbannedpubkeys"))

	require.Equal(t, true, ok("banevent", id, "illegal"))
	require.Equal(t, []any{map[string]any{"id": id, "reason": "illegal"}}, ok("listbannedevents"))
	require.Equal(t, true, ok("allowevent", id))
	require.Equal(t, []any{}, ok("listbannedevents"))
	require.Equal(t, []any{map[string]any{"id": id, "reason": ""}}, ok("listallowedevents"))
	require.Equal(t, true, ok("unallowevent", id))
	require.Equal(t, true, ok("banevent", id))
	require.Equal(t, true, ok("unbanevent", id))
	require.Equal(t, []any{}, ok("listbannedevents"))

	require.Equal(t, true, ok("allowkind", 1))
	require.Equal(t, true, ok("disallowkind", 4))
	require.Equal(t, []any{1.0}, ok("listallowedkinds"))
	require.Equal(t, []any{4.0}, ok("listdisallowedkinds"))
	require.Equal(t, true, ok("blockip", "192.0.2.7", "abuse"))
	require.Equal(t, true, ok("blockip", "2001:db8::/32"))
	require.Equal(t, []any{map[string]any{"ip": "192.0.2.7/32", "reason": "abuse"}, map[string]any{"ip": "2001:db8::/32", "reason": ""}},
		ok("listblockedips"))
	require.Equal(t, true, ok("unblockip", "192.0.2.7"))
	require.Len(t, ok("listblockedips"), 1)
	require.Equal(t, []any{}, ok("listeventsneedingmoderation"))

	require.Equal(t, true, ok("changerelayname", "Kukuri Tokyo"))
	require.Equal(t, true, ok("changerelaydescription", "a community"))
	require.Equal(t, true, ok("changerelayicon", "https://example.com/icon.png"))
	require.Eventually(t, func() bool { // (the watcher may load the state between two of the three changes)
		d := info(t, r)
		return d["name"] == "Kukuri Tokyo" && d["description"] == "a community" && d["icon"] == "https://example.com/icon.png"
	}, time.Second, 20*time.Millisecond, "NIP-11 follows within a second")
	doc := info(t, r)
	require.Equal(t, "a community", doc["description"])
	require.Equal(t, "https://example.com/icon.png", doc["icon"])

	for _, bad := range []struct {
		method string
		params []any
	}{
		{"banpubkey", []any{"npub1xyz"}},
		{"banpubkey", nil},
		{"allowkind", []any{"one"}},
		{"allowkind", []any{70000}},
		{"blockip", []any{"not an ip"}},
		{"nosuchmethod", nil},
		{"changerelayname", []any{7}},
		{"changerelayname", append([]any{"name"}, make([]any, 1000)...)},
		{"changerelayname", []any{"name", "extra"}},
		{"changerelayname", []any{nil}},
		{"banpubkey", []any{pk, "reason", "extra"}},
		{"banpubkey", []any{nil}},
		{"banpubkey", []any{pk, nil}},
		{"banpubkey", []any{pk, 5}},
		{"allowkind", []any{nil}},
		{"allowkind", []any{1.5}},
		{"allowkind", []any{1, 2}},
		{"listbannedpubkeys", []any{"x"}},
		{"supportedmethods", []any{nil}},
	} {
		status, body := call(t, r, admin, bad.method, bad.params, nil)
		require.Equal(t, http.StatusBadRequest, status, "%s with %d params", bad.method, len(bad.params))
		require.Contains(t, body["error"], "bad request")
	}

	var logged int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_admin.log WHERE actor = $1 AND source = 'nip86'", admin.PK).Scan(&logged))
	require.Equal(t, 18, logged, "every change (18 above) is logged with the admin's pubkey")
}

// dial connects to r and reads the NIP-42 challenge, sent on connect by
// default.
func dial(t *testing.T, r *testRelay) *testkit.Client {
	t.Helper()
	c := testkit.Dial(t, r.url)
	msg := c.Next()
	require.Equal(t, "AUTH", msg.Label(), "%s", msg)
	return c
}

// ids returns the ids of the stored events filter matches.
func ids(c *testkit.Client, filter map[string]any) []string {
	out := []string{}
	for _, ev := range c.Query(filter) {
		out = append(out, ev.ID)
	}
	return out
}

// TestBansHoldAcrossRelays: two relays on one database; a ban made through
// relay A refuses the next EVENT on relay B within a second and hides the
// author's stored events in REQ and search; allowing the pubkey restores them.
func TestBansHoldAcrossRelays(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin, alice := testkit.NewKey(t), testkit.NewKey(t)
	a, b := startRelay(t, db, admin.PK), startRelay(t, db, admin.PK)
	idx, err := consumer.New(db.Pool, &indexer.Handler{Kinds: indexer.NewKinds(indexer.DefaultKinds)},
		consumer.Config{Name: indexer.ConsumerName, LeaseTTL: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- idx.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	cb := dial(t, b)
	note := alice.Sign(t, &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "hello banana"})
	ok, reason := cb.Publish(note)
	require.True(t, ok, reason)
	searchable := func() bool {
		q, err := textsearch.ParseQuery("banana")
		require.NoError(t, err)
		hits, _, err := indexer.Search(context.Background(), db.Pool, indexer.SearchParams{Query: q, Limit: 5}, time.Now())
		require.NoError(t, err)
		return len(hits) == 1
	}
	require.Eventually(t, searchable, 10*time.Second, 10*time.Millisecond)

	status, body := call(t, a, admin, "banpubkey", []any{alice.PK, "spam"}, nil)
	require.Equal(t, http.StatusOK, status, body)
	banned := time.Now()
	var refusedAfter time.Duration
	require.Eventually(t, func() bool {
		ok, reason := cb.Publish(alice.Sign(t, &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "more"}))
		if !ok && strings.HasPrefix(reason, "blocked:") {
			refusedAfter = time.Since(banned)
			return true
		}
		return false
	}, time.Second, 20*time.Millisecond, "relay B refuses the banned pubkey within a second")
	t.Logf("relay B refused the banned pubkey %s after the ban", refusedAfter)
	for _, r := range []*testRelay{a, b} {
		require.Empty(t, ids(dial(t, r), map[string]any{"ids": []string{note.ID}}), "hidden on every relay")
	}
	require.Eventually(t, func() bool { return !searchable() }, 10*time.Second, 10*time.Millisecond, "and in search")

	status, _ = call(t, a, admin, "allowpubkey", []any{alice.PK}, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{note.ID}, ids(dial(t, b), map[string]any{"ids": []string{note.ID}}), "restored")
	require.Eventually(t, searchable, 10*time.Second, 10*time.Millisecond, "and searchable again")
	// Only what the ban hid comes back: the events published during the ban's
	// propagation (refused, or caught) stay out.
	require.Eventually(t, func() bool {
		ok, _ := cb.Publish(alice.Sign(t, &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "back"}))
		return ok
	}, time.Second, 20*time.Millisecond, "allowed again within a second")
}

// TestBlockedIP: a blocked address cannot connect (403 before the upgrade) and
// its open connections are closed.
func TestBlockedIP(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin := testkit.NewKey(t)
	r := startRelay(t, db, admin.PK)
	open := dial(t, r)
	status, _ := call(t, r, admin, "blockip", []any{"127.0.0.1", "test"}, nil)
	require.Equal(t, http.StatusOK, status)

	// The open connection is told and closed.
	msg := open.Next()
	require.Equal(t, "NOTICE", msg.Label())
	require.Contains(t, msg.Str(1), "blocked")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := open.NextCtx(ctx)
	require.ErrorIs(t, err, testkit.ErrClosed, "then closed")

	_, resp, err := testkit.Connect(t, r.url)
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "refused before the upgrade")

	status, _ = call(t, r, admin, "unblockip", []any{"127.0.0.1"}, nil)
	require.Equal(t, http.StatusOK, status)
	require.Eventually(t, func() bool {
		c, _, err := testkit.Connect(t, r.url)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, time.Second, 20*time.Millisecond)
}

// TestNIP98Replay: an Authorization event is accepted once, also when it is
// replayed to another relay process of the node (another pool, the same
// database), through real HTTP.
func TestNIP98Replay(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin := testkit.NewKey(t)
	const public = "wss://relay.example.com"
	serve := func() string {
		pool, err := dbpool.Open(context.Background(), db.URL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		api := &relayadmin.API{Admin: &relayadmin.Admin{Pool: pool, Store: store.NewPublisher(), TopicRules: protocol.DefaultTopicRules()},
			Admins: map[string]bool{admin.PK: true}, Audience: staticAudience(t, public)}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b := serve(), serve()
	body := `{"method":"changerelayname","params":["replayed"]}`
	sum := sha256.Sum256([]byte(body))
	ev := admin.Sign(t, &nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"u", public}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}})
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	send := func(url string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", relayadmin.ContentType)
		req.Header.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString(raw))
		return do(t, req)
	}
	status, answer := send(a)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	for _, url := range []string{a, b} {
		status, answer = send(url)
		require.Equal(t, http.StatusUnauthorized, status, "a replay to %s", url)
		require.Contains(t, answer["error"], "already used")
	}
	var logged int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_admin.log WHERE method = 'changerelayname'").Scan(&logged))
	require.Equal(t, 1, logged, "the change ran once")
}

// staticAudience is a fixed Audience of the given URLs.
func staticAudience(t *testing.T, urls ...string) func() audience.Set {
	t.Helper()
	a, err := audience.Parse(urls)
	require.NoError(t, err)
	return func() audience.Set { return a }
}

// TestHostileRelayedNIP98 is issue 47's replayed admin header: an admin's
// NIP-98 event signed for another service (its u tag names that service),
// POSTed here with that service's Host header, must not be accepted, and the
// call must not take effect; the same admin's header signed for this relay is.
func TestHostileRelayedNIP98(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin := testkit.NewKey(t)
	r := startRelay(t, db, admin.PK)
	target := testkit.NewKey(t).PK
	status, answer := call(t, r, admin, "allowpubkey", []any{target}, func(ev *nostr.Event) {
		ev.Tags[0][1] = "wss://nostr.other.example/"
	})
	require.Equal(t, http.StatusUnauthorized, status, "%v", answer)
	require.Contains(t, answer["error"], "the u tag must be this relay's URL")

	// The same, sent with the other service's Host header.
	body := `{"method":"allowpubkey","params":["` + target + `"]}`
	sum := sha256.Sum256([]byte(body))
	ev := admin.Sign(t, &nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"u", "https://nostr.other.example/"}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}})
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, r.http, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = "nostr.other.example"
	req.Header.Set("Content-Type", relayadmin.ContentType)
	req.Header.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString(raw))
	status, answer = do(t, req)
	require.Equal(t, http.StatusUnauthorized, status, "%v", answer)

	var allowed int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_admin.log WHERE method = 'allowpubkey'").Scan(&allowed))
	require.Zero(t, allowed, "no replayed call took effect")

	status, answer = call(t, r, admin, "allowpubkey", []any{target}, nil)
	require.Equal(t, http.StatusOK, status, "%v", answer)
}
