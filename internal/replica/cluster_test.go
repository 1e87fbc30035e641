package replica_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/pgembed/pgembedtest"
	"github.com/kukuri/communitynode/internal/testkit"
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

// req opens subscription id on cl with filters.
func req(cl *testkit.Client, id string, filters ...nostr.Filter) error {
	fs := make([]any, len(filters))
	for i, f := range filters {
		fs[i] = f
	}
	_, err := cl.Subscribe(id, fs...)
	return err
}

// publishOK sends ev on cl and waits for its OK: an error unless OK true.
func publishOK(cl *testkit.Client, ev *nostr.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ok, err := cl.PublishCtx(ctx, ev)
	if err != nil {
		return err
	}
	if !ok.OK {
		return fmt.Errorf("event %s refused: %s", ev.ID, ok.Reason)
	}
	return nil
}
