package indexer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/schema"
)

var words = []string{"東京", "タワー", "北京", "大学", "running", "cities", "nostr", "relay", "寿司", "ramen", "会議", "meetup"}

// randomHistory publishes a mix of notes, addressable versions (some late),
// deletions by id and by address, and non-indexed kinds.
func randomHistory(t *testing.T, n *node, rng *rand.Rand, count int, at nostr.Timestamp) nostr.Timestamp {
	t.Helper()
	var published []*nostr.Event
	for i := 0; i < count; i++ {
		at++
		author := rng.IntN(len(n.keys))
		text := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))] + fmt.Sprintf(" %d", i)
		tags := nostr.Tags{topic(fmt.Sprintf("topic%d", rng.IntN(3)))}
		var ev *nostr.Event
		switch r := rng.IntN(10); {
		case r < 5:
			ev = n.event(t, author, 1, at, tags, text)
		case r < 7:
			// Addressable: d from a small set, created_at sometimes in the past.
			created := at - nostr.Timestamp(rng.IntN(3)*5)
			ev = n.event(t, author, 30023, created, append(tags, nostr.Tag{"d", fmt.Sprintf("d%d", rng.IntN(2))}), text)
		case r < 8 && len(published) > 0:
			target := published[rng.IntN(len(published))]
			if target.Kind >= 30000 {
				ev = n.event(t, n.authorOf(target), 5, at, nostr.Tags{{"a", fmt.Sprintf("%d:%s:%s", target.Kind, target.PubKey, target.Tags.GetD())}}, "")
			} else {
				ev = n.event(t, n.authorOf(target), 5, at, nostr.Tags{{"e", target.ID}}, "")
			}
		default:
			ev = n.event(t, author, 7, at, tags, text)
		}
		res, err := n.store.Ingest(context.Background(), []*nostr.Event{ev})
		require.NoError(t, err)
		if res[0].OK && ev.Kind != 5 {
			published = append(published, ev)
		}
	}
	return at
}

