package durability_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
)

// A whole node for the durability tests: the relay, the indexer, the
// moderator, trust and the bridge (to an embedded NATS server with
// JetStream), each run as its command runs it (package node), in this
// process, all on one database URL (which may name several hosts).

const (
	testStream        = "CN_DURABILITY"
	testSubjectPrefix = "cn.durability"
	markerRules       = "rules:\n  - {name: marker, kinds: [1], content_regex: \"^marker note \", label: marked, action: label}\n"
)

// consumers are the node's outbox consumers the tests run.
var consumers = []string{"index-v1", moderation.ConsumerName, trust.ConsumerName, "bridge-v1"}

type natsServer struct {
	s    *server.Server
	port int
}

func startNATS(t *testing.T) *natsServer {
	t.Helper()
	s := testkit.NATS(t)
	return &natsServer{s: s, port: s.Addr().(*net.TCPAddr).Port}
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// nodeKeys are the node's key (labels) and trust's seeds, the same for every
// run of a test so that their dumps compare.
type nodeKeys struct {
	key   nodekey.Key
	seeds []string
}

// daemons runs the five daemons on url until stop; any that returns before
// stop fails the test: each must heal on its own. Their logs go to dir.
type daemons struct {
	t      *testing.T
	relay  *testRelay
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	exits  []string
	logs   string
}

func startDaemons(t *testing.T, url string, ns *natsServer, keys nodeKeys, only ...string) *daemons {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemons{t: t, cancel: cancel, logs: t.TempDir()}
	run := func(name string, fn func(ctx context.Context, log *slog.Logger) error) {
		if len(only) > 0 && !slices.Contains(only, name) {
			return
		}
		f, err := os.Create(filepath.Join(d.logs, name+".log"))
		require.NoError(t, err)
		log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer f.Close()
			err := fn(ctx, log)
			if ctx.Err() == nil || (err != nil && !errors.Is(err, context.Canceled)) {
				d.mu.Lock()
				d.exits = append(d.exits, fmt.Sprintf("%s: %v", name, err))
				d.mu.Unlock()
			}
		}()
	}
	cfg := relay.DefaultConfig()
	cfg.Listen, cfg.MetricsListen = testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	cfg.Limits.IdentityWriters = protocol.IdentityWritersAny
	cfg.IngestTimeout = 5 * time.Second
	require.NoError(t, cfg.Validate())
	run("relay", func(ctx context.Context, log *slog.Logger) error {
		return node.Relay(ctx, node.RelayOptions{DatabaseURL: url, Relay: cfg, Logger: log})
	})
	run("indexer", func(ctx context.Context, log *slog.Logger) error {
		return node.Indexer(ctx, node.IndexerOptions{DatabaseURL: url, Logger: log})
	})
	run("moderator", func(ctx context.Context, log *slog.Logger) error {
		return node.Moderator(ctx, node.ModeratorOptions{DatabaseURL: url, Key: keys.key, Logger: log})
	})
	run("trust", func(ctx context.Context, log *slog.Logger) error {
		return node.Trust(ctx, node.TrustOptions{DatabaseURL: url, NodeKey: keys.key, Seeds: keys.seeds,
			RecomputeInterval: time.Hour, Logger: log})
	})
	run("bridge", func(ctx context.Context, log *slog.Logger) error {
		return node.Bridge(ctx, node.BridgeOptions{DatabaseURL: url, NATSURL: ns.url(), Stream: testStream,
			SubjectPrefix: testSubjectPrefix, Logger: log})
	})
	t.Cleanup(d.stop)
	d.relay = &testRelay{ws: "ws://" + cfg.Listen}
	waitHealthy(t, "http://"+cfg.Listen+"/healthz")
	return d
}

// requireRunning fails the test if a daemon returned on its own.
func (d *daemons) requireRunning() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.exits) > 0 {
		d.dumpLogs()
	}
	require.Empty(d.t, d.exits, "daemons that stopped on their own (each must heal by itself)")
}

func (d *daemons) dumpLogs() {
	entries, _ := os.ReadDir(d.logs)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(d.logs, e.Name()))
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		d.t.Logf("%s (tail):\n%s", e.Name(), b)
	}
}

