package durability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

const dbName = "cn_durability"

// TestAcknowledgedEventsSurviveACrash: clients publish notes under load, the
// database server crashes (pg_ctl -m immediate) in the middle of it and comes
// back; every event answered OK true is then stored, visible once, with its
// outbox row. Three rounds, with the same relay (it reconnects on its own).
// Before the fix (an asynchronous commit followed by a "flush" transaction
// that wrote no WAL and so flushed nothing) events answered in the last
// moments before the crash were lost, in two rounds of three.
func TestAcknowledgedEventsSurviveACrash(t *testing.T) {
	dir := filepath.Join(baseDir(t), "primary")
	pg := startServer(t, dir)
	createDB(t, pg)
	r := startRelay(t, pg.URL(dbName), 10*time.Second)

	acked := map[string]bool{}
	for round := 1; round <= 3; round++ {
		for id := range load(t, r, func() { require.NoError(t, pg.Crash(context.Background())) }) {
			acked[id] = true
		}
		var err error
		pg, err = pgembed.Start(context.Background(), pgembed.Config{DataDir: dir, Port: pg.Port()})
		require.NoError(t, err, "restart after crash %d", round)
		t.Cleanup(func() { stop(t, pg) })
		requireStored(t, pg.URL(dbName), acked)
	}
}

// TestAcknowledgedEventsSurviveFailover: the same load against a primary with a
// synchronous standby; the primary is stopped as a crash would and the
// standby promoted: every event answered OK true is on the new primary.
func TestAcknowledgedEventsSurviveFailover(t *testing.T) {
	base := baseDir(t)
	primary := startServer(t, filepath.Join(base, "primary"))
	createDB(t, primary)
	// Synchronous from now on: the standby below is the one every commit waits for.
	exec(t, primary.URL("postgres"), "ALTER SYSTEM SET synchronous_standby_names = '*'")
	exec(t, primary.URL("postgres"), "SELECT pg_reload_conf()")
	standbyDir := filepath.Join(base, "standby")
	require.NoError(t, primary.BaseBackup(context.Background(), standbyDir))
	conf, err := os.ReadFile("../../ops/replica/standby.conf")
	require.NoError(t, err)
	standby := startServer(t, standbyDir, string(conf))
	require.Eventually(t, func() bool {
		var state string
		err := queryRow(t, primary.URL("postgres"), "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication").Scan(&state)
		return err == nil && state == "sync"
	}, 60*time.Second, 20*time.Millisecond, "the standby streams as a synchronous standby")

	// The relay is given both hosts, as an operator would (pgx tries them in
	// order and keeps the one that accepts writes).
	both := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write",
		primary.Port(), standby.Port(), dbName)
	r := startRelay(t, both, 10*time.Second)
	var killed time.Time
	acked := load(t, r, func() {
		killed = time.Now()
		require.NoError(t, primary.Crash(context.Background()))
		requireOutageAnswers(t, r)
		require.NoError(t, standby.Promote(context.Background()))
		// What a failover manager does next: the new primary has no standby
		// yet, and it inherited synchronous_standby_names (pg_basebackup
		// copies postgresql.auto.conf), so every commit would wait.
		exec(t, standby.URL("postgres"), "ALTER SYSTEM RESET synchronous_standby_names")
		exec(t, standby.URL("postgres"), "SELECT pg_reload_conf()")
	})
	requireStored(t, standby.URL(dbName), acked)

	// The same relay process takes events again, on the new primary.
	ws := testkit.Dial(t, r.ws)
	var accepted time.Time
	require.Eventually(t, func() bool {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "durability"}}, Content: "after the failover"}
		require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
		require.NoError(t, ws.Send("EVENT", ev))
		msg := requireMessage(t, ws, "OK")
		var ok bool
		require.NoError(t, json.Unmarshal(msg[2], &ok))
		if ok {
			accepted = time.Now()
			requireStored(t, standby.URL(dbName), map[string]bool{ev.ID: true})
		}
		return ok
	}, time.Minute, 50*time.Millisecond, "the relay takes events again after the promotion")
	t.Logf("from the kill to the first event accepted on the new primary: %v", accepted.Sub(killed).Round(time.Millisecond))
}