// TestReplayEquivalence: a replay from offset 0 and a rebuild end in the live
// index, also over upsert rows whose events are gone (the node's superseded
// member lists, removed by the store: issue 47).
func TestReplayEquivalence(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	testkit.HostGroups(t, n.store, testkit.GroupOpts{})
	at := testkit.GroupFlood(t, n.store, "flood", 5, base)
	randomHistory(t, n, rand.New(rand.NewPCG(1, 2)), 400, at)
	testkit.GroupFlood(t, n.store, "flood2", 5, at+1000)
	var removed int
	require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT o.event_id) FROM cn_relay.events_outbox o
		WHERE o.op = 'upsert' AND NOT EXISTS (SELECT 1 FROM cn_relay.events e WHERE e.id = o.event_id)`).Scan(&removed))
	require.GreaterOrEqual(t, removed, 10, "the outbox names removed versions")
	n.sync(t)
	live := n.dump(t)
	require.NotEqual(t, "0:", live[:2], "the history indexed something")

	// Replay from offset 0 into an empty index.
	n.stop()
	_, err := n.db.Pool.Exec(ctx, "TRUNCATE cn_index.documents; UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = '"+ConsumerName+"'", pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	n.start(t)
	n.sync(t)
	require.Equal(t, live, n.dump(t), "replayed index == live index")

	// Rebuild from the stored events; the new table has the indexes the migration made.
	indexes := func() []string {
		rows, err := n.db.Pool.Query(ctx, "SELECT indexdef FROM pg_indexes WHERE schemaname = 'cn_index' AND tablename = 'documents' ORDER BY indexname")
		require.NoError(t, err)
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return defs
	}
	before := indexes()
	require.Len(t, before, 3)
	res, err := Rebuild(ctx, n.db.Pool, RebuildOptions{RequestedBy: "test"})
	require.NoError(t, err)
	require.Equal(t, before, indexes())
	require.Equal(t, live, n.dump(t), "rebuilt index == live index")
	require.EqualValues(t, n.documents(t), res.Documents)
}

// Author returns the index of the event's author key in the node (test helper).
func (n *node) authorOf(ev *nostr.Event) int {
	for i, k := range n.keys {
		if pk, _ := nostr.GetPublicKey(k); pk == ev.PubKey {
			return i
		}
	}
	return -1
}

func TestRebuildWhileLive(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	at := randomHistory(t, n, rng, 300, base)
	n.sync(t)

	// Searches keep answering and writes keep flowing during the rebuild.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var searches, failures atomic.Int64
	query, err := textsearch.ParseQuery("nostr")
	require.NoError(t, err)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := Search(ctx, n.db.Pool, SearchParams{Query: query, Limit: 20}, time.Now()); err != nil {
				failures.Add(1)
				t.Errorf("search during rebuild: %v", err)
			}
			searches.Add(1)
		}
	})
	writes := make(chan nostr.Timestamp, 1)
	wg.Go(func() {
		writes <- randomHistory(t, n, rand.New(rand.NewPCG(5, 6)), 300, at+10_000)
	})
	for range 3 {
		_, err := Rebuild(ctx, n.db.Pool, RebuildOptions{RequestedBy: "test"})
		require.NoError(t, err)
	}
	<-writes
	close(stop)
	wg.Wait()
	require.Zero(t, failures.Load())
	require.Positive(t, searches.Load())
	n.sync(t)
	afterRebuilds := n.dump(t)

	// The reference: the same history replayed from 0 into an empty index.
	n.stop()
	_, err = n.db.Pool.Exec(ctx, "TRUNCATE cn_index.documents; UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = '"+ConsumerName+"'", pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	n.start(t)
	n.sync(t)
	require.Equal(t, n.dump(t), afterRebuilds, "rebuilds under live traffic lost or kept nothing extra")
}

func TestRebuildBeforeTheConsumerEverRan(t *testing.T) {
	n := newNode(t)
	n.stop()
	ctx := context.Background()
	_, err := n.db.Pool.Exec(ctx, "DELETE FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName)
	require.NoError(t, err)
	randomHistory(t, n, rand.New(rand.NewPCG(7, 8)), 100, base)
	res, err := Rebuild(ctx, n.db.Pool, RebuildOptions{RequestedBy: "test"})
	require.NoError(t, err)
	head := res.SnapshotSeq
	require.Positive(t, head)
	require.Equal(t, head, res.SwitchedSeq, "index-v1 starts where the rebuild ended")
	rebuilt := n.dump(t)
	n.start(t)
	n.sync(t)
	require.Equal(t, rebuilt, n.dump(t))
}

func TestOneRebuildAtATime(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	conn := n.db.Conn(t)
	var locked bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", schema.IndexRebuildLock).Scan(&locked))
	require.True(t, locked)
	_, err := Rebuild(ctx, n.db.Pool, RebuildOptions{RequestedBy: "test"})
	require.ErrorIs(t, err, ErrRebuildRunning)
	_, err = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", schema.IndexRebuildLock)
	require.NoError(t, err)
	_, err = Rebuild(ctx, n.db.Pool, RebuildOptions{RequestedBy: "test"})
	require.NoError(t, err)
}

// TestBatchTakesTheSwitchLockFirst: a live batch on a fresh connection (no
// statement prepared yet) runs while a switch-over holds the switch lock, and
// the switch-over then takes the live table. The batch waits for the switch
// lock holding nothing of the table, so the switch-over goes through and then
// the batch. (With the lock queued in the batch, preparing the batch's DELETE
// locked the table first: "deadlock detected", CI's TestRebuildWhileLive.)
func TestBatchTakesTheSwitchLockFirst(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	switcher, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = switcher.Rollback(ctx) }()
	_, err = switcher.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.IndexSwitchLock)
	require.NoError(t, err)

	live, err := db.Conn(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = live.Rollback(ctx) }()
	done := make(chan error, 1)
	go func() {
		done <- (&Handler{Kinds: NewKinds(DefaultKinds)}).apply(ctx, live, documentsTable, []string{strings.Repeat("0", 64)}, true)
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "the batch waits for the switch lock")

	_, err = switcher.Exec(ctx, "SET LOCAL lock_timeout = '5s'; LOCK TABLE cn_index.documents IN ACCESS EXCLUSIVE MODE", pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err, "the switch-over takes the table")
	require.NoError(t, switcher.Commit(ctx))
	require.NoError(t, <-done, "the batch runs once the switch-over commits")
	require.NoError(t, live.Commit(ctx))
}