func (d *daemons) stop() {
	d.cancel()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		d.t.Error("daemons did not stop within 60 s")
	}
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := httpGet(url)
		return err == nil && resp == 200
	}, 60*time.Second, 20*time.Millisecond, "%s answers", url)
}

// history is a fixed event history: per client, the events it publishes in
// order. Keys and times are derived from fixed seeds, so every run of it
// sends the same signed events.
type history struct {
	clients [][]*nostr.Event
	keys    []string // the clients' secret keys
}

func (h history) size() int {
	n := 0
	for _, c := range h.clients {
		n += len(c)
	}
	return n
}

func (h history) ids() map[string]bool {
	out := map[string]bool{}
	for _, c := range h.clients {
		for _, ev := range c {
			out[ev.ID] = true
		}
	}
	return out
}

// fixedKey is the secret key number i of the tests (a hash, always a valid
// scalar in practice).
func fixedKey(i int) string {
	sum := sha256.Sum256([]byte("durability key " + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])
}

// makeHistory: each client publishes notes on a few topics, marker notes (the
// moderator labels them), follow lists in several versions naming the other
// clients' keys (trust), and deletions of some of its own plain notes.
func makeHistory(t *testing.T, clients, perClient int) history {
	t.Helper()
	var h history
	for c := 0; c < clients; c++ {
		h.keys = append(h.keys, fixedKey(c))
	}
	topics := []string{"go", "nostr", "postgres", "failover"}
	base := nostr.Timestamp(1_760_000_000)
	for c := 0; c < clients; c++ {
		rng := rand.New(rand.NewPCG(uint64(c), 39))
		var evs []*nostr.Event
		var plain []string
		for j := 0; j < perClient; j++ {
			at := base + nostr.Timestamp(j)
			ev := &nostr.Event{Kind: 1, CreatedAt: at, Tags: nostr.Tags{{"t", topics[rng.IntN(len(topics))]}},
				Content: fmt.Sprintf("client %d note %d word%d", c, j, rng.IntN(100))}
			switch {
			case j%10 == 1:
				ev = &nostr.Event{Kind: 3, CreatedAt: at}
				for _, k := range rng.Perm(clients)[:clients/2] {
					pk, _ := nostr.GetPublicKey(h.keys[k])
					ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
				}
				// And a key trust has not seen yet: new keys arrive all along.
				pk, _ := nostr.GetPublicKey(fixedKey(1000 + c*perClient + j))
				ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
			case j%10 == 6 && len(plain) > 0:
				i := rng.IntN(len(plain))
				ev = &nostr.Event{Kind: 5, CreatedAt: at, Tags: nostr.Tags{{"e", plain[i]}}}
				plain = append(plain[:i], plain[i+1:]...)
			case j%7 == 3:
				ev.Content = "marker note " + ev.Content
			}
			require.NoError(t, ev.Sign(h.keys[c]))
			if ev.Kind == 1 && !strings.HasPrefix(ev.Content, "marker") {
				plain = append(plain, ev.ID)
			}
			evs = append(evs, ev)
		}
		h.clients = append(h.clients, evs)
	}
	return h
}

// publisher sends its events in order, each resent until answered OK true
// (or "duplicate:"): a transport failure reconnects, an `error:` answer is
// retried. Any other refusal fails the test.
type publisher struct {
	url     string
	events  []*nostr.Event
	mu      *sync.Mutex
	acked   map[string]time.Time // id -> when its OK true arrived
	errors  int
	refused []string
}

func (p *publisher) run(deadline time.Time) {
	var conn *websocket.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for _, ev := range p.events {
		for time.Now().Before(deadline) {
			if conn == nil {
				d := websocket.Dialer{HandshakeTimeout: 2 * time.Second}
				c, _, err := d.Dial(p.url, nil)
				if err != nil {
					time.Sleep(20 * time.Millisecond) // back-off before a reconnect
					continue
				}
				conn = c
			}
			if err := conn.WriteJSON([]any{"EVENT", ev}); err != nil {
				conn.Close()
				conn = nil
				continue
			}
			ok, why, err := awaitOK(conn, ev.ID)
			if err != nil {
				conn.Close()
				conn = nil
				continue
			}
			if ok {
				p.mu.Lock()
				p.acked[ev.ID] = time.Now()
				p.mu.Unlock()
				break
			}
			if strings.HasPrefix(why, "error:") {
				p.mu.Lock()
				p.errors++
				p.mu.Unlock()
				time.Sleep(20 * time.Millisecond) // back-off before a resend
				continue
			}
			p.mu.Lock()
			p.refused = append(p.refused, ev.ID+": "+why)
			p.mu.Unlock()
			break
		}
	}
}

