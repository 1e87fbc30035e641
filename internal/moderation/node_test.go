package moderation

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testNode is a relay (real WebSocket, Postgres store, outbox) with the
// moderation-v1 and index-v1 consumers running on one test database.
type testNode struct {
	db      *pgtest.DB
	key     nodekey.Key
	store   *store.Store
	url     string
	reg     *prometheus.Registry
	mod     *Moderator
	stopMod func()
	// wrap, if set before startModerator, wraps the moderator's handler.
	wrap func(consumer.Handler) consumer.Handler
	// batch is the moderator's batch size (0: the default).
	batch int
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	db := pgtest.New(t)
	key, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	w := testkit.RunWriter(t, db.Pool)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := &testNode{db: db, key: key, store: store.New(db.Pool, w, protocol.DefaultTopicRules())}

	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	r, err := relay.New(cfg, relay.Deps{Store: n.store, Feed: relay.NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	n.url = "ws://" + ln.Addr().String()

	runConsumer(t, ctx, db, &indexer.Handler{Kinds: indexer.NewKinds(indexer.DefaultKinds)}, indexer.ConsumerName, 0)
	return n
}

// runConsumer runs a consumer until the returned stop or the end of the test.
func runConsumer(t *testing.T, ctx context.Context, db *pgtest.DB, h consumer.Handler, name string, batch int) func() {
	t.Helper()
	c, err := consumer.New(db.Pool, h, consumer.Config{Name: name, LeaseTTL: time.Second, BatchSize: batch, RetryBase: 10 * time.Millisecond})
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// startModerator runs moderation-v1 (again, after a stop).
func (n *testNode) startModerator(t *testing.T) {
	t.Helper()
	n.reg = prometheus.NewRegistry()
	n.mod = New(Config{Key: n.key, Store: n.store.Publisher(), Registerer: n.reg})
	var h consumer.Handler = n.mod
	if n.wrap != nil {
		h = n.wrap(h)
	}
	n.stopMod = runConsumer(t, context.Background(), n.db, h, ConsumerName, n.batch)
}

// applyRules makes file the rule set.
func (n *testNode) applyRules(t *testing.T, file string) {
	t.Helper()
	rules, err := ParseFile([]byte(file))
	require.NoError(t, err)
	_, err = ApplyRules(context.Background(), n.db.Pool, rules, "test", true)
	require.NoError(t, err)
}

// sync waits until consumer name has applied the whole outbox.
func (n *testNode) sync(t *testing.T, name string) {
	t.Helper()
	testkit.WaitCaughtUp(t, n.db.Pool, name)
}

func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// author is a test key.
type author struct{ sk, pk string }

func newAuthor(t *testing.T) author {
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	return author{sk, pk}
}

func (a author) event(t *testing.T, kind int, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: content}
	require.NoError(t, ev.Sign(a.sk))
	return ev
}

const (
	waitLong  = 15 * time.Second
	pollEvery = 5 * time.Millisecond
)
