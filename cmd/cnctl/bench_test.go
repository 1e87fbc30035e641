package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/loadgen/loadgentest"
)

func TestBenchCommandLineErrors(t *testing.T) {
	t.Setenv("CN_BENCH_URL", "")
	badAuthors := filepath.Join(t.TempDir(), "authors")
	require.NoError(t, os.WriteFile(badAuthors, []byte("# keys\nnot-a-key\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"bench", "ingest"}, "bench ingest: --url is required (or set CN_BENCH_URL)", 2},
		{[]string{"bench", "req"}, "bench req: --url is required", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--connections", "0"}, "bench ingest: connections must be at least 1 (got 0)", 2},
		{[]string{"bench", "req", "--url", "ws://127.0.0.1:1", "--connections", "0"}, "bench req: connections must be at least 1 (got 0)", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--pipeline", "0"}, "pipeline must be at least 1", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--authors", "1"}, "authors must be at least 2", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--timeout", "0s"}, "timeout must be positive", 2},
		{[]string{"bench", "req", "--url", "ws://127.0.0.1:1", "--requests", "0"}, "requests must be at least 1", 2},
		{[]string{"bench", "req", "--url", "ws://127.0.0.1:1", "--sample", "0"}, "--sample must be at least 1", 2},
		{[]string{"bench", "ingest", "--url", "http://127.0.0.1:7777"}, "want ws:// or wss://", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--connections", "x"}, "invalid value", 2},
		{[]string{"bench", "ingest", "--no-such-flag"}, "flag provided but not defined", 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "extra"}, `unexpected argument "extra"`, 2},
		{[]string{"bench", "join"}, "bench join: --url is required", 2},
		{[]string{"bench", "join", "--url", "ws://127.0.0.1:1", "--joins", "0"}, "bench join: joins must be at least 1 (got 0)", 2},
		{[]string{"bench", "join", "--url", "ws://127.0.0.1:1", "--group", ""}, "bench join: group must not be empty", 2},
		{[]string{"bench", "join", "--url", "ws://127.0.0.1:1", "--joins", "1", "--timeout", "2s"}, "bench join: connect to ws://127.0.0.1:1", 1},
		{[]string{"bench", "no-such-command"}, `bench: unknown command "no-such-command"`, 2},
		{[]string{"bench", "ingest", "--url", "ws://127.0.0.1:1", "--events", "3", "--authors", "2", "--timeout", "2s"}, "bench ingest: connect to ws://127.0.0.1:1", 1},
		{[]string{"bench", "req", "--url", "ws://127.0.0.1:1", "--authors-file", filepath.Join(t.TempDir(), "none")}, "--authors-file: open", 1},
		{[]string{"bench", "req", "--url", "ws://127.0.0.1:1", "--authors-file", badAuthors}, `line 2: "not-a-key" is not a hex public key`, 1},
	} {
		_, err := cnctl(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, oneLine(err), tc.want, "%v", tc.args)
		require.NotContains(t, err.Error(), "\n", "%v", tc.args)
		require.Equal(t, tc.code, exitCode(err), "%v", tc.args)
	}
}

// The bench tests are not parallel: urfave/cli's global help flag makes concurrent
// runs of the app race.

func TestBenchAgainstFakeRelay(t *testing.T) {
	relay := loadgentest.New(t, loadgentest.Options{})

	out, err := cnctl(t, "bench", "ingest", "--url", relay.URL, "--events", "60", "--authors", "5", "--connections", "3")
	require.NoError(t, err, out)
	require.Regexp(t, `(?m)^ingest ws://127\.0\.0\.1:\d+: 60 events, 3 connections: \d+ events/s; OK latency p50 \S+ p95 \S+ p99 \S+ max \S+; accepted 60, rejected 0\n`, out)
	require.Contains(t, out, "bench ingest: generated 60 signed events from 5 authors in ")

	out, err = cnctl(t, "bench", "ingest", "--url", relay.URL, "--events", "20", "--authors", "5", "--pipeline", "4", "--warmup", "10", "--json")
	require.NoError(t, err, out)
	var ing struct {
		Accepted       int `json:"accepted"`
		WarmupAccepted int `json:"warmup_accepted"`
		Pipeline       int `json:"pipeline"`
		Latency        struct {
			Count int     `json:"count"`
			P99   float64 `json:"p99_ms"`
		} `json:"ok_latency"`
	}
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&ing), out)
	require.Equal(t, 20, ing.Accepted)
	require.Equal(t, 10, ing.WarmupAccepted)
	require.Equal(t, 4, ing.Pipeline)
	require.Equal(t, 20, ing.Latency.Count)
	require.Positive(t, ing.Latency.P99)
	require.Len(t, relay.Events(), 90)

	out, err = cnctl(t, "bench", "req", "--url", relay.URL, "--requests", "7", "--connections", "2")
	require.NoError(t, err, out)
	require.Contains(t, out, "sampled 90 events (90 ids, 10 authors, 10 p values)") // two runs, 5 new authors each
	for _, shape := range []string{"by-id", "1-author", "100-authors", "#t", "#p"} {
		require.Regexp(t, `\n  `+shape+`\s+\S.*\s7/7\s`, out)
	}

	out, err = cnctl(t, "bench", "req", "--url", relay.URL, "--requests", "3", "--with-topic=false", "--json")
	require.NoError(t, err, out)
	var req struct {
		WithTopic bool `json:"with_topic"`
		Shapes    []struct {
			Name    string `json:"name"`
			Filter  string `json:"filter"`
			EOSE    int    `json:"eose"`
			Latency struct {
				Count int `json:"count"`
			} `json:"latency"`
		} `json:"shapes"`
	}
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&req), out)
	require.False(t, req.WithTopic)
	require.Len(t, req.Shapes, 7)
	for _, s := range req.Shapes {
		require.Equal(t, 3, s.EOSE, s.Name)
		require.Equal(t, 3, s.Latency.Count, s.Name)
		require.Equal(t, s.Name == "#t", strings.Contains(s.Filter, "#t"), s.Name)
	}
}