func awaitOK(conn *websocket.Conn, id string) (bool, string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		var msg []json.RawMessage
		if err := conn.ReadJSON(&msg); err != nil {
			return false, "", err
		}
		var typ, got string
		if len(msg) != 4 || json.Unmarshal(msg[0], &typ) != nil || typ != "OK" || json.Unmarshal(msg[1], &got) != nil || got != id {
			continue
		}
		var ok bool
		var why string
		_ = json.Unmarshal(msg[2], &ok)
		_ = json.Unmarshal(msg[3], &why)
		return ok, why, nil
	}
}

// publishAll runs one publisher per client of h against r; during calls fn
// once the clients have had `after` events answered OK true (nil: never).
// It returns when every event is answered, and the time of each OK true.
func publishAll(t *testing.T, r *testRelay, h history, after int, during func()) map[string]time.Time {
	t.Helper()
	var mu sync.Mutex
	acked := map[string]time.Time{}
	deadline := time.Now().Add(5 * time.Minute)
	var wg sync.WaitGroup
	pubs := make([]*publisher, len(h.clients))
	for i, evs := range h.clients {
		pubs[i] = &publisher{url: r.ws, events: evs, mu: &mu, acked: acked}
		wg.Add(1)
		go func() { defer wg.Done(); pubs[i].run(deadline) }()
	}
	if during != nil {
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= after },
			3*time.Minute, 5*time.Millisecond, "events acknowledged before the fault")
		during()
	}
	wg.Wait()
	errs := 0
	for _, p := range pubs {
		require.Empty(t, p.refused, "events refused")
		errs += p.errors
	}
	t.Logf("%d events acknowledged, %d `error:` answers resent", len(acked), errs)
	require.Len(t, acked, h.size(), "every event of the history is answered OK true in the end")
	return acked
}

// quiesce waits until every consumer (of names; none: all the tests run)
// has applied the whole outbox (the moderator's labels included) and returns
// the head.
func quiesce(t *testing.T, url string, names ...string) int64 {
	t.Helper()
	if len(names) == 0 {
		names = consumers
	}
	var head int64
	var lag string
	require.Eventually(t, func() bool {
		var behind int
		err := queryRow(t, url, `SELECT (SELECT seq FROM cn_relay.outbox_head), count(*) FILTER (WHERE last_seq <> (SELECT seq FROM cn_relay.outbox_head)),
			coalesce(string_agg(consumer || '@' || last_seq, ' ' ORDER BY consumer), '')
			FROM cn_relay.consumer_offsets WHERE consumer = ANY($1)`, names).Scan(&head, &behind, &lag)
		return err == nil && behind == 0 && strings.Count(lag, "@") == len(names)
	}, 3*time.Minute, 20*time.Millisecond, "every consumer reaches the outbox head (last: %d, %s)", head, lag)
	return head
}

