package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/consumer"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const clients = 8

// TestChaos is described in doc.go.
func TestChaos(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("CN_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("chaos seed %d (CN_CHAOS_SEED=%d replays the schedule)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	window := 15 * time.Second
	if testing.Short() {
		window = 5 * time.Second
	}
	began := time.Now()

	bin := buildDaemons(t)
	t.Logf("built the daemons in %v", time.Since(began).Round(time.Millisecond))
	db := pgtest.New(t)
	ctx := context.Background()
	roles := dbroles.Config{}
	require.NoError(t, dbroles.Apply(ctx, db.Conn(t), roles))
	withApp := func(url, app string) string { return url + "&application_name=" + app }
	relayURL := withApp(db.LoginAs(t, roles.Role(dbroles.Relay), false), "chaos-relay")
	indexerURL := withApp(db.LoginAs(t, roles.Role(dbroles.Indexer), false), "chaos-indexer")
	moderatorURL := withApp(db.LoginAs(t, roles.Role(dbroles.Moderator), false), "chaos-moderator")
	trustURL := withApp(db.LoginAs(t, roles.Role(dbroles.Trust), false), "chaos-trust")
	require.Contains(t, relayURL, "?", "the test URL has a query")

	// The node key (labels), the provider key derived from it (assertions), the
	// moderation rules, and the community whose first two keys seed trust.
	keyFile := filepath.Join(t.TempDir(), "node.key")
	nodeKey, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	provider, err := nodeKey.Derive(trust.ProviderPurpose)
	require.NoError(t, err)
	rules, err := moderation.ParseFile([]byte(chaosRules + groupRule))
	require.NoError(t, err)
	_, err = moderation.ApplyRules(ctx, db.Pool, rules, "chaos", true)
	require.NoError(t, err)
	cm := newCommunity()

	logs := os.Getenv("CN_CHAOS_LOG_DIR") // keep the daemons' logs there
	if logs == "" {
		logs = t.TempDir()
	}
	relayAddr, indexerAddr, moderatorAddr := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
	relay := &daemon{name: "relay", bin: filepath.Join(bin, "relay"), log: filepath.Join(logs, "relay.log"),
		args: []string{"--listen", relayAddr, "--metrics-listen", "", "--database-url", relayURL, "--identity-writers", "any",
			"--node-key-file", keyFile, "--group-creators", "any",
			"--event-rate-ip", "0", "--event-rate-pubkey", "0", "--req-rate-ip", "0", "--max-conns-per-ip", "1000"}}
	indexer := &daemon{name: "indexer", bin: filepath.Join(bin, "indexer"), log: filepath.Join(logs, "indexer.log"),
		args: []string{"--listen", indexerAddr, "--database-url", indexerURL}}
	moderator := &daemon{name: "moderator", bin: filepath.Join(bin, "moderator"), log: filepath.Join(logs, "moderator.log"),
		args: []string{"--listen", moderatorAddr, "--database-url", moderatorURL, "--node-key-file", keyFile}}
	// Trust computes when it starts (after every kill) and when the test asks.
	trustArgs := []string{"--database-url", trustURL, "--node-key-file", keyFile,
		"--seeds", pubOf(cm.honest[0]) + "," + pubOf(cm.honest[1]), "--recompute-interval", "1h", "--publish-interval", "200ms"}
	trustd := &daemon{name: "trust", bin: filepath.Join(bin, "trust"), log: filepath.Join(logs, "trust.log"),
		args: append([]string{"--listen", testkit.FreeAddr(t)}, trustArgs...)}
	daemons := []*daemon{relay, indexer, moderator, trustd}
	for _, d := range daemons {
		d.supervise(t)
	}
	defer func() {
		if t.Failed() {
			for _, d := range daemons {
				b, _ := os.ReadFile(d.log)
				t.Logf("%s log (last 4 KiB):\n%s", d.name, tail(b, 4096))
			}
		}
	}()
	waitHTTP(t, "http://"+relayAddr+"/healthz")
	t.Logf("relay up at %v", time.Since(began).Round(time.Millisecond))

	// The clients.
	stopClients := time.Now().Add(window)
	hardDeadline := stopClients.Add(20 * time.Second)
	var wg sync.WaitGroup
	results := make([]*client, clients)
	for i := range results {
		c := &client{id: i, url: "ws://" + relayAddr, key: nostr.GeneratePrivateKey(),
			rng: rand.New(rand.NewSource(rng.Int63())), sent: map[string]bool{}, acked: map[string]bool{},
			refused: map[string]string{}, deletes: map[string]string{}}
		results[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(stopClients, hardDeadline)
			if over := time.Since(stopClients); over > time.Second {
				t.Logf("client %d finished %v after the window (last op %v)", c.id, over.Round(time.Millisecond), c.lastOp.Round(time.Millisecond))
			}
		}()
	}
	// The community's clients: each owns a third of the honest keys.
	for i, c := range communityClients("ws://"+relayAddr, rng, clients, communityClientsN) {
		var own []int
		for k := i; k < honestKeys; k += communityClientsN {
			own = append(own, k)
		}
		results = append(results, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.runCommunity(cm, own, i == 0, stopClients, hardDeadline)
		}()
	}

	// The group client.
	gw := newGroupWork("ws://"+relayAddr, rng, clients+communityClientsN)
	results = append(results, gw.c)
	wg.Add(1)
	go func() {
		defer wg.Done()
		gw.run(stopClients, hardDeadline)
	}()

	// The chaos: each kind of fault once in a random order, then at random.
	actions := map[string]int{}
	chaosDone := make(chan struct{})
	chaosStopped := make(chan struct{})
	go func() {
		defer close(chaosStopped)
		crng := rand.New(rand.NewSource(rng.Int63()))
		first := crng.Perm(len(faults))
		for i := 0; ; i++ {
			pause := time.NewTimer(time.Duration(200+crng.Intn(700)) * time.Millisecond)
			if i < len(first) { // every fault once, early in the window
				pause.Reset(time.Duration(200+crng.Intn(300)) * time.Millisecond)
			}
			select {
			case <-chaosDone:
				pause.Stop()
				return
			case <-pause.C:
			}
			var k string
			if i < len(first) {
				k = faults[first[i]]
			} else {
				k = pick(crng, append([]string{"kill relay", "terminate relay connections"}, faults...))
			}
			name, what, _ := strings.Cut(k, " ")
			if name == "kill" {
				byName := map[string]*daemon{"relay": relay, "indexer": indexer, "moderator": moderator, "trust": trustd}
				byName[what].kill()
			} else {
				terminate(t, db, "chaos-"+strings.TrimSuffix(what, " connections"), crng)
			}
			actions[k]++
		}
	}()
	wg.Wait()
	close(chaosDone)
	<-chaosStopped
	clientsDone := time.Since(began)

	// Stop the relay (a graceful stop finishes its group commits), then wait for
	// the consumers to apply the whole outbox (with what the moderator and
	// trust append to it) and for trust to rank the final graph.
	relay.stop(t)
	asOf := time.Now().Unix()
	before := readTrust(t, db, provider.PubKey, asOf)
	head := quiesce(t, db)
	caughtUp := time.Since(began)

	// What the clients know.
	sent, acked, refused := map[string]bool{}, map[string]bool{}, map[string]string{}
	ackedDeletes := map[string]bool{} // targets of acknowledged deletions
	sentDeletes := map[string]bool{}  // targets of every deletion sent
	var nSent, nAcked, nRefused, nUnanswered, nTransient, nReconnects int
	for _, c := range results {
		for id := range c.sent {
			sent[id] = true
		}
		for id := range c.acked {
			acked[id] = true
		}
		for id, why := range c.refused {
			refused[id] = why
		}
		for del, target := range c.deletes {
			sentDeletes[target] = true
			if c.acked[del] {
				ackedDeletes[target] = true
			}
		}
		nSent += len(c.sent)
		nAcked += len(c.acked)
		nRefused += len(c.refused)
		nUnanswered += c.unanswered
		nTransient += c.transient
		nReconnects += c.reconnects
	}
	t.Logf("chaos: %v of clients, caught up at %v; actions %v", clientsDone.Round(time.Millisecond), caughtUp.Round(time.Millisecond), actions)
	for _, d := range daemons {
		t.Logf("%s: %d restarts, %d exits on its own", d.name, d.starts-1, d.selfExits)
	}
	t.Logf("clients: %d events sent, %d acknowledged, %d refused, %d unanswered at the deadline, %d transient error answers, %d reconnects; outbox head %d",
		nSent, nAcked, nRefused, nUnanswered, nTransient, nReconnects, head)
	require.Positive(t, nAcked)
	require.Positive(t, nRefused)
	require.Positive(t, len(ackedDeletes))
	for _, k := range faults {
		require.Positive(t, actions[k], k)
	}

	// The database.
	type row struct {
		id      string
		kind    int
		deleted bool
		live    bool
		node    bool   // made by the node: a label, a retraction, an assertion
		reason  string // why it is deleted
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, kind, deleted_at IS NOT NULL, deleted_at IS NULL AND is_effective,
		pubkey IN ($1, $2), coalesce(deleted_reason, '') FROM cn_relay.events`, nodeKey.PubKey, provider.PubKey)
	require.NoError(t, err)
	stored := map[string]row{}
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.id, &r.kind, &r.deleted, &r.live, &r.node, &r.reason))
		stored[r.id] = r
	}
	require.NoError(t, rows.Err())

	var lost, unsent, storedRefused, undeleted, wronglyDeleted []string
	for id := range acked {
		if _, ok := stored[id]; !ok {
			lost = append(lost, id)
		}
	}
	for id, r := range stored {
		if r.node { // checked by checkCommunity
			continue
		}
		if !sent[id] {
			unsent = append(unsent, id)
		}
		if why, ok := refused[id]; ok {
			storedRefused = append(storedRefused, id+" ("+why+")")
		}
		switch {
		case ackedDeletes[id] && !r.deleted:
			undeleted = append(undeleted, id)
		case !sentDeletes[id] && r.deleted && r.reason != "moderation": // hides: checked by checkCommunity
			wronglyDeleted = append(wronglyDeleted, id)
		}
	}
	require.Empty(t, lost, "acknowledged events that are not stored")
	require.Empty(t, unsent, "stored events that were never sent")
	require.Empty(t, storedRefused, "stored events that were refused")
	require.Empty(t, undeleted, "targets of acknowledged deletions that are not deleted")
	require.Empty(t, wronglyDeleted, "deleted events nobody deleted")

	// The outbox: one row per (event, topic, op) of a regular event (a
	// replaceable version that becomes effective again has another upsert);
	// upserts exactly for event_topics' scope rows (not an identity event's #t
	// rows), deletes exactly for the topics of
	// deleted regular events; the last row of an effective version is an upsert.
	var dups int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM cn_relay.events_outbox
		WHERE effective_key IS NULL GROUP BY event_id, topic_id, op HAVING count(*) > 1) d`).Scan(&dups))
	require.Zero(t, dups, "duplicate outbox rows")
	var comeBacks int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM cn_relay.events_outbox
		WHERE kind = 3 AND op = 'upsert' GROUP BY event_id, topic_id HAVING count(*) > 1) d`).Scan(&comeBacks))
	require.Positive(t, comeBacks, "follow lists that became effective again (A up, B up, B del, A up)")
	for _, check := range []struct{ what, sql string }{
		{"event_topics without an upsert row", `SELECT event_id, topic_id FROM cn_relay.event_topics WHERE scope
			EXCEPT SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'upsert'`},
		{"upsert rows without event_topics", `SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'upsert'
			EXCEPT SELECT event_id, topic_id FROM cn_relay.event_topics WHERE scope`},
		{"deleted events' topics without a delete row", `SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t
			JOIN cn_relay.events e ON e.id = t.event_id WHERE t.scope AND e.deleted_at IS NOT NULL AND e.effective_key IS NULL
			EXCEPT SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'delete'`},
		{"effective versions whose last row is not an upsert", `SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t
			JOIN cn_relay.events e ON e.id = t.event_id WHERE t.scope AND e.effective_key IS NOT NULL AND e.is_effective AND e.deleted_at IS NULL
			AND (SELECT o.op FROM cn_relay.events_outbox o WHERE o.event_id = t.event_id AND o.topic_id = t.topic_id
				ORDER BY o.seq DESC LIMIT 1) IS DISTINCT FROM 'upsert'`},
		{"delete rows of events that are not deleted", `SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'delete'
			EXCEPT SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t
			JOIN cn_relay.events e ON e.id = t.event_id WHERE t.scope AND e.deleted_at IS NOT NULL`},
	} {
		rows, err := db.Pool.Query(ctx, check.sql)
		require.NoError(t, err)
		bad, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Event, Topic string }])
		require.NoError(t, err)
		require.Empty(t, bad, check.what)
	}

	// The index holds exactly the live notes and profiles (the trust provider's).
	rows, err = db.Pool.Query(ctx, "SELECT event_id FROM cn_index.documents")
	require.NoError(t, err)
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var live []string
	for id, r := range stored {
		if r.live && (r.kind == 1 || r.kind == 0) {
			live = append(live, id)
		}
	}
	sort.Strings(docs)
	sort.Strings(live)
	require.Equal(t, live, docs, "the search index holds exactly the live events")
	t.Logf("stored %d events (%d live notes indexed), %d deleted; %d follow lists came back", len(stored), len(live),
		countDeleted(stored, func(r row) bool { return r.deleted }), comeBacks)

	// The moderator's and trust's results.
	checkCommunity(t, db, cm, nodeKey.PubKey, before)
	t.Logf("trust: %d keys with followers, %d ranked, %d assertions", len(before.followers), len(before.ranks), len(before.assertions))
	checkGroups(t, db, gw)

	// A trust replay from 0 (what cnctl reset-offset --consumer trust-v1
	// --to-earliest does, with trust stopped) ends in the same graph, the same
	// ranks and the same assertions, all checked again.
	trustd.stop(t)
	plan, err := consumer.PlanReset(ctx, db.Pool, trust.ConsumerName, consumer.ResetTarget{Earliest: true})
	require.NoError(t, err)
	require.NoError(t, consumer.ExecuteReset(ctx, db.Pool, plan, false, "chaos"))
	t.Logf("trust replays %d rows (%d -> %d)", plan.Replay, plan.From, plan.To)
	replay := &daemon{name: "trust replay", bin: trustd.bin, log: filepath.Join(logs, "trust-replay.log"),
		args: append([]string{"--listen", testkit.FreeAddr(t)}, trustArgs...)}
	replay.supervise(t)
	daemons = append(daemons, replay)
	replayed := readTrust(t, db, provider.PubKey, asOf)
	require.Equal(t, before.graph, replayed.graph, "trust's tables after a replay from 0")
	require.Equal(t, before.assertions, replayed.assertions, "the assertions after a replay from 0")
	checkCommunity(t, db, cm, nodeKey.PubKey, replayed)
	checkGroups(t, db, gw)
	for _, d := range daemons {
		d.stop(t)
	}
}

// faults are the kinds of fault the chaos injects.
var faults = []string{"kill relay", "kill indexer", "kill moderator", "kill trust",
	"terminate relay connections", "terminate indexer connections", "terminate moderator connections", "terminate trust connections"}

// communityClientsN is the number of clients of the community traffic.
const communityClientsN = 3

func countDeleted[T any](m map[string]T, f func(T) bool) int {
	n := 0
	for _, v := range m {
		if f(v) {
			n++
		}
	}
	return n
}

// client publishes notes (one or two topics), refused notes (no topic) and
// deletions of its own acknowledged notes, each message resent until answered.
type client struct {
	id  int
	url string
	key string
	rng *rand.Rand

	conn       *websocket.Conn
	sent       map[string]bool   // every event id sent at least once
	acked      map[string]bool   // answered OK true
	refused    map[string]string // answered OK false with a definitive reason
	deletes    map[string]string // deletion id -> target id
	unanswered int
	transient  int // OK false "error: ..." answers (retried)
	reconnects int
	lastOp     time.Duration
}

var topics = []string{"go", "nostr", "chaos", "postgres"}

func (c *client) run(stop, deadline time.Time) {
	defer func() {
		if c.conn != nil {
			c.conn.Close()
		}
	}()
	var mine []string // acknowledged live notes of this client
	for n := 0; time.Now().Before(stop); n++ {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("client %d note %d word%d", c.id, n, c.rng.Intn(1000))}
		r := c.rng.Float64()
		switch {
		case r < 0.1: // no topic, nothing to inherit from: refused
			ev.Content = "no topic " + ev.Content
		case r < 0.3 && len(mine) > 0:
			i := c.rng.Intn(len(mine))
			target := mine[i]
			mine = slices.Delete(mine, i, i+1)
			ev = &nostr.Event{Kind: 5, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"e", target}}}
			_ = ev.Sign(c.key)
			c.deletes[ev.ID] = target
		default:
			ev.Tags = nostr.Tags{{"t", pick(c.rng, topics)}}
			if c.rng.Intn(3) == 0 {
				ev.Tags = append(ev.Tags, nostr.Tag{"t", pick(c.rng, topics)})
			}
		}
		if ev.Sig == "" {
			_ = ev.Sign(c.key)
		}
		opStart := time.Now()
		ok, why, answered := c.publish(ev, deadline)
		c.lastOp = time.Since(opStart)
		switch {
		case !answered:
			c.unanswered++
		case ok:
			c.acked[ev.ID] = true
			if ev.Kind == 1 {
				mine = append(mine, ev.ID)
			}
		default:
			c.refused[ev.ID] = why
		}
	}
}

// publish sends ev until it is answered with OK true or a definitive OK false,
// reconnecting whenever the connection fails.
func (c *client) publish(ev *nostr.Event, deadline time.Time) (ok bool, why string, answered bool) {
	c.sent[ev.ID] = true
	for time.Now().Before(deadline) {
		if c.conn == nil {
			d := websocket.Dialer{HandshakeTimeout: 2 * time.Second}
			conn, _, err := d.Dial(c.url, nil)
			if err != nil {
				// The relay is restarting: try again shortly.
				time.Sleep(time.Duration(10+c.rng.Intn(40)) * time.Millisecond)
				continue
			}
			c.conn = conn
			c.reconnects++
		}
		if err := c.conn.WriteJSON([]any{"EVENT", ev}); err != nil {
			c.drop()
			continue
		}
		ok, why, err := c.awaitOK(ev.ID)
		if err != nil {
			c.drop()
			continue
		}
		if !ok && strings.HasPrefix(why, "error:") {
			c.transient++
			continue
		}
		return ok, why, true
	}
	return false, "", false
}

func (c *client) awaitOK(id string) (bool, string, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var msg []any
		if err := c.conn.ReadJSON(&msg); err != nil {
			return false, "", err
		}
		if len(msg) == 4 && msg[0] == "OK" && msg[1] == id {
			ok, _ := msg[2].(bool)
			why, _ := msg[3].(string)
			return ok, why, nil
		}
	}
}

func (c *client) drop() {
	c.conn.Close()
	c.conn = nil
}

// daemon is one supervised process: restarted whenever it exits, like a service
// manager would, until stop.
type daemon struct {
	name, bin, log string
	args           []string

	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	killed    bool
	stopping  bool
	starts    int
	selfExits int
	stopped   chan struct{}
}

func (d *daemon) supervise(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	d.stopped = make(chan struct{})
	// start starts the process under d.mu, so that stop and kill always see
	// the process that runs (or stopping before it starts): a restart racing
	// stop would otherwise leave a process nobody signals, and stop waiting
	// for it forever (CI: TestChaos hung till the package's timeout).
	start := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.stopping {
			return errStopping
		}
		cmd := exec.Command(d.bin, d.args...)
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			return err
		}
		d.cmd, d.exited, d.killed = cmd, make(chan struct{}), false
		d.starts++
		return nil
	}
	require.NoError(t, start())
	go func() {
		defer close(d.stopped)
		for {
			d.mu.Lock()
			cmd, exited := d.cmd, d.exited
			d.mu.Unlock()
			err := cmd.Wait()
			d.mu.Lock()
			if !d.killed && !d.stopping {
				d.selfExits++
				fmt.Fprintf(f, "chaos: %s exited on its own: %v\n", d.name, err)
			}
			stopping := d.stopping
			d.mu.Unlock()
			close(exited)
			if stopping {
				return
			}
			if err := start(); err != nil {
				if !errors.Is(err, errStopping) {
					fmt.Fprintf(f, "chaos: restart %s: %v\n", d.name, err)
				}
				return
			}
		}
	}()
	t.Cleanup(func() { d.stop(t) })
}

// kill sends SIGKILL and waits until the process is gone (the supervisor then
// starts a new one).
func (d *daemon) kill() {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.killed = true
	d.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop ends supervision with SIGTERM (SIGKILL after 15 s).
func (d *daemon) stop(t *testing.T) {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		<-d.stopped
		return
	}
	d.stopping = true
	cmd := d.cmd
	d.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.stopped:
	case <-time.After(15 * time.Second):
		t.Errorf("%s did not stop on SIGTERM", d.name)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-d.stopped
	}
}

// errStopping is start's answer once stop has begun.
var errStopping = errors.New("stopping")

// terminate ends some of the backends of the connections named app.
func terminate(t *testing.T, db *pgtest.DB, app string, rng *rand.Rand) {
	rows, err := db.Pool.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2", db.Name, app)
	if err != nil {
		t.Errorf("list backends: %v", err)
		return
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Errorf("list backends: %v", err)
		return
	}
	for i, pid := range pids {
		if i == 0 || rng.Intn(2) == 0 {
			_, _ = db.Pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
		}
	}
}

// buildDaemons builds the four daemons into a temporary directory.
func buildDaemons(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"github.com/kukuri/communitynode/cmd/relay", "github.com/kukuri/communitynode/cmd/indexer",
		"github.com/kukuri/communitynode/cmd/moderator", "github.com/kukuri/communitynode/cmd/trust")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return dir
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "%s does not answer", url)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
