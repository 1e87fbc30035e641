package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/bridge"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/pkg/outboxmsg"
)

// startNATS runs an embedded nats-server with JetStream for the test and
// returns its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	return testkit.NATS(t).ClientURL()
}

// startBridge publishes the primary's outbox to the stream until the test ends.
func startBridge(t *testing.T, pool *pgxpool.Pool, url string) jetstream.Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	require.NoError(t, err)
	b, err := bridge.New(ctx, nc, bridge.Config{})
	require.NoError(t, err)
	c, err := consumer.New(pool, b, consumer.Config{Name: bridge.ConsumerName, Policy: consumer.PolicyHalt, BatchSize: 300})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done); nc.Close() })
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.Stream(ctx, bridge.DefaultStream)
	require.NoError(t, err)
	return stream
}

// richHistory adds to randomHistory events on several topics (whose outbox
// rows a batch boundary can split), profiles (the person scope, replaceable)
// and deletions of them.
func richHistory(t *testing.T, n *node, rng *rand.Rand, count int, at nostr.Timestamp) nostr.Timestamp {
	t.Helper()
	for i := 0; i < count; i += 10 {
		at = randomHistory(t, n, rng, 7, at)
		at++
		author := rng.IntN(len(n.keys))
		multi := n.event(t, author, 1, at, nostr.Tags{topic("topic0"), topic("topic1"), topic(fmt.Sprintf("extra%d", rng.IntN(4)))},
			fmt.Sprintf("%s on several topics %d", words[rng.IntN(len(words))], i))
		profile := n.event(t, author, 0, at, nil, fmt.Sprintf(`{"name":"%s %d","about":"%s"}`, words[rng.IntN(len(words))], i, words[rng.IntN(len(words))]))
		n.publish(t, multi, profile)
		if rng.IntN(3) == 0 {
			at++
			n.publish(t, n.event(t, author, 5, at, nostr.Tags{{"e", multi.ID}}, ""))
		}
	}
	return at
}

// TestRemoteIndexerEqualsLocal: an indexer process that follows the bridge's
// stream into a database of its own, SIGKILLed at random points (after
// commits, mid-batch) while the history grows, ends with exactly the
// documents of the local indexer, and its searches answer the same. Three
// kills (make test-long); one with -short (make test).
func TestRemoteIndexerEqualsLocal(t *testing.T) {
	kills := 3
	if testing.Short() {
		kills = 1
	}
	bin := filepath.Join(t.TempDir(), "indexer")
	build := exec.Command("go", "build", "-o", bin, "github.com/kukuri/communitynode/cmd/indexer")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	n := newNode(t)
	// Member lists re-signed and removed before the bridge publishes them
	// (issue 47): the stream carries them marked removed, nothing to apply.
	testkit.HostGroups(t, n.store, testkit.GroupOpts{})
	testkit.GroupFlood(t, n.store, "flood", 5, base-1000)
	url := startNATS(t)
	startBridge(t, n.db.Pool, url)
	remote := pgtest.New(t)

	logs, err := os.Create(filepath.Join(t.TempDir(), "indexer.log"))
	require.NoError(t, err)
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(logs.Name())
			t.Logf("remote indexer logs:\n%s", data)
		}
	}()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "--database-url", remote.URL, "--nats-url", url, "--listen", "127.0.0.1:0",
			"--batch-size", "37", "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = logs, logs
		require.NoError(t, cmd.Start())
		return cmd
	}
	remoteOffset := func() int64 {
		var last int64
		_ = remote.Pool.QueryRow(context.Background(), "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName).Scan(&last)
		return last
	}

	rng := rand.New(rand.NewPCG(22, 7))
	at := base
	for round := range kills {
		p := start()
		at = richHistory(t, n, rng, 450/kills, at) // the same history, cut by fewer or more kills
		head, err := outbox.Head(context.Background(), n.db.Pool)
		require.NoError(t, err)
		// Kill it once it has applied a random part of what is there (or at
		// the deadline, wherever it is).
		target := remoteOffset() + int64(rng.IntN(int(max(head-remoteOffset(), 1))))
		deadline := time.Now().Add(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		for remoteOffset() < target && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond) // polling the offset
		}
		require.NoError(t, p.Process.Signal(syscall.SIGKILL))
		_ = p.Wait()
		t.Logf("round %d: killed at offset %d of %d", round, remoteOffset(), head)
	}
	p := start()
	defer func() { _ = p.Process.Signal(syscall.SIGKILL); _ = p.Wait() }()
	head, err := outbox.Head(context.Background(), n.db.Pool)
	require.NoError(t, err)
	n.sync(t)
	testkit.WaitOffset(t, remote.Pool, ConsumerName, head)

	rn := &node{db: remote}
	require.Equal(t, n.dump(t), rn.dump(t))
	require.Greater(t, n.documents(t), 100)
	for _, q := range []string{"nostr", "東京", "several", "ramen"} {
		require.Equal(t, n.search(t, q, SearchParams{}), rn.search(t, q, SearchParams{}), "search %q", q)
	}
}

