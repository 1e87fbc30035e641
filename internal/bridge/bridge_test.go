package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/pkg/outboxmsg"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// natsServer is an embedded nats-server with JetStream on a store directory
// that survives restarts (same port, same directory).
type natsServer struct {
	t          testing.TB
	dir        string
	port       int
	maxPayload int32 // the server's max_payload; 0: its default (1 MiB)
	s          *server.Server
}

func startNATS(t testing.TB) *natsServer { return startNATSWith(t, 0) }

func startNATSWith(t testing.TB, maxPayload int32) *natsServer {
	n := &natsServer{t: t, dir: t.TempDir(), port: -1, maxPayload: maxPayload}
	n.start()
	n.port = n.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir, NoLog: true, NoSigs: true, MaxPayload: n.maxPayload})
	require.NoError(n.t, err)
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown() // not left running behind the failed test
		n.t.Fatalf("nats-server on port %d not ready within 10 s", n.port)
	}
	n.s = s
}

func (n *natsServer) stop() {
	if n.s != nil {
		n.s.Shutdown()
		n.s.WaitForShutdown()
		n.s = nil
	}
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

func connect(t testing.TB, url string) *nats.Conn {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectJitter(0, 0))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// runningBridge is one bridge process: its own NATS connection, handler and
// consumer.
type runningBridge struct {
	b      *Bridge
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func startBridge(t testing.TB, pool *pgxpool.Pool, url string, cfg Config, ccfg consumer.Config) *runningBridge {
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	cfg.Registerer, ccfg.Registerer = reg, reg
	b, err := New(ctx, connect(t, url), cfg)
	require.NoError(t, err)
	ccfg.Name, ccfg.Policy = ConsumerName, consumer.PolicyHalt
	c, err := consumer.New(pool, b, ccfg)
	require.NoError(t, err)
	rb := &runningBridge{b: b, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { rb.done <- c.Run(ctx) }()
	t.Cleanup(func() { rb.stop(t) })
	return rb
}

// stop cancels the bridge's context (wherever it is) and waits for Run.
func (rb *runningBridge) stop(t testing.TB) error {
	rb.cancel()
	select {
	case err, ok := <-rb.done:
		if ok {
			close(rb.done)
		}
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("bridge did not stop")
		return nil
	}
}

func (rb *runningBridge) gauge(t testing.TB, name string) float64 {
	mfs, err := rb.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

var testTopics = []string{"nostr", "go", "a.b", "日本語", "c d"}

// ingest stores n events through the store (so the outbox gets what the relay
// writes): kind 1 on several topics, profiles (the person scope, replaceable),
// and about one in ten a NIP-09 deletion of an earlier event by the same key.
func ingest(t testing.TB, st *store.Store, rng *rand.Rand, n int) {
	ctx := context.Background()
	keys := []string{nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()}
	var mine [2][]string
	batch := make([]*nostr.Event, 0, 100)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		res, err := st.Ingest(ctx, batch)
		require.NoError(t, err)
		for _, r := range res {
			require.True(t, r.OK, r.Message)
		}
		batch = batch[:0]
	}
	for i := range n {
		k := rng.IntN(2)
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("event %d %d", i, rng.Int64())}
		switch {
		case len(mine[k]) > 0 && rng.IntN(10) == 0:
			j := rng.IntN(len(mine[k]))
			ev.Kind, ev.Tags = 5, nostr.Tags{{"e", mine[k][j]}}
			mine[k] = append(mine[k][:j], mine[k][j+1:]...)
		case rng.IntN(8) == 0: // a profile: the person scope, replaceable
			ev.Kind, ev.Content = 0, fmt.Sprintf(`{"name":"n%d"}`, i)
		default:
			ev.Tags = nostr.Tags{{"t", testTopics[rng.IntN(len(testTopics))]}}
		}
		require.NoError(t, ev.Sign(keys[k]))
		if ev.Kind == 1 {
			mine[k] = append(mine[k], ev.ID)
		}
		batch = append(batch, ev)
		if len(batch) == cap(batch) || ev.Kind == 5 {
			flush() // a deletion's target must be stored before it
		}
	}
	flush()
}

func newStore(db *pgtest.DB) *store.Store {
	return testkit.NewStore(db.Pool)
}

func outboxRows(t testing.TB, pool *pgxpool.Pool) []outbox.Row {
	rows, err := pool.Query(context.Background(), `SELECT seq, op, event_id, topic_id, kind, coalesce(reason, ''), coalesce(effective_key, '')
		FROM cn_relay.events_outbox ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outbox.Row
	for rows.Next() {
		var r outbox.Row
		require.NoError(t, rows.Scan(&r.Seq, &r.Op, &r.EventID, &r.TopicID, &r.Kind, &r.Reason, &r.EffectiveKey))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// requireStreamEqualsOutbox: the stream's message ids are the outbox's seqs,
// each once, in order, and each message carries its row: an upsert row its
// signed event, or, exactly when the event is no longer stored (a superseded
// version of the node's state, removed), the removed mark and no payload, for
// a keyed row that a later upsert row of the same key follows.
func requireStreamEqualsOutbox(t testing.TB, pool *pgxpool.Pool, url string, cfg Config) {
	t.Helper()
	rows := outboxRows(t, pool)
	var storedIDs []string
	require.NoError(t, pgxscan(pool, `SELECT id FROM cn_relay.events`, &storedIDs))
	stored := map[string]bool{}
	for _, id := range storedIDs {
		stored[id] = true
	}
	lastOfKey := map[string]int64{}
	for _, r := range rows {
		if r.Op == outbox.OpUpsert && r.EffectiveKey != "" {
			lastOfKey[r.EffectiveKey] = r.Seq
		}
	}
	msgs := testkit.StreamMsgs(t, url, cfg.Stream)
	want := make([]string, len(rows))
	for i, r := range rows {
		want[i] = strconv.FormatInt(r.Seq, 10)
	}
	got := make([]string, len(msgs))
	for i, m := range msgs {
		got[i] = m.Header.Get(jetstream.MsgIDHeader)
	}
	require.Equal(t, want, got, "stream message ids = outbox seqs, each once, in order")
	for i, r := range rows {
		m := msgs[i]
		h := m.Header
		require.Equal(t, want[i], h.Get(outboxmsg.HeaderSeq))
		require.Equal(t, string(r.Op), h.Get(outboxmsg.HeaderOp))
		require.Equal(t, r.EventID, h.Get(outboxmsg.HeaderEventID))
		require.Equal(t, r.TopicID, h.Get(outboxmsg.HeaderTopic))
		require.Equal(t, strconv.Itoa(r.Kind), h.Get(outboxmsg.HeaderKind))
		require.Equal(t, string(r.Reason), h.Get(outboxmsg.HeaderReason))
		require.Equal(t, r.EffectiveKey, h.Get(outboxmsg.HeaderEffectiveKey))
		require.Equal(t, cfg.SubjectPrefix+"."+TopicToken(r.TopicID), m.Subject)
		if r.Op == outbox.OpDelete {
			require.Empty(t, m.Data, "seq %d: a delete row has no payload", r.Seq)
			require.Empty(t, h.Get(outboxmsg.HeaderRemoved), "seq %d", r.Seq)
			continue
		}
		if !stored[r.EventID] {
			require.Equal(t, outboxmsg.RemovedSuperseded, h.Get(outboxmsg.HeaderRemoved), "seq %d: event %s is gone: marked removed", r.Seq, r.EventID)
			require.Empty(t, m.Data, "seq %d: a removed version has no payload", r.Seq)
			require.NotEmpty(t, r.EffectiveKey, "seq %d: only a keyed version is ever removed", r.Seq)
			require.Greater(t, lastOfKey[r.EffectiveKey], r.Seq, "seq %d: a newer version of its key follows", r.Seq)
			continue
		}
		require.Empty(t, h.Get(outboxmsg.HeaderRemoved), "seq %d: a stored event is not marked removed", r.Seq)
		var ev nostr.Event
		require.NoError(t, json.Unmarshal(m.Data, &ev), "seq %d", r.Seq)
		require.Equal(t, r.EventID, ev.ID)
		ok, err := ev.CheckSignature()
		require.NoError(t, err)
		require.True(t, ok, "seq %d: the payload is the signed event", r.Seq)
	}
}

// pgxscan collects the first column of sql's rows into out.
func pgxscan[T any](pool *pgxpool.Pool, sql string, out *[]T) error {
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		return err
	}
	*out, err = pgx.CollectRows(rows, pgx.RowTo[T])
	return err
}

func offset(t testing.TB, pool *pgxpool.Pool) int64 {
	o, err := consumer.Offset(context.Background(), pool, ConsumerName)
	require.NoError(t, err)
	return o
}

func testConfig() Config {
	return Config{Stream: "CN_TEST", SubjectPrefix: "cn.test", DuplicateWindow: time.Second, RetryBase: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond}
}

// TestPublishesTheOutboxInOrder: rows of several topics, the person scope and
// deletions reach the stream once each, in seq order, with their headers, the
// signed event as payload (none for deletes) and a subject per topic.
func TestPublishesTheOutboxInOrder(t *testing.T) {
	db := pgtest.New(t)
	ns := startNATS(t)
	ingest(t, newStore(db), rand.New(rand.NewPCG(1, 2)), 600)
	rb := startBridge(t, db.Pool, ns.url(), testConfig(), consumer.Config{BatchSize: 64})
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	ingest(t, newStore(db), rand.New(rand.NewPCG(3, 4)), 200) // while it runs
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), testConfig())

	rows := outboxRows(t, db.Pool)
	ops, topics := map[outbox.Op]int{}, map[string]int{}
	for _, r := range rows {
		ops[r.Op]++
		topics[r.TopicID]++
	}
	require.Positive(t, ops[outbox.OpDelete], "the fixture has deletions")
	require.Positive(t, topics[protocol.NodeTopic], "the fixture has the person scope")
	require.GreaterOrEqual(t, len(topics), 4, "the fixture has several topics")
	require.Equal(t, float64(len(rows)), rb.gauge(t, "cn_bridge_published_total"))
	require.Equal(t, float64(rows[len(rows)-1].Seq), rb.gauge(t, "cn_bridge_last_published_seq"))
	require.Zero(t, rb.gauge(t, "cn_bridge_duplicates_total"))
}

// streamLastID is the Nats-Msg-Id of the stream's last message (0 when empty).
func streamLastID(t testing.TB, url string, cfg Config) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(connect(t, url))
	require.NoError(t, err)
	s, err := js.Stream(ctx, cfg.Stream)
	require.NoError(t, err)
	b := &Bridge{stream: s, cfg: cfg}
	last, err := b.streamLast(ctx)
	require.NoError(t, err)
	return last
}

// TestResumesAcrossRestarts: a bridge killed mid-way (its context cancelled
// wherever it was), an offset left behind the stream (a crash between the
// acknowledgements and the offset commit), a NATS server stopped for longer
// than the duplicate window while rows arrive and restarted on its store: the
// stream still holds every outbox row once, in order. A resend of an old row
// after the window is rejected by the chain.
func TestResumesAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	ns := startNATS(t)
	cfg := testConfig()
	st := newStore(db)
	rng := rand.New(rand.NewPCG(22, 1))
	ingest(t, st, rng, 1000)
	ccfg := consumer.Config{BatchSize: 20, LeaseTTL: time.Second}

	a := startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	// Hold the bridge's offset row before the second half arrives: the bridge
	// publishes at most one batch of it before its offset commit waits for the
	// row, so the cancel finds it mid-way however fast it would drain the rows
	// (on a quiet machine it published all of them before a cancel that raced it).
	hold, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }() // a no-op once rolled back below
	_, err = hold.Exec(ctx, "SELECT 1 FROM cn_relay.consumer_offsets WHERE consumer = $1 FOR UPDATE", ConsumerName)
	require.NoError(t, err)
	ingest(t, st, rng, 1000)
	head, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)
	a.cancel()
	require.NoError(t, hold.Rollback(ctx))
	require.NoError(t, a.stop(t))
	last := streamLastID(t, ns.url(), cfg)
	require.Less(t, last, head, "the first bridge was stopped mid-way")
	require.GreaterOrEqual(t, last, offset(t, db.Pool), "the offset never leads the stream")

	// Leave the offset well behind the stream, as a crash after the
	// acknowledgements and before the commit does, and let the duplicate window
	// pass: only the stream's last id keeps the rows from being stored twice.
	back := last / 2
	plan, err := consumer.PlanReset(ctx, db.Pool, ConsumerName, consumer.ResetTarget{Seq: &back})
	require.NoError(t, err)
	require.NoError(t, consumer.ExecuteReset(ctx, db.Pool, plan, false, "test"))
	time.Sleep(cfg.DuplicateWindow + 200*time.Millisecond) // time passing, not synchronisation

	b := startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	require.Eventually(t, func() bool { return offset(t, db.Pool) > last }, 30*time.Second, time.Millisecond)
	ns.stop()
	ingest(t, st, rng, 1000) // while the server is down
	time.Sleep(cfg.DuplicateWindow + 500*time.Millisecond)
	ns.start()
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), cfg)
	require.Positive(t, b.gauge(t, "cn_bridge_skipped_total"), "rows the stream held were skipped, not resent")
	require.Zero(t, b.gauge(t, "cn_bridge_chain_broken"))

	// A zombie's resend of an old row, long after the duplicate window.
	rows := outboxRows(t, db.Pool)
	js, err := jetstream.New(connect(t, ns.url()))
	require.NoError(t, err)
	old := rows[len(rows)/2]
	time.Sleep(cfg.DuplicateWindow + 200*time.Millisecond) // past the window, the msg id alone no longer protects
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: cfg.SubjectPrefix + "." + TopicToken(old.TopicID), Data: []byte("zombie")},
		jetstream.WithMsgID(strconv.FormatInt(old.Seq, 10)), jetstream.WithExpectLastMsgID(strconv.FormatInt(rows[len(rows)/2-1].Seq, 10)))
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, errCodeWrongLastMsgID, apiErr.ErrorCode)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), cfg)
}

// TestTwoBridgesLeaveOneStream: two bridges started at once on the same stream
// publish every row once; one holds the lease, the other is a standby.
func TestTwoBridgesLeaveOneStream(t *testing.T) {
	db := pgtest.New(t)
	ns := startNATS(t)
	cfg := testConfig()
	ingest(t, newStore(db), rand.New(rand.NewPCG(5, 6)), 800)
	ccfg := consumer.Config{BatchSize: 50} // the default lease: no takeover while the test runs
	bridges := make([]*runningBridge, 2)
	start := make(chan struct{})
	done := make(chan int, 2)
	for i := range bridges {
		go func() {
			<-start
			c := ccfg
			c.OwnerID = fmt.Sprintf("bridge-%d", i)
			bridges[i] = startBridge(t, db.Pool, ns.url(), cfg, c)
			done <- i
		}()
	}
	close(start)
	<-done
	<-done
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	ingest(t, newStore(db), rand.New(rand.NewPCG(7, 8)), 200)
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), cfg)

	var owner string
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT owner_id FROM cn_relay.consumer_offsets WHERE consumer = $1", ConsumerName).Scan(&owner))
	active := []float64{bridges[0].gauge(t, "cn_consumer_active"), bridges[1].gauge(t, "cn_consumer_active")}
	require.ElementsMatch(t, []float64{0, 1}, active, "one active bridge, one standby")
	leader := 0
	if active[1] == 1 {
		leader = 1
	}
	require.Equal(t, fmt.Sprintf("bridge-%d", leader), owner)
	require.Zero(t, bridges[1-leader].gauge(t, "cn_bridge_published_total"), "the standby published nothing")
}

// TestHaltsOnABrokenChain: an offset ahead of the stream (rows the offset
// counts as published are not in it) halts the bridge; it never skips them.
func TestHaltsOnABrokenChain(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	ns := startNATS(t)
	cfg := testConfig()
	st := newStore(db)
	rng := rand.New(rand.NewPCG(9, 10))
	ingest(t, st, rng, 100)
	ccfg := consumer.Config{BatchSize: 50, LeaseTTL: time.Second, MaxAttempts: 1, RetryBase: time.Millisecond, RetryMax: time.Millisecond}
	a := startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	require.NoError(t, a.stop(t))
	published := streamLastID(t, ns.url(), cfg)

	ingest(t, st, rng, 20)
	head, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)
	plan, err := consumer.PlanReset(ctx, db.Pool, ConsumerName, consumer.ResetTarget{Latest: true})
	require.NoError(t, err)
	require.NoError(t, consumer.ExecuteReset(ctx, db.Pool, plan, false, "test"))
	ingest(t, st, rng, 5)

	b := startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	select {
	case err := <-b.done:
		close(b.done)
		require.ErrorIs(t, err, consumer.ErrHalted)
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not halt")
	}
	require.Equal(t, float64(1), b.gauge(t, "cn_bridge_chain_broken"))
	require.Equal(t, head, offset(t, db.Pool), "the offset stays before the rows it could not publish")
	require.Equal(t, published, streamLastID(t, ns.url(), cfg), "nothing was published past the hole")
}

// TestHaltsOnARowTooLargeForTheServer: a row whose message exceeds the
// server's max_payload is not retried forever and not skipped: the bridge
// publishes every row before it, then halts with a reason that names the row
// and max_payload (cnctl status, the status page). Once the operator raises
// max_payload and restarts the bridge, the stream holds every row, in order.
func TestHaltsOnARowTooLargeForTheServer(t *testing.T) {
	ns := startNATSWith(t, 4096)
	tooLarge{rng: rand.New(rand.NewPCG(11, 12)), errors: []string{"max_payload"}, reason: "raise max_payload"}.
		run(t, ns, func() {
			// The operator raises max_payload (here: back to the default) and restarts.
			ns.stop()
			ns.maxPayload = 0
			ns.start()
		})
}

// TestHaltsOnARowTooLargeForTheStream: the same for a stream whose
// max_msg_size is below the server's max_payload: the client sends the
// message, the server refuses it (error 10054), and the bridge halts on the
// row instead of retrying it forever, with a reason that names the row and the
// stream's max_msg_size. Once the operator raises it and restarts the bridge,
// the stream holds every row, in order.
func TestHaltsOnARowTooLargeForTheStream(t *testing.T) {
	ctx := context.Background()
	ns := startNATS(t)
	cfg := testConfig()
	js, err := jetstream.New(connect(t, ns.url()))
	require.NoError(t, err)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{cfg.SubjectPrefix + ".>"},
		Storage: jetstream.FileStorage, Duplicates: cfg.DuplicateWindow, MaxMsgSize: 4096})
	require.NoError(t, err)
	tooLarge{rng: rand.New(rand.NewPCG(13, 14)), errors: []string{"the stream CN_TEST refuses it", "max_msg_size"},
		reason: "raise the stream's max_msg_size"}.run(t, ns, func() {
		// The operator raises the stream's max_msg_size (here: removes the
		// limit) and restarts the bridge.
		sc := stream.CachedInfo().Config
		sc.MaxMsgSize = -1
		_, err = js.UpdateStream(ctx, sc)
		require.NoError(t, err)
	})
}

// tooLarge is the halt on a row too large to publish: 60 rows, an 8 KiB note,
// 30 rows; the bridge publishes every row before the note and halts with an
// error holding each of errors and a status reason that names the row and
// holds reason; after raise, a restarted bridge publishes every row, in order.
type tooLarge struct {
	rng    *rand.Rand
	errors []string
	reason string
}

func (tl tooLarge) run(t *testing.T, ns *natsServer, raise func()) {
	ctx := context.Background()
	db := pgtest.New(t)
	cfg := testConfig()
	st := newStore(db)
	ingest(t, st, tl.rng, 60)
	big := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "nostr"}}, Content: strings.Repeat("x", 8192)}
	require.NoError(t, big.Sign(nostr.GeneratePrivateKey()))
	res, err := st.Ingest(ctx, []*nostr.Event{big})
	require.NoError(t, err)
	require.True(t, res[0].OK, res[0].Message)
	ingest(t, st, tl.rng, 30)
	var poison, before int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT seq FROM cn_relay.events_outbox WHERE event_id = $1 AND op = 'upsert'", big.ID).Scan(&poison))
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT max(seq) FROM cn_relay.events_outbox WHERE seq < $1", poison).Scan(&before))

	ccfg := consumer.Config{BatchSize: 40, LeaseTTL: time.Second, MaxAttempts: 2, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}
	b := startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	select {
	case err := <-b.done:
		close(b.done)
		require.ErrorIs(t, err, consumer.ErrHalted)
		for _, want := range tl.errors {
			require.ErrorContains(t, err, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the bridge did not halt on a row too large to publish")
	}
	require.Equal(t, float64(poison), b.gauge(t, "cn_bridge_too_large_seq"))
	require.Equal(t, before, offset(t, db.Pool), "every row before the poison row is committed, the poison row is not")
	require.Equal(t, before, streamLastID(t, ns.url(), cfg), "the stream holds every row before it and nothing after")
	st0, err := consumer.ReadStatus(ctx, db.Pool)
	require.NoError(t, err)
	require.Len(t, st0.Consumers, 1)
	require.True(t, st0.Consumers[0].Halted, "cnctl status and the status page show the halt")
	require.Contains(t, st0.Consumers[0].HaltedReason, fmt.Sprintf("seq %d (event %s)", poison, big.ID))
	require.Contains(t, st0.Consumers[0].HaltedReason, tl.reason)

	raise()
	startBridge(t, db.Pool, ns.url(), cfg, ccfg)
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), cfg)
}

func TestServerVersions(t *testing.T) {
	for v, ok := range map[string]bool{"2.15.2": true, "2.10.0": true, "3.0.0": true, "2.10.0-beta.1": true,
		"2.9.10": false, "1.99.99": false, "": false, "2.x": false} {
		err := CheckServerVersion(v)
		require.Equal(t, ok, err == nil, "%q: %v", v, err)
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
		}
	}
}

// TestRetentionKeepsUnpublishedRows: while NATS is down the bridge's offset
// holds back outbox retention (bridge-v1 is a registered consumer, shown by
// cnctl status), so a prune keeps every row it has not published; they reach
// the stream once NATS is back.
func TestRetentionKeepsUnpublishedRows(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	ns := startNATS(t)
	cfg := testConfig()
	st := newStore(db)
	rng := rand.New(rand.NewPCG(11, 12))
	ingest(t, st, rng, 300)
	startBridge(t, db.Pool, ns.url(), cfg, consumer.Config{BatchSize: 100})
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	published := offset(t, db.Pool)

	ns.stop()
	ingest(t, st, rng, 300)
	var pending []int64
	for _, r := range outboxRows(t, db.Pool) {
		if r.Seq > published {
			pending = append(pending, r.Seq)
		}
	}
	require.NotEmpty(t, pending)
	status, err := consumer.ReadStatus(ctx, db.Pool)
	require.NoError(t, err)
	var names []string
	for _, c := range status.Consumers {
		names = append(names, c.Consumer)
	}
	require.Contains(t, names, ConsumerName, "cnctl status shows the bridge")

	report, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{OlderThan: time.Nanosecond, Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Equal(t, 1, report.Consumers)
	require.NotNil(t, report.Deleted, "retention removed the published rows: %+v", report)
	require.Len(t, report.HeldBack, 1)
	require.Equal(t, ConsumerName, report.HeldBack[0].Consumer, "the bridge held retention back")
	var kept []int64
	for _, r := range outboxRows(t, db.Pool) {
		if r.Seq > published {
			kept = append(kept, r.Seq)
		}
	}
	require.Equal(t, pending, kept, "no row the bridge has not published was pruned")
	require.Equal(t, published, offset(t, db.Pool), "nothing was published while NATS was down")

	ns.start()
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	msgs := testkit.StreamMsgs(t, ns.url(), cfg.Stream)
	var tail []int64
	for _, m := range msgs {
		id, err := strconv.ParseInt(m.Header.Get(jetstream.MsgIDHeader), 10, 64)
		require.NoError(t, err)
		if id > published {
			tail = append(tail, id)
		}
	}
	require.Equal(t, pending, tail, "the rows kept for the bridge reached the stream once each, in order")
}

// TestPublishesRemovedVersions: the node's member list re-signed for each
// added member, its superseded versions removed (issue 47); a bridge that
// publishes those rows afterwards (lagging, restarted, replayed from 0)
// publishes each removed version's row marked removed, with no payload, and
// does not halt; the stream stays one message per outbox row.
func TestPublishesRemovedVersions(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	ns := startNATS(t)
	st := newStore(db)
	node := testkit.HostGroups(t, st, testkit.GroupOpts{})
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 100
	send := func(kind int, tags nostr.Tags) {
		t.Helper()
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", "g"}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
	}
	send(groups.KindCreateGroup, nil)
	for range 5 {
		pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
		send(groups.KindPutUser, nostr.Tags{{"p", pk}})
	}
	// The removal the store makes of the node's superseded versions (done
	// here by hand, so the bridge's promise is tested on its own).
	_, err := db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM cn_relay.events
			WHERE pubkey = $1 AND effective_key IS NOT NULL AND NOT is_effective AND deleted_at IS NULL RETURNING id)
		DELETE FROM cn_relay.event_topics WHERE event_id IN (SELECT id FROM gone)`, node.PubKey)
	require.NoError(t, err)
	startBridge(t, db.Pool, ns.url(), testConfig(), consumer.Config{BatchSize: 4})
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), testConfig())
	removed := 0
	for _, m := range testkit.StreamMsgs(t, ns.url(), testConfig().Stream) {
		row, ev, err := outboxmsg.Decode(m.Header, m.Data)
		require.NoError(t, err)
		if m.Header.Get(outboxmsg.HeaderRemoved) != "" {
			removed++
			require.Nil(t, ev)
			require.Equal(t, outbox.OpUpsert, row.Op)
		}
	}
	require.GreaterOrEqual(t, removed, 5, "the superseded member lists (and admin lists) are marked removed")
}
