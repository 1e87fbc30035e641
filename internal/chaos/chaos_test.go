package chaos_test

import (
	"context"
	"fmt"
	"math/rand"
	"net"
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
	"github.com/kukuri/communitynode/internal/pgtest"
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
	t.Logf("built the relay and the indexer in %v", time.Since(began).Round(time.Millisecond))
	db := pgtest.New(t)
	ctx := context.Background()
	roles := dbroles.Config{}
	require.NoError(t, dbroles.Apply(ctx, db.Conn(t), roles))
	withApp := func(url, app string) string { return url + "&application_name=" + app }
	relayURL := withApp(db.LoginAs(t, roles.Role(dbroles.Relay), false), "chaos-relay")
	indexerURL := withApp(db.LoginAs(t, roles.Role(dbroles.Indexer), false), "chaos-indexer")
	require.Contains(t, relayURL, "?", "the test URL has a query")

	logs := os.Getenv("CN_CHAOS_LOG_DIR") // keep the daemons' logs there
	if logs == "" {
		logs = t.TempDir()
	}
	relayAddr, indexerAddr := freeAddr(t), freeAddr(t)
	relay := &daemon{name: "relay", bin: filepath.Join(bin, "relay"), log: filepath.Join(logs, "relay.log"),
		args: []string{"--listen", relayAddr, "--database-url", relayURL,
			"--event-rate-ip", "0", "--event-rate-pubkey", "0", "--req-rate-ip", "0", "--max-conns-per-ip", "1000"}}
	indexer := &daemon{name: "indexer", bin: filepath.Join(bin, "indexer"), log: filepath.Join(logs, "indexer.log"),
		args: []string{"--listen", indexerAddr, "--database-url", indexerURL}}
	for _, d := range []*daemon{relay, indexer} {
		d.supervise(t)
	}
	defer func() {
		if t.Failed() {
			for _, d := range []*daemon{relay, indexer} {
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

	// The chaos: each kind of fault once in a random order, then at random.
	actions := map[string]int{}
	chaosDone := make(chan struct{})
	chaosStopped := make(chan struct{})
	go func() {
		defer close(chaosStopped)
		crng := rand.New(rand.NewSource(rng.Int63()))
		kinds := []string{"kill relay", "kill indexer", "terminate relay connections", "terminate indexer connections"}
		first := crng.Perm(len(kinds))
		for i := 0; ; i++ {
			pause := time.NewTimer(time.Duration(200+crng.Intn(700)) * time.Millisecond)
			select {
			case <-chaosDone:
				pause.Stop()
				return
			case <-pause.C:
			}
			var k string
			if i < len(first) {
				k = kinds[first[i]]
			} else {
				k = pick(crng, []string{"kill relay", "kill relay", "kill indexer", "terminate relay connections",
					"terminate relay connections", "terminate indexer connections"})
			}
			switch k {
			case "kill relay":
				relay.kill()
			case "kill indexer":
				indexer.kill()
			case "terminate relay connections":
				terminate(t, db, "chaos-relay", crng)
			case "terminate indexer connections":
				terminate(t, db, "chaos-indexer", crng)
			}
			actions[k]++
		}
	}()
	wg.Wait()
	close(chaosDone)
	<-chaosStopped
	clientsDone := time.Since(began)

	// Stop the relay (a graceful stop finishes its group commits), then wait for
	// index-v1 to apply the whole outbox.
	relay.stop(t)
	var head int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox").Scan(&head))
	require.Eventually(t, func() bool {
		var last int64
		err := db.Pool.QueryRow(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = 'index-v1'").Scan(&last)
		return err == nil && last >= head
	}, 30*time.Second, 20*time.Millisecond, "index-v1 reaches the outbox head %d", head)
	caughtUp := time.Since(began)
	indexer.stop(t)

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
	t.Logf("chaos: %v of clients, caught up at %v; actions %v; restarts: relay %d, indexer %d (exits on their own: relay %d, indexer %d)",
		clientsDone.Round(time.Millisecond), caughtUp.Round(time.Millisecond), actions,
		relay.starts-1, indexer.starts-1, relay.selfExits, indexer.selfExits)
	t.Logf("clients: %d events sent, %d acknowledged, %d refused, %d unanswered at the deadline, %d transient error answers, %d reconnects; outbox head %d",
		nSent, nAcked, nRefused, nUnanswered, nTransient, nReconnects, head)
	require.Positive(t, nAcked)
	require.Positive(t, nRefused)
	require.Positive(t, len(ackedDeletes))
	for _, k := range []string{"kill relay", "kill indexer", "terminate relay connections", "terminate indexer connections"} {
		require.Positive(t, actions[k], k)
	}

	// The database.
	type row struct {
		id      string
		kind    int
		deleted bool
		live    bool
	}
	rows, err := db.Pool.Query(ctx, "SELECT id, kind, deleted_at IS NOT NULL, deleted_at IS NULL AND is_effective FROM cn_relay.events")
	require.NoError(t, err)
	stored := map[string]row{}
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.id, &r.kind, &r.deleted, &r.live))
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
		if !sent[id] {
			unsent = append(unsent, id)
		}
		if why, ok := refused[id]; ok {
			storedRefused = append(storedRefused, id+" ("+why+")")
		}
		switch {
		case ackedDeletes[id] && !r.deleted:
			undeleted = append(undeleted, id)
		case !sentDeletes[id] && r.deleted:
			wronglyDeleted = append(wronglyDeleted, id)
		}
	}
	require.Empty(t, lost, "acknowledged events that are not stored")
	require.Empty(t, unsent, "stored events that were never sent")
	require.Empty(t, storedRefused, "stored events that were refused")
	require.Empty(t, undeleted, "targets of acknowledged deletions that are not deleted")
	require.Empty(t, wronglyDeleted, "deleted events nobody deleted")

	// The outbox: one row per (event, topic, op); upserts exactly for event_topics,
	// deletes exactly for the topics of deleted events.
	var dups int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM cn_relay.events_outbox
		GROUP BY event_id, topic_id, op HAVING count(*) > 1) d`).Scan(&dups))
	require.Zero(t, dups, "duplicate outbox rows")
	for _, check := range []struct{ what, sql string }{
		{"event_topics without an upsert row", `SELECT event_id, topic_id FROM cn_relay.event_topics
			EXCEPT SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'upsert'`},
		{"upsert rows without event_topics", `SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'upsert'
			EXCEPT SELECT event_id, topic_id FROM cn_relay.event_topics`},
		{"deleted events' topics without a delete row", `SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t
			JOIN cn_relay.events e ON e.id = t.event_id WHERE e.deleted_at IS NOT NULL
			EXCEPT SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'delete'`},
		{"delete rows of events that are not deleted", `SELECT event_id, topic_id FROM cn_relay.events_outbox WHERE op = 'delete'
			EXCEPT SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t
			JOIN cn_relay.events e ON e.id = t.event_id WHERE e.deleted_at IS NOT NULL`},
	} {
		rows, err := db.Pool.Query(ctx, check.sql)
		require.NoError(t, err)
		bad, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Event, Topic string }])
		require.NoError(t, err)
		require.Empty(t, bad, check.what)
	}

	// The index holds exactly the live notes.
	rows, err = db.Pool.Query(ctx, "SELECT event_id FROM cn_index.documents")
	require.NoError(t, err)
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var live []string
	for id, r := range stored {
		if r.live && r.kind == 1 {
			live = append(live, id)
		}
	}
	sort.Strings(docs)
	sort.Strings(live)
	require.Equal(t, live, docs, "the search index holds exactly the live events")
	t.Logf("stored %d events (%d live notes indexed), %d deleted", len(stored), len(live), countDeleted(stored, func(r row) bool { return r.deleted }))
}

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
	start := func() error {
		cmd := exec.Command(d.bin, d.args...)
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			return err
		}
		d.mu.Lock()
		d.cmd, d.exited, d.killed = cmd, make(chan struct{}), false
		d.starts++
		d.mu.Unlock()
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
				fmt.Fprintf(f, "chaos: restart %s: %v\n", d.name, err)
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

// buildDaemons builds the relay and the indexer into a temporary directory.
func buildDaemons(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"github.com/kukuri/communitynode/cmd/relay", "github.com/kukuri/communitynode/cmd/indexer")
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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