// requireOutageAnswers: while no server accepts connections (the primary is
// gone, the standby not promoted yet), a new client is still answered, each
// with a reason a client can act on: an EVENT gets OK false "error: ..." (it
// may resend it), a REQ gets its stored events and EOSE (from the event
// cache) or CLOSED "error: ..."; never OK true, and never silence.
func requireOutageAnswers(t *testing.T, r *testRelay) {
	t.Helper()
	ws := testkit.Dial(t, r.ws)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "durability"}}, Content: "during the outage"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	require.NoError(t, ws.Send("EVENT", ev))
	msg := requireMessage(t, ws, "OK")
	var ok bool
	var okReason, reason string
	require.NoError(t, json.Unmarshal(msg[2], &ok))
	require.NoError(t, json.Unmarshal(msg[3], &okReason))
	require.False(t, ok, "an EVENT while no primary answers is not acknowledged")
	require.True(t, strings.HasPrefix(okReason, "error:"), "reason %q", okReason)

	require.NoError(t, ws.Send("REQ", "outage", nostr.Filter{Kinds: []int{1}, Limit: 5}))
	for {
		msg := requireMessage(t, ws, "")
		var typ string
		require.NoError(t, json.Unmarshal(msg[0], &typ))
		if typ == "EVENT" {
			continue
		}
		if typ == "CLOSED" {
			require.NoError(t, json.Unmarshal(msg[2], &reason))
			require.True(t, strings.HasPrefix(reason, "error:"), "CLOSED reason %q", reason)
			t.Logf("during the outage: EVENT answered %q; REQ CLOSED %q", okReason, reason)
		} else {
			require.Equal(t, "EOSE", typ, "message %s", msg)
			t.Logf("during the outage: EVENT answered %q; REQ answered with EOSE", okReason)
		}
		break
	}
	require.NoError(t, ws.Close())
}

