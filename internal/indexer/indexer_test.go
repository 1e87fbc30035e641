package indexer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// node is a relay store plus a live index-v1 consumer on one test database.
type node struct {
	db    *pgtest.DB
	store *store.Store
	keys  []string
	stop  func()
}

func newNode(t *testing.T) *node {
	t.Helper()
	db := pgtest.New(t)
	n := &node{db: db, store: testkit.NewStore(db.Pool)}
	for range 3 {
		n.keys = append(n.keys, nostr.GeneratePrivateKey())
	}
	n.start(t)
	return n
}

// start runs the index-v1 consumer until stop or the end of the test.
func (n *node) start(t *testing.T) {
	t.Helper()
	c, err := consumer.New(n.db.Pool, &Handler{Kinds: NewKinds(DefaultKinds)}, consumer.Config{Name: ConsumerName, LeaseTTL: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	merged := make(chan struct{})
	go func() { defer close(merged); CleanPending(ctx, n.db.Pool, slog.New(slog.DiscardHandler)) }()
	stopped := false
	n.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
			<-merged
		}
	}
	t.Cleanup(func() { n.stop() })
}

// sync waits until index-v1 has applied the whole outbox.
func (n *node) sync(t *testing.T) {
	t.Helper()
	testkit.WaitCaughtUp(t, n.db.Pool, ConsumerName)
}

func (n *node) event(t *testing.T, author, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
	require.NoError(t, ev.Sign(n.keys[author]))
	return ev
}

func (n *node) publish(t *testing.T, evs ...*nostr.Event) {
	t.Helper()
	res, err := n.store.Ingest(context.Background(), evs)
	require.NoError(t, err)
	for i, r := range res {
		require.True(t, r.OK, "event %d refused: %s", i, r.Message)
	}
}

// search returns the ids the index answers for q (all pages), in result order.
func (n *node) search(t *testing.T, q string, p SearchParams) []string {
	t.Helper()
	query, err := textsearch.ParseQuery(q)
	require.NoError(t, err)
	p.Query = query
	if p.Limit == 0 {
		p.Limit = MaxLimit
	}
	var ids []string
	for {
		hits, next, err := Search(context.Background(), n.db.Pool, p, time.Now())
		require.NoError(t, err)
		for _, h := range hits {
			ids = append(ids, h.EventID)
		}
		if next == nil {
			return ids
		}
		p.After = next
	}
}

func (n *node) documents(t *testing.T) int {
	t.Helper()
	var c int
	require.NoError(t, n.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cn_index.documents").Scan(&c))
	return c
}

// dump is a canonical hash of every document, for equivalence checks.
func (n *node) dump(t *testing.T) string {
	t.Helper()
	rows, err := n.db.Pool.Query(context.Background(), `SELECT event_id, pubkey, kind, created_at, topics::text,
		coalesce(effective_key, '-'), coalesce(expires_at::text, '-'), tsv::text FROM cn_index.documents ORDER BY event_id`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id, pk, topics, key, exp, tsv string
		var kind int
		var at int64
		err := r.Scan(&id, &pk, &kind, &at, &topics, &key, &exp, &tsv)
		return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%s|%s", id, pk, kind, at, topics, key, exp, tsv), err
	})
	require.NoError(t, err)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l + "\n"))
	}
	return strconv.Itoa(len(lines)) + ":" + hex.EncodeToString(h.Sum(nil))
}

var base = nostr.Timestamp(1_700_000_000)

func topic(v string) nostr.Tag { return nostr.Tag{"t", v} }