// recorder is a stream handler that applies like the remote indexer and
// records every row it applied, in the same transaction; it stops its run
// right after some commits (after the commit, before the next read).
type recorder struct {
	RemoteHandler
	rng  *rand.Rand
	stop context.CancelFunc
	head int64 // stop once this seq is applied
	seen int64
}

func (r *recorder) HandleMessages(ctx context.Context, tx consumer.Tx, msgs []consumer.Message) error {
	for _, m := range msgs {
		if _, err := tx.Exec(ctx, "INSERT INTO applied (seq, topic_id, stream_seq) VALUES ($1, $2, $3)", m.Seq, m.TopicID, int64(m.StreamSeq)); err != nil {
			return err
		}
	}
	r.seen = msgs[len(msgs)-1].Seq
	return r.RemoteHandler.HandleMessages(ctx, tx, msgs)
}

func (r *recorder) AfterCommit() {
	if r.seen >= r.head || r.rng.IntN(4) == 0 {
		r.stop()
	}
}

// TestStreamConsumerStopsBetweenCommitAndNextRead: a stream consumer stopped
// right after a quarter of its commits, and once with its stored stream
// position lost, applies every row of the stream exactly once in seq order
// (so per topic too), and its documents equal the local indexer's.
func TestStreamConsumerStopsBetweenCommitAndNextRead(t *testing.T) {
	n := newNode(t)
	url := startNATS(t)
	stream := startBridge(t, n.db.Pool, url)
	remote := pgtest.New(t)
	_, err := remote.Pool.Exec(context.Background(), "CREATE TABLE applied (seq bigint NOT NULL, topic_id text NOT NULL, stream_seq bigint NOT NULL)")
	require.NoError(t, err)
	richHistory(t, n, rand.New(rand.NewPCG(22, 8)), 300, base)
	head, err := outbox.Head(context.Background(), n.db.Pool)
	require.NoError(t, err)
	testkit.WaitOffset(t, n.db.Pool, bridge.ConsumerName, head)

	rng := rand.New(rand.NewPCG(22, 9))
	for runs := 0; ; runs++ {
		require.Less(t, runs, 10_000)
		var last int64
		_ = remote.Pool.QueryRow(context.Background(), "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName).Scan(&last)
		if last >= head {
			break
		}
		if runs == 3 {
			// The position is lost: the consumer finds its place by message id.
			_, err := remote.Pool.Exec(context.Background(), "DELETE FROM cn_relay.consumer_stream_positions")
			require.NoError(t, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		h := &recorder{RemoteHandler: RemoteHandler{Handler{Kinds: NewKinds(DefaultKinds)}}, rng: rng, stop: cancel, head: head}
		c, err := consumer.NewStream(remote.Pool, h, consumer.Config{Name: ConsumerName, BatchSize: 1 + rng.IntN(60)}, stream)
		require.NoError(t, err)
		require.NoError(t, c.Run(ctx))
		require.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		cancel()
	}
	n.sync(t)
	require.Equal(t, n.dump(t), (&node{db: remote}).dump(t))

	outboxSeqs := seqs(t, n.db.Pool, "SELECT seq FROM cn_relay.events_outbox ORDER BY seq")
	require.Equal(t, outboxSeqs, seqs(t, remote.Pool, "SELECT seq FROM applied ORDER BY stream_seq"), "every row once, in stream order")
	require.Equal(t, outboxSeqs, seqs(t, remote.Pool, "SELECT seq FROM applied ORDER BY seq"))
	var disordered int
	require.NoError(t, remote.Pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		SELECT seq < lag(seq) OVER (PARTITION BY topic_id ORDER BY stream_seq) AS back FROM applied) x WHERE back`).Scan(&disordered))
	require.Zero(t, disordered, "per-topic order is seq order")
}

func seqs(t *testing.T, pool *pgxpool.Pool, sql string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	require.NoError(t, err)
	var out []int64
	for rows.Next() {
		var s int64
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestStreamRetentionNeedsRebuild: when the stream no longer holds the row
// after a consumer's offset, the consumer halts with ErrRebuildNeeded
// (recorded in its offset row) and applies nothing.
func TestStreamRetentionNeedsRebuild(t *testing.T) {
	n := newNode(t)
	url := startNATS(t)
	stream := startBridge(t, n.db.Pool, url)
	remote := pgtest.New(t)
	richHistory(t, n, rand.New(rand.NewPCG(22, 10)), 30, base)
	head, err := outbox.Head(context.Background(), n.db.Pool)
	require.NoError(t, err)
	testkit.WaitOffset(t, n.db.Pool, bridge.ConsumerName, head)
	require.NoError(t, stream.Purge(context.Background(), jetstream.WithPurgeKeep(5)))

	c, err := consumer.NewStream(remote.Pool, &RemoteHandler{Handler{Kinds: NewKinds(DefaultKinds)}}, consumer.Config{Name: ConsumerName}, stream)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.Run(ctx)
	require.True(t, errors.Is(err, consumer.ErrRebuildNeeded), "%v", err)
	require.ErrorIs(t, err, consumer.ErrHalted)
	var last int64
	var reason string
	require.NoError(t, remote.Pool.QueryRow(context.Background(),
		"SELECT last_seq, coalesce(halted_reason, '') FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName).Scan(&last, &reason))
	require.Zero(t, last)
	require.Contains(t, reason, "rebuild needed")
	require.Zero(t, (&node{db: remote}).documents(t))
}

// TestRemoteIndexerRefusesAlteredEvents: a message in the stream whose event is
// not what its author signed (its content changed and its id recomputed, the
// author's signature kept: what only a signature check catches) halts the
// remote indexer before it, with the reason; /v1/search serves the genuine
// events and never the altered one.
func TestRemoteIndexerRefusesAlteredEvents(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	url := startNATS(t)
	stream := startBridge(t, n.db.Pool, url)
	genuine := n.event(t, 0, 1, base, nostr.Tags{topic("food")}, "ramen as its author wrote it")
	n.publish(t, genuine)
	head, err := outbox.Head(ctx, n.db.Pool)
	require.NoError(t, err)
	testkit.WaitOffset(t, n.db.Pool, bridge.ConsumerName, head)

	// Someone who may publish to the stream appends the next row with an
	// altered event.
	altered := *genuine
	altered.Content = "ramen as someone else rewrote it"
	altered.ID = altered.GetID()
	payload, err := json.Marshal(altered)
	require.NoError(t, err)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	row := outbox.Row{Seq: head + 1, Op: outbox.OpUpsert, Kind: altered.Kind, EventID: altered.ID, TopicID: "food",
		CreatedAt: int64(altered.CreatedAt), IngestedAt: time.Now()}
	_, err = js.PublishMsg(ctx, outboxmsg.Encode(bridge.DefaultSubjectPrefix+".food", row, payload), jetstream.WithMsgID(strconv.FormatInt(row.Seq, 10)))
	require.NoError(t, err)

	remote := pgtest.New(t)
	c, err := consumer.NewStream(remote.Pool, &RemoteHandler{Handler{Kinds: NewKinds(DefaultKinds)}},
		consumer.Config{Name: ConsumerName, MaxAttempts: 2, RetryBase: time.Millisecond}, stream)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	var last int64
	var reason string
	require.Eventually(t, func() bool { // halted, or (wrongly) past the altered row
		err := remote.Pool.QueryRow(ctx, "SELECT last_seq, coalesce(halted_reason, '') FROM cn_relay.consumer_offsets WHERE consumer = $1",
			ConsumerName).Scan(&last, &reason)
		return err == nil && (reason != "" || last > head)
	}, time.Minute, 10*time.Millisecond)
	cancel()
	err = <-done
	require.Equal(t, head, last, "halted before the altered row, after the genuine ones")
	require.ErrorIs(t, err, consumer.ErrHalted)
	require.ErrorContains(t, err, protocol.ReasonBadSignature)
	require.Contains(t, reason, "event "+altered.ID+" is not what its author signed (invalid: bad signature)")

	srv := httptest.NewServer((&API{Pool: remote.Pool}).Handler())
	defer srv.Close()
	status, body := getJSON(t, srv, neturl.Values{"q": {"ramen"}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	var ids []string
	for _, it := range body["items"].([]any) {
		ids = append(ids, it.(map[string]any)["event_id"].(string))
	}
	require.Equal(t, []string{genuine.ID}, ids)
	var mirrored int
	require.NoError(t, remote.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE id = $1", altered.ID).Scan(&mirrored))
	require.Zero(t, mirrored, "the altered event is not mirrored either")
}
