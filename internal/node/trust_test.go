package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/outbox"
)

const asOf = 1_700_000_000

// trustEnv is a test database with a store that takes identity events from
// anyone, and a node key.
type trustEnv struct {
	db    *pgtest.DB
	store *store.Store
	node  nodekey.Key
}

func newTrustEnv(t *testing.T) *trustEnv {
	t.Helper()
	db := pgtest.New(t)
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny
	key, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	w := testkit.RunWriter(t, db.Pool)
	return &trustEnv{db: db, store: store.New(db.Pool, w, rules), node: key}
}

func (e *trustEnv) ingest(t *testing.T, evs ...*nostr.Event) {
	t.Helper()
	res, err := e.store.Ingest(context.Background(), evs)
	require.NoError(t, err)
	for i, v := range res {
		require.True(t, v.OK || strings.HasPrefix(v.Message, "duplicate") || strings.HasPrefix(v.Message, "blocked: "), "%s: %s", evs[i].ID, v.Message)
	}
}

func note(t testing.TB, sk string, at int64) *nostr.Event {
	return testkit.Sign(t, sk, 1, at, nostr.Tags{{"t", "trust"}}, fmt.Sprint("note ", at))
}

// serveRelay runs a relay (real WebSocket, the env's store) for the test.
func (e *trustEnv) serveRelay(t *testing.T) string {
	t.Helper()
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	r, err := relay.New(cfg, relay.Deps{Store: e.store, Feed: relay.NewPGFeed(e.db.Pool, nil), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "ws://" + ln.Addr().String()
}

// query sends one REQ to the relay and returns the stored events it answers
// before EOSE.
func query(t *testing.T, url string, f nostr.Filter) []*nostr.Event {
	t.Helper()
	c := testkit.Dial(t, url)
	defer c.Close()
	challenge := c.Next() // the NIP-42 challenge, sent on connect by default
	require.Equal(t, "AUTH", challenge.Label(), "%s", challenge)
	evs, reason := c.Req("q", f)
	require.Empty(t, reason, "unexpected answer to a REQ")
	return evs
}

func tagValue(ev *nostr.Event, name string) string {
	if t := ev.Tags.GetFirst([]string{name, ""}); t != nil {
		return (*t)[1]
	}
	return ""
}

// TestAssertionsOverTheRelay runs the trust daemon beside a relay: a stock
// client reads the provider's profile and a subject's assertion with a plain
// REQ; when the subject falls below the cutoff its assertion is withdrawn
// (NIP-09 of its address) and the REQ finds nothing.
func TestAssertionsOverTheRelay(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	url := e.serveRelay(t)
	k := testkit.SecretKeys(3)
	seed, alice, bob := k[0], k[1], k[2]
	n := note(t, alice, 100)
	e.ingest(t, testkit.Follows(t, seed, 100, testkit.Pub(alice)), n, testkit.Sign(t, bob, 7, 110, nostr.Tags{{"e", n.ID}, {"p", testkit.Pub(alice)}}, "+"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		done <- Trust(ctx, TrustOptions{DatabaseURL: e.db.URL, Listen: "127.0.0.1:0", NodeKey: e.node, Seeds: []string{testkit.Pub(seed)},
			RecomputeInterval: time.Hour, PublishInterval: 50 * time.Millisecond, Ready: func(a string) { addr <- a },
			AsOf: func() int64 { return asOf }, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	api := "http://" + <-addr
	provider, err := e.node.Derive(trust.ProviderPurpose)
	require.NoError(t, err)

	// The first run happens at start; wait for alice's assertion.
	var assertion *nostr.Event
	filter := nostr.Filter{Kinds: []int{30382}, Authors: []string{provider.PubKey}, Tags: nostr.TagMap{"d": {testkit.Pub(alice)}}}
	require.Eventually(t, func() bool {
		evs := query(t, url, filter)
		if len(evs) == 1 && tagValue(evs[0], "reactions_cnt") == "1" {
			assertion = evs[0]
			return true
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "1", tagValue(assertion, "followers"))
	require.Equal(t, "1", tagValue(assertion, "post_cnt"))
	require.NotEmpty(t, tagValue(assertion, "rank"))
	profiles := query(t, url, nostr.Filter{Kinds: []int{0}, Authors: []string{provider.PubKey}})
	require.Len(t, profiles, 1)
	require.Contains(t, profiles[0].Content, "NIP-85")
	var listed string
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT pubkey FROM cn_trust.provider WHERE algorithm = $1`, trust.Algorithm).Scan(&listed))
	require.Equal(t, provider.PubKey, listed)

	// The HTTP API.
	resp, err := http.Get(api + "/v1/trust/" + testkit.Pub(alice) + "?explain=1")
	require.NoError(t, err)
	var s trust.Subject
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, tagValue(assertion, "rank"), itoa(s.Rank))
	require.Equal(t, []trust.Ranked{{Pubkey: testkit.Pub(seed), Rank: 100}}, s.Explains.TopFollowers)
	require.NotNil(t, s.Run)
	require.Equal(t, int64(asOf), s.Run.AsOf)
	for path, code := range map[string]int{"/v1/trust/nope": 400, "/v1/trust/" + strings.Repeat("0", 64): 404} {
		resp, err := http.Get(api + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, code, resp.StatusCode, path)
		require.Contains(t, string(body), `"error"`)
	}

	// The seed unfollows alice; a requested recompute drops her below the cutoff.
	e.ingest(t, testkit.Follows(t, seed, 200)) // bob, who reacted to alice, is no longer reached either
	head, err := outboxHead(e)
	require.NoError(t, err)
	testkit.WaitOffset(t, e.db.Pool, trust.ConsumerName, head) // the daemon's consumer has applied it
	_, err = e.db.Pool.Exec(ctx, `INSERT INTO cn_trust.requests (requested_by) VALUES ('test')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return len(query(t, url, filter)) == 0
	}, 20*time.Second, 50*time.Millisecond, "the assertion is withdrawn")
	deletions := query(t, url, nostr.Filter{Kinds: []int{5}, Authors: []string{provider.PubKey}})
	require.Len(t, deletions, 1)
	require.Equal(t, "30382:"+provider.PubKey+":"+testkit.Pub(alice), tagValue(deletions[0], "a"))
}

func outboxHead(e *trustEnv) (int64, error) { return outbox.Head(context.Background(), e.db.Pool) }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// testWriter sends log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestTrustUnderTrustRole runs the trust daemon as a login user of the trust
// group role (internal/dbroles): it follows the outbox to the head and publishes
// its assertions through the store path.
func TestTrustUnderTrustRole(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := e.db.LoginAsService(t, dbroles.Trust)
	k := testkit.SecretKeys(2)
	seed, alice := k[0], k[1]
	e.ingest(t, testkit.Follows(t, seed, 100, testkit.Pub(alice)), note(t, alice, 100))
	head, err := outbox.Head(ctx, e.db.Pool)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		done <- Trust(ctx, TrustOptions{DatabaseURL: url, Listen: "127.0.0.1:0", NodeKey: e.node, Seeds: []string{testkit.Pub(seed)},
			RecomputeInterval: time.Hour, PublishInterval: 50 * time.Millisecond,
			AsOf: func() int64 { return asOf }, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	}()
	provider, err := e.node.Derive(trust.ProviderPurpose)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var last int64
		var assertions int
		_ = e.db.Pool.QueryRow(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", trust.ConsumerName).Scan(&last)
		_ = e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE kind = 30382 AND pubkey = $1", provider.PubKey).Scan(&assertions)
		return last >= head && assertions > 0
	}, 20*time.Second, 20*time.Millisecond, "trust-v1 reaches the head and publishes under its role")
	cancel()
	require.NoError(t, <-done)
}