// TestNoAcknowledgementWithoutTheSynchronousStandby: a primary whose
// synchronous_standby_names names a standby that is not connected must not
// acknowledge anything: every commit waits for it. The relay answers
// `error:` when its ingest timeout passes, never OK true, and a live
// subscriber is not sent the event. A consumer transaction that appended
// outbox rows (the moderator's labels, trust's assertions) waits the same
// way, while one that only moved its offset commits at once (asynchronously,
// as pkg/consumer promises).
func TestNoAcknowledgementWithoutTheSynchronousStandby(t *testing.T) {
	pg := startServer(t, filepath.Join(baseDir(t), "primary"))
	createDB(t, pg)
	url := pg.URL(dbName)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, owner_id, owner_generation) VALUES ('durability-v1', 'me', 1)`)
	require.NoError(t, err)
	r := startRelay(t, url, 2*time.Second)
	sub := testkit.Dial(t, r.ws)
	require.NoError(t, sub.Send("REQ", "live", nostr.Filter{Kinds: []int{1}, Limit: 0}))
	requireMessage(t, sub, "EOSE")

	// From here on every synchronous commit waits for a standby that is not there.
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return commitWaits(t, url, "SELECT pg_logical_emit_message(true, 'probe', '')") },
		30*time.Second, 10*time.Millisecond, "the server applies synchronous_standby_names")
	release := func() { // ends the transactions waiting for the standby (they hold the outbox lock)
		_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
		require.NoError(t, err)
	}

	// A consumer batch that only moves its offset commits at once.
	require.False(t, commitWaits(t, url, "SELECT cn_relay.consumer_advance('durability-v1', 'me', 1, 0, 1, false)"),
		"an offset commit without outbox rows is asynchronous")
	// One whose handler appended outbox rows waits like any append.
	require.True(t, commitWaitsAfter(t, url, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := outbox.Append(ctx, tx, []outbox.Record{{Op: outbox.OpUpsert, EventID: strings.Repeat("a", 64), TopicID: "durability", Kind: 1985}}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT cn_relay.consumer_advance('durability-v1', 'me', 1, 1, 2, false)")
		return err
	}), "a consumer batch that appended outbox rows waits for the standby")
	release()

	// The relay answers error: once its ingest timeout passes, never OK true.
	pub := testkit.Dial(t, r.ws)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "durability"}}, Content: "unacknowledged"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	require.NoError(t, pub.Send("EVENT", ev))
	ok := requireMessage(t, pub, "OK")
	var accepted bool
	var reason string
	require.NoError(t, json.Unmarshal(ok[2], &accepted))
	require.NoError(t, json.Unmarshal(ok[3], &reason))
	require.False(t, accepted, "OK true for an event the synchronous standby never confirmed")
	require.True(t, strings.HasPrefix(reason, "error:"), "reason %q", reason)
	// The commit still waits (the relay did not cancel it: a cancelled wait
	// leaves the transaction committed on the primary alone), and nothing of
	// it is visible.
	var waiting, visible int
	// The writer lease's renewals wait for the standby too (a relay must not
	// trust a lease a promoted standby lacks: internal/writerlease), marked
	// by their application_name; counted here is the ingest commit alone.
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND application_name <> 'cn_writer_lease'").Scan(&waiting))
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE id = $1", ev.ID).Scan(&visible))
	require.Equal(t, 1, waiting, "the relay's commit waits for the standby")
	require.Zero(t, visible, "an event the standby never confirmed is visible")
	// The live subscriber was sent nothing: the rows are not visible while the
	// commit waits (what it sends next is the answer to this REQ, not an EVENT).
	require.NoError(t, sub.Send("REQ", "probe", nostr.Filter{IDs: []string{ev.ID}}))
	msg := requireMessage(t, sub, "")
	require.NotEqual(t, `"EVENT"`, string(msg[0]), "a live subscriber was sent an event that is not durable: %s", msg)
	release()
}

// commitWaits reports whether a transaction running stmt is still waiting
// for its COMMIT after 1 s (the wait for a synchronous standby).
func commitWaits(t *testing.T, url, stmt string) bool {
	return commitWaitsAfter(t, url, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, stmt)
		return err
	})
}

func commitWaitsAfter(t *testing.T, url string, fn func(ctx context.Context, tx pgx.Tx) error) bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	tx, err := conn.Begin(context.Background())
	require.NoError(t, err)
	require.NoError(t, fn(context.Background(), tx))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = tx.Commit(ctx)
	if err == nil {
		return false
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, "the commit failed otherwise")
	return true
}

// requireMessage reads c's next message of type typ ("": any type) within
// testkit.ReplyTimeout, skipping NOTICEs and AUTH challenges.
func requireMessage(t *testing.T, c *testkit.Client, typ string) testkit.Msg {
	t.Helper()
	for {
		msg := c.Next()
		got := msg.Label()
		if got == "NOTICE" || got == "AUTH" {
			continue
		}
		if typ != "" {
			require.Equal(t, typ, got, "message %s", msg)
		}
		return msg
	}
}

// load runs 4 connections publishing notes as fast as the relay answers
// (up to 32 in flight each) for a while, calls crash while they run, lets
// them go on for a moment (the relay answers errors), and returns the ids
// answered OK true.
func load(t *testing.T, r *testRelay, crash func()) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		c := testkit.Dial(t, r.ws)
		sk := nostr.GeneratePrivateKey()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range publish(c, sk, stop) {
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	require.Eventually(t, func() bool { return count() >= 1000 }, 60*time.Second, 5*time.Millisecond, "events acknowledged under load")
	crash()
	n := count()
	time.Sleep(500 * time.Millisecond) // let answers to what was in flight arrive (any OK true among them counts)
	close(stop)
	wg.Wait()
	t.Logf("%d events acknowledged before the crash, %d in all", n, count())
	return acked
}

// publish sends notes on c, keeping up to 32 unanswered, until stop is closed
// or the connection fails, and sends the id of each OK true on the returned
// channel, which it closes when done.
func publish(c *testkit.Client, sk string, stop <-chan struct{}) <-chan string {
	out := make(chan string, 64)
	window := make(chan struct{}, 32)
	done := make(chan struct{})
	go func() { // reader
		defer close(out)
		defer close(done)
		for {
			msg, err := c.NextCtx(context.Background())
			if err != nil {
				return
			}
			if msg.Label() != "OK" || len(msg) != 4 {
				continue
			}
			var ok bool
			_ = json.Unmarshal(msg[2], &ok)
			if ok {
				out <- msg.Str(1)
			}
			select {
			case <-window:
			default:
			}
		}
	}()
	go func() { // writer
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-done:
				return
			case window <- struct{}{}:
			}
			ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "durability"}}, Content: fmt.Sprintf("note %d", i)}
			if ev.Sign(sk) != nil {
				return
			}
			if c.Send("EVENT", ev) != nil {
				return
			}
		}
	}()
	return out
}

// requireStored checks that every id in acked is one visible event of the
// database at url with exactly one upsert row in the outbox (its one topic)
// and no other row.
func requireStored(t *testing.T, url string, acked map[string]bool) {
	t.Helper()
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var missing, hidden, noOutbox int
	err = conn.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE e.id IS NULL),
		       count(*) FILTER (WHERE e.id IS NOT NULL AND (e.deleted_at IS NOT NULL OR NOT e.is_effective)),
		       count(*) FILTER (WHERE (SELECT count(*) FILTER (WHERE o.op = 'upsert') || '/' || count(*) FROM cn_relay.events_outbox o WHERE o.event_id = a.id) <> '1/1')
		FROM unnest($1::text[]) AS a(id) LEFT JOIN cn_relay.events e ON e.id = a.id`, ids).Scan(&missing, &hidden, &noOutbox)
	require.NoError(t, err)
	require.Zero(t, missing, "of %d events answered OK true, %d are not stored", len(ids), missing)
	require.Zero(t, hidden, "stored but not visible")
	require.Zero(t, noOutbox, "stored without exactly one outbox row")
}

