package durability_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// TestTrustAfterALostCommit: trust's consumer commits its batches
// asynchronously unless they must be durable, and it caches the ids of the
// keys it inserts once their batch has committed. Here trust applies follow
// lists naming keys it has not seen, a note by each author, then a last
// batch of lists naming new keys, and the server crashes right after (the
// WAL writer set to flush only every 10 s, nothing else committing; what a
// crash loses is the WAL not yet written, the tail). Had that last batch
// committed asynchronously, it would be lost while its ids stay cached, and
// its rows, applied again, would name ids of no key (it did: 120 such ids
// before the fix). So the last batch must be durable; the same trust process
// goes on after the restart; every id in trust's tables names a key, and
// every follow list and every post counts once.
func TestTrustAfterALostCommit(t *testing.T) {
	dir := filepath.Join(baseDir(t), "primary")
	pg := startServer(t, dir, "wal_writer_delay = '10s'", "wal_writer_flush_after = '256MB'", "autovacuum = off")
	createDB(t, pg)
	url := pg.URL(dbName)
	d := startDaemons(t, url, nil, nodeKeys{}, "relay")

	// 40 authors, each publishing one follow list naming 5 keys of its own.
	var h history
	for c := 0; c < 40; c++ {
		sk := fixedKey(2000 + c)
		ev := &nostr.Event{Kind: 3, CreatedAt: nostr.Timestamp(1_760_000_000 + c)}
		for j := 0; j < 5; j++ {
			pk, _ := nostr.GetPublicKey(fixedKey(3000 + 10*c + j))
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
		require.NoError(t, ev.Sign(sk))
		h.keys = append(h.keys, sk)
		h.clients = append(h.clients, []*nostr.Event{ev})
	}
	publishAll(t, d.relay, h, 0, nil)
	// Then one note by each author: batches that add no key, which commit
	// asynchronously and which the crash can take back.
	var notes history
	for c, sk := range h.keys {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1_760_001_000 + c), Tags: nostr.Tags{{"t", "trust"}}, Content: "a post"}
		require.NoError(t, ev.Sign(sk))
		notes.keys = append(notes.keys, sk)
		notes.clients = append(notes.clients, []*nostr.Event{ev})
	}
	publishAll(t, d.relay, notes, 0, nil)
	// Last, ten more authors' lists naming keys trust has not seen: the last
	// batch adds keys.
	var last history
	for c := 0; c < 10; c++ {
		sk := fixedKey(4000 + c)
		ev := &nostr.Event{Kind: 3, CreatedAt: nostr.Timestamp(1_760_002_000 + c)}
		for j := 0; j < 5; j++ {
			pk, _ := nostr.GetPublicKey(fixedKey(5000 + 10*c + j))
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
		require.NoError(t, ev.Sign(sk))
		last.keys = append(last.keys, sk)
		last.clients = append(last.clients, []*nostr.Event{ev})
	}
	publishAll(t, d.relay, last, 0, nil)
	d.stop() // (its statistics upkeep commits, which flush the WAL)
	var head int64
	require.NoError(t, queryRow(t, url, "SELECT seq FROM cn_relay.outbox_head").Scan(&head))

	// trust's consumer (what the trust daemon runs, without its scheduler
	// and publisher, whose commits would flush the WAL) applies them, then
	// the server crashes at once.
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	defer pool.Close()
	c, err := consumer.New(pool, &trust.Graph{}, consumer.Config{Name: trust.ConsumerName, BatchSize: 10,
		LeaseTTL: time.Minute}) // (a renewal is a commit that flushes the WAL)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("trust: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("trust did not stop")
		}
	})
	require.Eventually(t, func() bool {
		var off int64
		err := queryRow(t, url, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", trust.ConsumerName).Scan(&off)
		return err == nil && off >= head
	}, 2*time.Minute, time.Millisecond, "trust applies the follow lists")
	require.NoError(t, pg.Crash(context.Background()))
	pg, err = pgembed.Start(context.Background(), pgembed.Config{DataDir: dir, Port: pg.Port(),
		Settings: []string{"wal_writer_delay = '10s'", "wal_writer_flush_after = '256MB'", "autovacuum = off"}})
	require.NoError(t, err)
	t.Cleanup(func() { stop(t, pg) })
	var after int64
	require.NoError(t, queryRow(t, url, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", trust.ConsumerName).Scan(&after))
	t.Logf("trust's offset: %d before the crash, %d after it (head %d)", head, after, head)

	// The same trust process catches up again.
	require.Eventually(t, func() bool {
		var off int64
		err := queryRow(t, url, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", trust.ConsumerName).Scan(&off)
		return err == nil && off >= head
	}, 2*time.Minute, 20*time.Millisecond, "trust catches up after the restart")
	var orphans, lists, followers, posts int64
	require.NoError(t, queryRow(t, url, `SELECT
		(SELECT count(*) FROM (SELECT author AS id FROM cn_trust.sets UNION ALL SELECT unnest(targets) FROM cn_trust.sets
			UNION ALL SELECT id FROM cn_trust.subject_deltas UNION ALL SELECT id FROM cn_trust.subjects) i
			WHERE NOT EXISTS (SELECT 1 FROM cn_trust.pubkeys k WHERE k.id = i.id)),
		(SELECT count(*) FROM cn_trust.sets s JOIN cn_trust.pubkeys k ON k.id = s.author),
		(SELECT coalesce(sum(c.followers), 0) FROM (SELECT id, followers FROM cn_trust.subjects UNION ALL SELECT id, followers FROM cn_trust.subject_deltas) c
			JOIN cn_trust.pubkeys k ON k.id = c.id),
		(SELECT coalesce(sum(c.post_cnt), 0) FROM (SELECT id, post_cnt FROM cn_trust.subjects UNION ALL SELECT id, post_cnt FROM cn_trust.subject_deltas) c
			JOIN cn_trust.pubkeys k ON k.id = c.id)`).Scan(&orphans, &lists, &followers, &posts))
	require.Zero(t, orphans, "ids in trust's tables that name no key")
	require.Equal(t, int64(50), lists, "follow lists by known authors")
	require.Equal(t, int64(250), followers, fmt.Sprintf("followers of known keys (%d lists of 5)", lists))
	require.Equal(t, int64(40), posts, "posts of known keys")
	require.Equal(t, head, after, "trust's last batch added keys: it committed durably")
}
