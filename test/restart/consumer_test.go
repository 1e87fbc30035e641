package restart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/bridge"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// consumerCase is one consumer daemon restarted by TestConsumerRestartWithoutGap.
// setup returns its extra flags and the check that every event had its
// effect exactly once (ids: the events published, all by author).
type consumerCase struct {
	bin      string
	consumer string
	setup    func(t *testing.T, db *pgtest.DB) (flags []string, once onceCheck)
}

type onceCheck func(t *testing.T, author string, ids []string)

var consumerCases = []consumerCase{
	{bin: "indexer", consumer: indexer.ConsumerName,
		setup: func(_ *testing.T, db *pgtest.DB) ([]string, onceCheck) {
			return nil, func(t *testing.T, _ string, ids []string) {
				var docs, distinct int
				require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT event_id) FROM cn_index.documents WHERE event_id = ANY($1)", ids).Scan(&docs, &distinct))
				require.Equal(t, len(ids), distinct, "every event indexed")
				require.Equal(t, distinct, docs, "none twice")
			}
		}},
	{bin: "moderator", consumer: moderation.ConsumerName,
		setup: func(t *testing.T, db *pgtest.DB) ([]string, onceCheck) {
			rules, err := moderation.ParseFile([]byte("rules:\n  - name: restarts\n    content_regex: restarts\n    label: spam\n    action: hide\n"))
			require.NoError(t, err)
			_, err = moderation.ApplyRules(context.Background(), db.Pool, rules, "test", true)
			require.NoError(t, err)
			key, _ := daemontest.KeyFiles(t)
			return []string{"--node-key-file", key}, func(t *testing.T, _ string, ids []string) {
				ctx := context.Background()
				var labels, labelled, hides, hidden, gone int
				require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT target_id) FROM cn_moderation.labels WHERE target_id = ANY($1)", ids).Scan(&labels, &labelled))
				require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT event_id) FROM cn_moderation.actions WHERE action = 'hide' AND event_id = ANY($1)", ids).Scan(&hides, &hidden))
				require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE deleted_at IS NOT NULL AND id = ANY($1)", ids).Scan(&gone))
				require.Equal(t, len(ids), labelled, "every event labelled")
				require.Equal(t, labelled, labels, "no label twice")
				require.Equal(t, len(ids), hidden, "every event hidden by the rule")
				require.Equal(t, hidden, hides, "no hide twice")
				require.Equal(t, len(ids), gone)
			}
		}},
	{bin: "trust", consumer: trust.ConsumerName,
		setup: func(t *testing.T, db *pgtest.DB) ([]string, onceCheck) {
			key, _ := daemontest.KeyFiles(t)
			return []string{"--node-key-file", key, "--recompute-interval", "1h"}, func(t *testing.T, author string, ids []string) {
				// The consumer's counter changes, folded or not yet (one statement: one snapshot).
				var posts int
				require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT
				coalesce((SELECT s.post_cnt FROM cn_trust.subjects s JOIN cn_trust.pubkeys k ON k.id = s.id WHERE k.pubkey = $1), 0) +
				coalesce((SELECT sum(d.post_cnt) FROM cn_trust.subject_deltas d JOIN cn_trust.pubkeys k ON k.id = d.id WHERE k.pubkey = $1), 0)`,
					author).Scan(&posts))
				require.Equal(t, len(ids), posts, "the author's post count: each note once")
			}
		}},
	{bin: "bridge", consumer: bridge.ConsumerName,
		setup: func(t *testing.T, db *pgtest.DB) ([]string, onceCheck) {
			url := testkit.NATS(t).ClientURL()
			return []string{"--nats-url", url}, func(t *testing.T, _ string, _ []string) {
				// The stream holds each outbox row once, in order, none missing.
				ctx := context.Background()
				rows, err := db.Pool.Query(ctx, "SELECT seq FROM cn_relay.events_outbox ORDER BY seq")
				require.NoError(t, err)
				want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				require.NoError(t, err)
				require.Equal(t, want, streamSeqs(t, url), "the stream's Nats-Msg-Id, in stream order")
			}
		}},
}

// streamSeqs reads the bridge's stream from its first message to its last
// and returns their Nats-Msg-Id (the outbox seq) in stream order.
func streamSeqs(t *testing.T, url string) []int64 {
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	s, err := js.Stream(ctx, node.DefaultBridgeStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var seqs []int64
	for n := info.State.FirstSeq; n <= info.State.LastSeq && info.State.Msgs > 0; n++ {
		m, err := s.GetMsg(ctx, n)
		require.NoError(t, err)
		seq, err := strconv.ParseInt(m.Header.Get(jetstream.MsgIDHeader), 10, 64)
		require.NoError(t, err)
		seqs = append(seqs, seq)
	}
	return seqs
}

// TestConsumerRestartWithoutGap restarts each consumer daemon (the indexer,
// the moderator, trust and the bridge, real processes) the way the relay is
// restarted, while events keep coming: a new process with the same
// configuration (--reuse-port: the same --listen) starts beside the old one
// and waits as a standby; SIGTERM to the old one releases the lease, and the
// new one takes over at once (well within the lease's 5s, which is what a
// lost lease would cost) from the offset the old one committed: no row
// skipped, none applied twice (the indexer: one search document per event;
// the moderator: one label and one hide per event; trust: the author's post
// count is the number of notes; the bridge: the stream holds every outbox
// row once, in seq order). make test-long restarts each three times, then
// kills the active process (SIGKILL) and checks the same once the lease has
// expired.
func TestConsumerRestartWithoutGap(t *testing.T) {
	for _, tc := range consumerCases {
		t.Run(tc.bin, func(t *testing.T) { restartConsumer(t, tc) })
	}
}

func restartConsumer(t *testing.T, tc consumerCase) {
	bin := build(t, tc.bin)
	db := pgtest.New(t)
	ctx := context.Background()
	extra, once := tc.setup(t, db)
	st := store.New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
	key := nostr.GeneratePrivateKey()
	var (
		mu  sync.Mutex
		ids []string
	)
	publish := func(n int) {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", topic}}, Content: fmt.Sprintf("note %d about restarts", n)}
		require.NoError(t, ev.Sign(key))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
		mu.Lock()
		ids = append(ids, ev.ID)
		mu.Unlock()
	}
	for i := range 50 {
		publish(i)
	}
	// Events keep coming during the handover, one every 5 ms.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for n := 50; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				publish(n)
			}
		}
	})

	addr := testkit.FreeAddr(t)
	args := append([]string{"--listen", addr, "--database-url", db.URL, "--reuse-port", "--batch-size", "10"}, extra...)
	logs := t.TempDir()
	cur := startProc(t, bin, args, filepath.Join(logs, tc.bin+"-0.log"), "active")
	var active struct {
		Generation int64 `json:"generation"`
		LastSeq    int64 `json:"last_seq"`
	}
	require.NoError(t, json.Unmarshal([]byte(cur.line("active")), &active))
	// make test restarts once; make test-long three times, then kills the
	// active one (SIGKILL, mid-batch as likely as not): the standby takes over
	// when the lease expires, and the batch the killed one had not committed
	// is applied once, by the new one.
	rounds, killed := 3, true
	if testing.Short() {
		rounds, killed = 1, false
	}
	var left int64
	for round := 1; round <= rounds+btoi(killed); round++ {
		kill := round > rounds
		testkit.WaitOffset(t, db.Pool, tc.consumer, left+1) // the active one made progress
		next := startProc(t, bin, args, filepath.Join(logs, fmt.Sprintf("%s-%d.log", tc.bin, round)), "another instance is active; waiting as standby")
		signalled := time.Now()
		if kill {
			require.NoError(t, cur.cmd.Process.Kill())
			require.Error(t, <-cur.exited, "killed")
		} else {
			require.NoError(t, cur.stop(t, 30*time.Second), "the old %s exits 0", tc.bin)
		}
		exited := time.Now()
		var err error
		left, err = consumer.Offset(ctx, db.Pool, tc.consumer)
		require.NoError(t, err)
		prev := active.Generation
		require.NoError(t, json.Unmarshal([]byte(next.waitLine(t, "active", 30*time.Second)), &active))
		took := time.Since(exited)
		require.Equal(t, left, active.LastSeq, "the new instance starts at the offset the old one committed")
		require.Equal(t, prev+1, active.Generation, "one takeover")
		if kill {
			require.Less(t, took, 8*time.Second, "the lease (5s) expires and the standby (polling every 1s) takes over")
			t.Logf("%s killed at offset %d: the new one was active %v after that", tc.bin, left, took.Round(time.Millisecond))
		} else {
			require.Less(t, took, 2500*time.Millisecond, "the new instance takes over at once, not when the lease (5s) expires")
			t.Logf("%s restart %d at offset %d: the old one exited %v after SIGTERM, the new one was active %v after that",
				tc.bin, round, left, exited.Sub(signalled).Round(time.Millisecond), took.Round(time.Millisecond))
		}
		cur = next
	}

	close(stop)
	wg.Wait()
	head := testkit.WaitCaughtUp(t, db.Pool, tc.consumer)
	mu.Lock()
	all := ids
	mu.Unlock()
	once(t, testkit.Pub(key), all)
	require.NoError(t, cur.stop(t, 30*time.Second))
	t.Logf("%s: %d restarts (and a kill: %v), %d events, outbox head %d, each applied once", tc.bin, rounds, killed, len(all), head)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