// canonicalDump is what the node derived from the clients' events, without
// what depends on timing (outbox seqs, the node's own events' ids and times):
// the clients' events and their state, their outbox rows as (event, topic,
// op) with counts, the search index, the moderator's labels and actions,
// trust's subjects and lists, and the number of the node's labels.
func canonicalDump(t *testing.T, url string, nodePubs []string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var sb strings.Builder
	for _, q := range []struct{ name, sql string }{
		{"event", `SELECT id, kind, deleted_at IS NOT NULL, coalesce(deleted_reason, ''), is_effective FROM cn_relay.events WHERE pubkey <> ALL($1) ORDER BY id`},
		{"outbox", `SELECT o.event_id, o.topic_id, o.op, coalesce(o.reason, ''), count(*) FROM cn_relay.events_outbox o
			WHERE o.event_id IN (SELECT id FROM cn_relay.events WHERE pubkey <> ALL($1)) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`},
		// The node's labels (trust's assertions depend on when it ranks).
		{"node rows", `SELECT o.kind, o.op, count(*) FROM cn_relay.events_outbox o
			WHERE o.kind = 1985 AND o.event_id IN (SELECT id FROM cn_relay.events WHERE pubkey = ANY($1)) GROUP BY 1, 2 ORDER BY 1, 2`},
		{"document", `SELECT event_id, pubkey, kind, created_at, topics::text, coalesce(effective_key, '-'), tsv::text
			FROM cn_index.documents WHERE pubkey <> ALL($1) ORDER BY event_id`},
		{"label", `SELECT target_id, rule, label, retracted_by IS NULL, cardinality($1::text[]) FROM cn_moderation.labels ORDER BY 1, 2, 3`},
		{"action", `SELECT event_id, action, source, reason, cardinality($1::text[]) FROM cn_moderation.actions ORDER BY 1, 2, 3`},
		// trust's counters: what the publisher folded into subjects plus the
		// changes still waiting in subject_deltas (trust.Fold).
		{"subject", `SELECT k.pubkey, sum(c.f), sum(c.p), sum(c.r), sum(c.x), sum(c.rr), sum(c.rs)
			FROM (SELECT id, followers AS f, post_cnt AS p, reply_cnt AS r, reactions_cnt AS x, reports_cnt_recd AS rr, reports_cnt_sent AS rs FROM cn_trust.subjects
				UNION ALL SELECT id, followers, post_cnt, reply_cnt, reactions_cnt, reports_cnt_recd, reports_cnt_sent FROM cn_trust.subject_deltas) c
			JOIN cn_trust.pubkeys k ON k.id = c.id
			WHERE k.pubkey <> ALL($1) GROUP BY 1 HAVING (sum(c.f), sum(c.p), sum(c.r), sum(c.x), sum(c.rr), sum(c.rs)) <> (0, 0, 0, 0, 0, 0) ORDER BY 1`},
		// Counters of ids that name no key (there must be none).
		{"orphan counters", `SELECT count(*), cardinality($1::text[]) FROM (SELECT id FROM cn_trust.subjects UNION ALL SELECT id FROM cn_trust.subject_deltas) c
			WHERE NOT EXISTS (SELECT 1 FROM cn_trust.pubkeys k WHERE k.id = c.id)`},
		{"list", `SELECT a.pubkey, s.kind, s.source_id, s.created_at, ARRAY(SELECT k.pubkey FROM cn_trust.pubkeys k WHERE k.id = ANY(s.targets) ORDER BY 1)
			FROM cn_trust.sets s JOIN cn_trust.pubkeys a ON a.id = s.author WHERE a.pubkey <> ALL($1) ORDER BY 1, 2`},
	} {
		rows, err := conn.Query(ctx, q.sql, nodePubs)
		require.NoError(t, err, q.name)
		n := 0
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintln(&sb, append([]any{q.name}, vals...)...)
			n++
		}
		require.NoError(t, rows.Err(), q.name)
		if q.name != "action" { // (the history hides nothing)
			require.Positive(t, n, "the history leaves %s rows", q.name)
		}
	}
	return sb.String()
}

// requireOnce: every event of h is stored once (events' primary key) and has
// no duplicate outbox row (event, topic, op), and no client event is stored
// that h does not hold.
func requireOnce(t *testing.T, url string, h history, nodePubs []string) {
	t.Helper()
	var dups, stored, unknown int
	ids := make([]string, 0, h.size())
	for id := range h.ids() {
		ids = append(ids, id)
	}
	require.NoError(t, queryRow(t, url, `SELECT (SELECT count(*) FROM (SELECT 1 FROM cn_relay.events_outbox
		WHERE effective_key IS NULL GROUP BY event_id, topic_id, op HAVING count(*) > 1) d),
		(SELECT count(*) FROM cn_relay.events WHERE id = ANY($1)),
		(SELECT count(*) FROM cn_relay.events WHERE pubkey <> ALL($2) AND id <> ALL($1))`, ids, nodePubs).Scan(&dups, &stored, &unknown))
	require.Zero(t, dups, "duplicate outbox rows")
	require.Equal(t, len(ids), stored, "events of the history stored")
	require.Zero(t, unknown, "stored events that no client sent")
}

