package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust"
)

// TestReloadEveryLiveSetting changes each of trust's live settings in a
// running process (the reload SIGHUP asks for) and sees it take effect
// without a restart: new --seeds recompute the ranks at once around the new
// seed; a higher --assert-min-rank withdraws the assertions below it; a
// shorter --publish-interval publishes a pending counter change that the long
// one held back; a shorter --recompute-interval runs the next computation an
// interval after the last, not an hour after it.
func TestReloadEveryLiveSetting(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	key, _ := daemontest.KeyFiles(t)
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny
	st := store.New(db.Pool, testkit.RunWriter(t, db.Pool), rules)
	ingest := func(evs ...*nostr.Event) {
		t.Helper()
		res, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
		for _, v := range res {
			require.True(t, v.OK, v.Message)
		}
	}
	k := testkit.SecretKeys(4)
	a, b, c, d := k[0], k[1], k[2], k[3]
	ingest(testkit.Follows(t, a, 100, testkit.Pub(b), testkit.Pub(c)), testkit.Follows(t, b, 100, testkit.Pub(c)),
		testkit.Follows(t, d, 100, testkit.Pub(a)))

	addr := testkit.FreeAddr(t)
	metrics := "http://" + addr + "/metrics"
	file := filepath.Join(t.TempDir(), "node.yaml")
	settings := map[string]string{"listen": addr, "recompute-interval": "1h", "publish-interval": "1h",
		"seeds": "[" + testkit.Pub(a) + "]", "assert-min-rank": "1"}
	write := func() {
		var sb strings.Builder
		sb.WriteString("trust:\n")
		for _, name := range []string{"listen", "recompute-interval", "publish-interval", "seeds", "assert-min-rank"} {
			fmt.Fprintf(&sb, "  %s: %s\n", name, settings[name])
		}
		require.NoError(t, os.WriteFile(file, []byte(sb.String()), 0o600))
	}
	write()
	args := []string{"trust", "--config", file, "--database-url", db.URL, "--node-key-file", key}
	requests := make(chan struct{})
	logs := &testkit.Buffer{}
	runCtx, cancel := context.WithCancel(daemon.WithReload(ctx, newApp, args, requests))
	done := make(chan error, 1)
	go func() { done <- newApp(io.Discard, logs).RunContext(runCtx, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(daemontest.StopTimeout):
			t.Error("trust did not stop")
		}
	})
	metric := func(name string) int {
		n, _ := daemontest.Metric(metrics, name)
		return n
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 15s; logs:\n%s", what, logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	gen := 1
	reload := func(name, value string) {
		t.Helper()
		settings[name] = value
		write()
		requests <- struct{}{}
		gen++
		eventually("generation "+fmt.Sprint(gen), func() bool { return metric("cn_config_generation") == gen })
		require.Contains(t, logs.String(), `"changed":"`+name+`"`)
		require.Equal(t, 0, metric("cn_config_reload_failures_total"))
	}
	rank := func(sk string) int {
		var r int
		if err := db.Pool.QueryRow(ctx, `SELECT rank FROM cn_trust.scores WHERE pubkey = $1`, testkit.Pub(sk)).Scan(&r); err != nil {
			return -1
		}
		return r
	}
	published := func() []string {
		rows, err := db.Pool.Query(ctx, `SELECT subject FROM cn_trust.published ORDER BY subject`)
		require.NoError(t, err)
		subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return subs
	}
	ranked := func(min int) []string {
		rows, err := db.Pool.Query(ctx, `SELECT pubkey FROM cn_trust.scores WHERE rank >= $1 ORDER BY pubkey`, min)
		require.NoError(t, err)
		subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return subs
	}
	eventually("the first run", func() bool { return metric("cn_trust_runs_total") == 1 })
	require.Equal(t, 100, rank(a), "a is the seed")
	eventually("the first assertions", func() bool { return len(published()) > 1 && slices.Equal(published(), ranked(1)) })

	// seeds: a computation at once (the interval is an hour), around d.
	reload("seeds", "["+testkit.Pub(d)+"]")
	eventually("a run with the new seed", func() bool { return metric("cn_trust_runs_total") == 2 && rank(d) == 100 })
	require.Less(t, rank(a), 100)

	// assert-min-rank: only the seed keeps its assertion.
	eventually("the new ranks published", func() bool { return slices.Equal(published(), ranked(1)) })
	require.Greater(t, len(published()), 1)
	reload("assert-min-rank", "100")
	eventually("the assertions below 100 withdrawn", func() bool { return slices.Equal(published(), []string{testkit.Pub(d)}) })

	// publish-interval: c now follows d; the graph applies it at once, the
	// hourly publisher holds the new follower count back until the interval
	// is short.
	followers := func() string {
		var tags string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT tags::text FROM cn_trust.published WHERE subject = $1`, testkit.Pub(d)).Scan(&tags))
		return tags
	}
	require.Contains(t, followers(), `["followers", "0"]`)
	ingest(testkit.Follows(t, c, 200, testkit.Pub(d)))
	testkit.WaitCaughtUp(t, db.Pool, trust.ConsumerName)
	require.Contains(t, followers(), `["followers", "0"]`, "held back by the hourly publisher")
	reload("publish-interval", "200ms")
	eventually("the new follower published", func() bool { return strings.Contains(followers(), `["followers", "1"]`) })

	// recompute-interval: the next run an interval after the last one.
	require.Equal(t, 2, metric("cn_trust_runs_total"))
	reload("recompute-interval", "1s")
	eventually("a scheduled run", func() bool { return metric("cn_trust_runs_total") >= 3 })
}