func TestIndexReflectsRelayChanges(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()

	// Upsert.
	note := n.event(t, 0, 1, base, nostr.Tags{topic("Tokyo")}, "昨日は東京タワーに行った")
	n.publish(t, note)
	n.sync(t)
	require.Equal(t, []string{note.ID}, n.search(t, "東京", SearchParams{}))
	require.Equal(t, []string{note.ID}, n.search(t, "タワー", SearchParams{Topic: "tokyo"}))
	require.Empty(t, n.search(t, "東京", SearchParams{Topic: "osaka"}))
	require.Empty(t, n.search(t, "大阪", SearchParams{}))

	// Duplicate delivery: applying the same rows again changes nothing.
	before := n.dump(t)
	rows, err := outbox.ReadAfter(ctx, n.db.Pool, 0, 1000, nil)
	require.NoError(t, err)
	h := &Handler{Kinds: NewKinds(DefaultKinds)}
	for range 2 {
		require.NoError(t, pgx.BeginFunc(ctx, n.db.Pool, func(tx pgx.Tx) error { return h.Handle(ctx, tx, rows) }))
	}
	require.Equal(t, before, n.dump(t))

	// Kinds that are not indexed get no document.
	reaction := n.event(t, 1, 7, base+1, nostr.Tags{topic("tokyo"), {"e", note.ID}}, "東京")
	n.publish(t, reaction)
	n.sync(t)
	require.Equal(t, []string{note.ID}, n.search(t, "東京", SearchParams{}))

	// NIP-09 deletion removes the document.
	n.publish(t, n.event(t, 0, 5, base+2, nostr.Tags{{"e", note.ID}}, ""))
	n.sync(t)
	require.Empty(t, n.search(t, "東京", SearchParams{}))
	require.Equal(t, 0, n.documents(t))

	// Addressable replacement: the newer version replaces the document; a late
	// older version never does.
	v1 := n.event(t, 1, 30023, base+10, nostr.Tags{topic("go"), {"d", "post"}}, "alpha release notes")
	n.publish(t, v1)
	n.sync(t)
	require.Equal(t, []string{v1.ID}, n.search(t, "alpha", SearchParams{}))
	v2 := n.event(t, 1, 30023, base+20, nostr.Tags{topic("go"), {"d", "post"}, {"title", "Gamma"}}, "beta release notes")
	n.publish(t, v2)
	n.sync(t)
	require.Empty(t, n.search(t, "alpha", SearchParams{}))
	require.Equal(t, []string{v2.ID}, n.search(t, "beta", SearchParams{}))
	require.Equal(t, []string{v2.ID}, n.search(t, "gamma", SearchParams{}), "the title is indexed")
	late := n.event(t, 1, 30023, base+15, nostr.Tags{topic("go"), {"d", "post"}}, "delta release notes")
	n.publish(t, late)
	n.sync(t)
	require.Empty(t, n.search(t, "delta", SearchParams{}))
	require.Equal(t, []string{v2.ID}, n.search(t, "release", SearchParams{}))

	// Replaceable kind 0 is not indexed by default, but a replaceable of an indexed
	// kind behaves like the addressable one; deleting the effective version
	// promotes the newest remaining one.
	n.publish(t, n.event(t, 1, 5, base+30, nostr.Tags{{"e", v2.ID}}, ""))
	n.sync(t)
	require.Equal(t, []string{late.ID}, n.search(t, "release", SearchParams{}), "promoted after the delete")

	// Expiration: hidden at query time once expired, removed by the sweep.
	exp := time.Now().Add(1500 * time.Millisecond).Unix()
	short := n.event(t, 2, 1, base+40, nostr.Tags{topic("go"), {"expiration", strconv.FormatInt(exp, 10)}}, "ephemeral announcement")
	n.publish(t, short)
	n.sync(t)
	require.Equal(t, []string{short.ID}, n.search(t, "announcement", SearchParams{}))
	time.Sleep(time.Until(time.Unix(exp+1, 0)))
	require.Empty(t, n.search(t, "announcement", SearchParams{}), "hidden at query time")
	swept, err := n.store.Sweep(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, swept)
	n.sync(t)
	var left int
	require.NoError(t, n.db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_index.documents WHERE event_id = $1", short.ID).Scan(&left))
	require.Zero(t, left, "the sweep's delete row removed the document")
}

// TestInheritedTopicsAreIndexed: replies and NIP-22 comments without t tags are
// indexed under the topics they inherit (they are human text); reactions are not
// indexed (not a text kind by default).
func TestInheritedTopicsAreIndexed(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	note := n.event(t, 0, 1, 1_700_000_000, nostr.Tags{{"t", "go"}, {"t", "nostr"}}, "a question about goroutines")
	reply := n.event(t, 1, 1, 1_700_000_001, nostr.Tags{{"e", note.ID, "", "root"}}, "use channels for goroutines")
	comment := n.event(t, 2, 1111, 1_700_000_002, nostr.Tags{{"E", note.ID}, {"K", "1"}}, "goroutines are cheap")
	reaction := n.event(t, 2, 7, 1_700_000_003, nostr.Tags{{"e", note.ID}}, "goroutines")
	n.publish(t, note, reply, comment, reaction)
	n.sync(t)
	want := []string{comment.ID, reply.ID, note.ID} // relevance ties: newest first
	require.ElementsMatch(t, want, n.search(t, "goroutines", SearchParams{Topic: "go"}))
	require.ElementsMatch(t, want, n.search(t, "goroutines", SearchParams{Topic: "nostr"}))
	require.Empty(t, n.search(t, "goroutines", SearchParams{Topic: "rust"}))
	var topics []string
	require.NoError(t, n.db.Pool.QueryRow(context.Background(),
		"SELECT topics FROM cn_index.documents WHERE event_id = $1", reply.ID).Scan(&topics))
	require.ElementsMatch(t, []string{"go", "nostr"}, topics)
}

// TestProfilesSearchableDirectMessagesNever: a member's profile is found by its
// name (not by its JSON keys); direct messages (kinds 4, 1059) get no document
// even from a handler told to index them, and --kinds refuses them.
func TestProfilesSearchableDirectMessagesNever(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := testkit.NewStore(db.Pool)
	n := &node{db: db, store: st}
	for range 3 {
		n.keys = append(n.keys, nostr.GeneratePrivateKey())
	}
	bob, err := nostr.GetPublicKey(n.keys[1])
	require.NoError(t, err)
	n.publish(t, n.event(t, 0, 1, base, nostr.Tags{topic("intro")}, "hello"), n.event(t, 1, 1, base, nostr.Tags{topic("intro")}, "hi"))
	profile := n.event(t, 0, 0, base+1, nil, `{"name":"Zebulon","about":"keeps bees","picture":"https://x.example/about.png"}`)
	dm := n.event(t, 0, protocol.KindEncryptedDM, base+2, nostr.Tags{{"p", bob}}, "Zebulon secret?iv=aXY=")
	wrap := n.event(t, 2, protocol.KindGiftWrap, base+3, nostr.Tags{{"p", bob}}, "Zebulon sealed")
	n.publish(t, profile, dm, wrap)

	c, err := consumer.New(db.Pool, &Handler{Kinds: NewKinds(append(slices.Clone(DefaultKinds), protocol.KindEncryptedDM, protocol.KindGiftWrap))},
		consumer.Config{Name: ConsumerName, LeaseTTL: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	n.sync(t)
	cancel()
	if err := <-done; err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}

	require.Equal(t, []string{profile.ID}, n.search(t, "zebulon", SearchParams{}), "the profile by name; never a DM")
	require.Equal(t, []string{profile.ID}, n.search(t, "bees", SearchParams{}))
	require.Empty(t, n.search(t, "picture", SearchParams{}), "JSON keys are not profile text")
	var docs int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cn_index.documents WHERE kind IN (4, 1059)").Scan(&docs))
	require.Zero(t, docs)
	_, err = ParseKinds("1,1059")
	require.ErrorContains(t, err, "never indexed")
}