func TestBenchFailuresExitOne(t *testing.T) {
	empty := loadgentest.New(t, loadgentest.Options{})
	_, err := cnctl(t, "bench", "req", "--url", empty.URL)
	require.Error(t, err)
	require.Contains(t, oneLine(err), `has no events with #t "bench" to take ids, authors and p values from; publish some first`)
	require.Equal(t, 1, exitCode(err))

	silent := loadgentest.New(t, loadgentest.Options{Silent: true})
	out, err := cnctl(t, "bench", "ingest", "--url", silent.URL, "--events", "10", "--authors", "2",
		"--connections", "2", "--timeout", "300ms")
	require.Error(t, err)
	require.Equal(t, "bench ingest: 10 of 10 events got no OK (not_sent 8, timeout 2)", oneLine(err))
	require.Equal(t, 1, exitCode(err))
	require.Contains(t, out, "accepted 0, rejected 0\n  errors: not_sent 8, timeout 2\n")

	strict := loadgentest.New(t, loadgentest.Options{RequireTopic: true})
	_, err = cnctl(t, "bench", "ingest", "--url", strict.URL, "--events", "10", "--authors", "2")
	require.NoError(t, err)
	_, err = cnctl(t, "bench", "req", "--url", strict.URL, "--requests", "2", "--with-topic=false")
	require.Error(t, err)
	require.Equal(t, 1, exitCode(err))
	require.Contains(t, oneLine(err), "bench req: 12 of 14 requests got no EOSE (by-id: closed: restricted 2; 1-author: closed: restricted 2;")

	rejecting := loadgentest.New(t, loadgentest.Options{Reject: "blocked: not allowed"})
	out, err = cnctl(t, "bench", "ingest", "--url", rejecting.URL, "--events", "5", "--authors", "2")
	require.NoError(t, err, "rejections are answers, not failures")
	require.Contains(t, out, "accepted 0, rejected 5\n  rejected: blocked 5\n    first blocked: blocked: not allowed\n")
}