// startServer starts a cluster on dir with the server's default durability
// (fsync and synchronous_commit on) plus settings.
func startServer(t *testing.T, dir string, settings ...string) *pgembed.Server {
	t.Helper()
	s, err := pgembed.Start(context.Background(), pgembed.Config{DataDir: dir, Settings: settings})
	require.NoError(t, err, "start postgres (the tests need the Postgres server binaries)")
	t.Cleanup(func() { stop(t, s) })
	return s
}

func createDB(t *testing.T, s *pgembed.Server) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+dbName)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	conn, err = pgx.Connect(ctx, s.URL(dbName))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = schema.Migrate(ctx, conn)
	require.NoError(t, err)
}

func stop(t *testing.T, s *pgembed.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("stop postgres: %v", err)
	}
}

// baseDir returns a 0755 directory the run-as account can traverse.
func baseDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "durability-test-*")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	require.NoError(t, err, sql)
}

type rowScanner struct {
	conn *pgx.Conn
	row  pgx.Row
	err  error
}

func (r rowScanner) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.conn.Close(context.Background())
	return r.row.Scan(dest...)
}

func queryRow(t *testing.T, url, sql string, args ...any) rowScanner {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		return rowScanner{err: err}
	}
	return rowScanner{conn: conn, row: conn.QueryRow(context.Background(), sql, args...)}
}

type testRelay struct{ ws string }

// startRelay runs a relay (node.Relay, what the relay command runs) on url
// with the given ingest timeout and no rate limits.
func startRelay(t *testing.T, url string, ingestTimeout time.Duration) *testRelay {
	t.Helper()
	cfg := nodetest.RelayConfig(t)
	cfg.Limits.RequireTopic = false
	cfg.IngestTimeout = ingestTimeout
	// (its database may crash under it; it logs every refused batch while it is down)
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: url, Relay: cfg, Logger: slog.New(slog.DiscardHandler)}, true)
	return &testRelay{ws: "ws://" + cfg.Listen}
}
