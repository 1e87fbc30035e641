package replica_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/pgembed/pgembedtest"
)

// The tests of this package start their own primary and streaming replicas
// (pgembed: initdb, pg_basebackup -R, pg_ctl on free ports), since a
// replica needs a cluster of its own. A machine that cannot start them fails
// the tests: they never skip.

// cluster is a primary with the node's schema in database cn_i23_node.
type cluster = pgembedtest.Cluster

const dbName = "cn_i23_node"

func startCluster(t *testing.T) *cluster { return pgembedtest.Start(t, dbName) }

func stop(t *testing.T, s *pgembed.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("stop postgres: %v", err)
	}
}

type rowScanner struct {
	conn *pgx.Conn
	row  pgx.Row
}

func (r rowScanner) Scan(dest ...any) error {
	defer r.conn.Close(context.Background())
	return r.row.Scan(dest...)
}

// recoveryConflict reports whether err is a standby's "canceling statement due
// to conflict with recovery" (SQLSTATE 40001), which the tests' own checks on a
// replica may meet as the relay's queries do.
func recoveryConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

func queryRow(t *testing.T, url, sql string, args ...any) rowScanner {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	return rowScanner{conn: conn, row: conn.QueryRow(context.Background(), sql, args...)}
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	require.NoError(t, err, sql)
}

// testRelay is a relay process (node.Relay, the composition the relay
// command runs) on the cluster.
type testRelay struct {
	ws      string
	metrics string
}

func startRelay(t *testing.T, c *cluster, maxLag time.Duration, replicas ...*pgembed.Server) *testRelay {
	t.Helper()
	cfg := nodetest.RelayConfig(t)
	cfg.Limits.MaxLimit = 5000
	cfg.Limits.RequireTopic = false
	cfg.CacheBytes = 0 // (these tests are about reads on replicas: the event cache would answer them)
	var urls []string
	for _, r := range replicas {
		urls = append(urls, r.URL(dbName))
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: c.Primary.URL(dbName), ReadDatabaseURLs: urls, MaxReplicaLag: maxLag,
		Relay: cfg, Logger: logger}, false)
	return &testRelay{ws: "ws://" + cfg.Listen, metrics: "http://" + cfg.MetricsListen + "/metrics"}
}

// metric returns the sum of the samples of the relay's metric whose line
// starts with prefix (a name, or a name with some of its labels).
func (r *testRelay) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(r.metrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(t, err, line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

// waitMetric polls a metric until ok accepts it.
func (r *testRelay) waitMetric(t *testing.T, prefix string, ok func(float64) bool, why string) {
	t.Helper()
	require.Eventually(t, func() bool { return ok(r.metric(t, prefix)) }, 60*time.Second, 50*time.Millisecond, why)
}

// client is a WebSocket connection to the relay that collects what each
// subscription receives.
type client struct {
	ws  *websocket.Conn
	wmu sync.Mutex

	mu   sync.Mutex
	subs map[string]*sub
	oks  map[string]chan string // event id -> "" (ok) or the reason
	err  error                  // the reader's end
}

// sub is what one subscription received.
type sub struct {
	reqAt  time.Time
	stored []*nostr.Event // before EOSE
	live   []*nostr.Event // after EOSE
	eose   bool
	eoseAt time.Time // when EOSE was read
	closed string
}

func dial(t *testing.T, r *testRelay) *client {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(r.ws, nil)
	require.NoError(t, err)
	c := &client{ws: ws, subs: map[string]*sub{}, oks: map[string]chan string{}}
	t.Cleanup(func() { ws.Close() })
	go c.read()
	return c
}

func (c *client) read() {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			continue
		}
		var typ, id string
		_ = json.Unmarshal(msg[0], &typ)
		_ = json.Unmarshal(msg[1], &id)
		c.mu.Lock()
		s := c.subs[id]
		switch {
		case typ == "EVENT" && s != nil && len(msg) == 3:
			ev := &nostr.Event{}
			if json.Unmarshal(msg[2], ev) == nil {
				if s.eose {
					s.live = append(s.live, ev)
				} else {
					s.stored = append(s.stored, ev)
				}
			}
		case typ == "EOSE" && s != nil:
			s.eose, s.eoseAt = true, time.Now()
		case typ == "CLOSED" && s != nil:
			var reason string
			_ = json.Unmarshal(msg[2], &reason)
			s.closed = reason
		case typ == "OK" && len(msg) == 4:
			var ok bool
			var reason string
			_ = json.Unmarshal(msg[2], &ok)
			_ = json.Unmarshal(msg[3], &reason)
			if ch := c.oks[id]; ch != nil {
				if ok {
					reason = ""
				} else if reason == "" {
					reason = "refused"
				}
				ch <- reason
			}
		}
		c.mu.Unlock()
	}
}

func (c *client) send(v ...any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// req opens subscription id with one or more filters; the time it was sent
// is recorded first.
func (c *client) req(id string, f nostr.Filter, more ...nostr.Filter) error {
	c.mu.Lock()
	c.subs[id] = &sub{reqAt: time.Now()}
	c.mu.Unlock()
	msg := []any{"REQ", id, f}
	for _, m := range more {
		msg = append(msg, m)
	}
	return c.send(msg...)
}

// sub returns a copy of what subscription id received so far.
func (c *client) sub(id string) sub {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := *c.subs[id]
	s.stored, s.live = append([]*nostr.Event(nil), s.stored...), append([]*nostr.Event(nil), s.live...)
	return s
}

// publish sends ev and waits for its OK.
func (c *client) publish(ev *nostr.Event) error {
	ch := make(chan string, 1)
	c.mu.Lock()
	c.oks[ev.ID] = ch
	c.mu.Unlock()
	if err := c.send("EVENT", ev); err != nil {
		return err
	}
	select {
	case reason := <-ch:
		if reason != "" {
			return fmt.Errorf("event %s refused: %s", ev.ID, reason)
		}
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("no OK for event %s", ev.ID)
	}
}