// requireStreamEqualsOutbox: the bridge's stream holds one message per
// outbox row, Nats-Msg-Id = seq, in seq order, whatever gaps seq has.
func requireStreamEqualsOutbox(t *testing.T, url string, ns *natsServer) {
	t.Helper()
	var seqs []int64
	rows, err := pgxQuery(t, url, "SELECT seq FROM cn_relay.events_outbox ORDER BY seq")
	require.NoError(t, err)
	seqs = rows
	ids := streamIDs(t, ns)
	want := make([]string, len(seqs))
	for i, s := range seqs {
		want[i] = strconv.FormatInt(s, 10)
	}
	require.Equal(t, want, ids, "stream message ids = outbox seqs, each once, in order")
}

// streamIDs returns the Nats-Msg-Id of every message of the test stream, in order.
func streamIDs(t *testing.T, ns *natsServer) []string {
	t.Helper()
	var out []string
	for _, m := range testkit.StreamMsgs(t, ns.url(), testStream) {
		out = append(out, m.Header.Get(jetstream.MsgIDHeader))
	}
	return out
}

func pgxQuery(t *testing.T, url, sql string, args ...any) ([]int64, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// setUpNode creates the database on s with the moderation rules.
func setUpNode(t *testing.T, s interface{ URL(string) string }) {
	t.Helper()
	rules, err := moderation.ParseFile([]byte(markerRules))
	require.NoError(t, err)
	ctx := context.Background()
	pool, err := pgxPoolFor(ctx, s.URL(dbName))
	require.NoError(t, err)
	defer pool.Close()
	_, err = moderation.ApplyRules(ctx, pool, rules, "durability", true)
	require.NoError(t, err)
}

func newNodeKeys(t *testing.T, h history) nodeKeys {
	t.Helper()
	k, err := nodekey.Generate(filepath.Join(t.TempDir(), "node.key"))
	require.NoError(t, err)
	var seeds []string
	for _, sk := range h.keys[:2] {
		pk, _ := nostr.GetPublicKey(sk)
		seeds = append(seeds, pk)
	}
	return nodeKeys{key: k, seeds: seeds}
}

func (k nodeKeys) pubs(t *testing.T) []string {
	p, err := k.key.Derive(trust.ProviderPurpose)
	require.NoError(t, err)
	return []string{k.key.PubKey, p.PubKey}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func httpGet(url string) (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func pgxPoolFor(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return pgxpool.New(ctx, url)
}

// liveSubscriber holds a REQ for kind 1 open on the relay (limit 0: live
// events only).
type liveSubscriber struct {
	c   *testkit.Client
	sub *testkit.Sub
}

func subscribe(t *testing.T, r *testRelay) *liveSubscriber {
	t.Helper()
	c := testkit.Dial(t, r.ws)
	sub, err := c.Subscribe("live", nostr.Filter{Kinds: []int{1}, Limit: 0})
	require.NoError(t, err)
	stored, reason := sub.WaitEOSE()
	require.Empty(t, reason)
	require.Empty(t, stored)
	return &liveSubscriber{c: c, sub: sub}
}

// got counts every event the subscription was sent, by id.
func (s *liveSubscriber) got() map[string]int {
	got := map[string]int{}
	for _, ev := range s.sub.State().Live {
		got[ev.ID]++
	}
	return got
}

func pgxConnect(ctx context.Context, url string) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }

// requireSameDump compares two canonical dumps and prints only the lines
// that differ (at most 40 of each side).
func requireSameDump(t *testing.T, want, got, msg string) {
	t.Helper()
	if want == got {
		return
	}
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var onlyWant, onlyGot []string
	for l, n := range w {
		if g[l] < n {
			onlyWant = append(onlyWant, l)
		}
	}
	for l, n := range g {
		if w[l] < n {
			onlyGot = append(onlyGot, l)
		}
	}
	sort.Strings(onlyWant)
	sort.Strings(onlyGot)
	if len(onlyWant) > 40 {
		onlyWant = onlyWant[:40]
	}
	if len(onlyGot) > 40 {
		onlyGot = onlyGot[:40]
	}
	t.Fatalf("%s: lines only in the reference:\n%s\nlines only here:\n%s", msg, strings.Join(onlyWant, "\n"), strings.Join(onlyGot, "\n"))
}
