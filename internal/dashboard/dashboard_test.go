package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fakeRelayMetrics serves a relay's /metrics with counters that grow each scrape.
func fakeRelayMetrics(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		fmt.Fprintf(w, "# TYPE cn_relay_connections gauge\ncn_relay_connections 7\n"+
			"# TYPE cn_relay_events_total counter\ncn_relay_events_total{result=\"accepted\"} %d\ncn_relay_events_total{result=\"invalid\"} %d\n"+
			"# TYPE cn_relay_messages_total counter\ncn_relay_messages_total{type=\"REQ\"} %d\ncn_relay_messages_total{type=\"EVENT\"} 1\n",
			100*i, 3*i, 10*i)
		// Read pools (package replica): the replica serves 10 reads per scrape
		// at 1 ms and fails 1, the primary 2 at 2 ms.
		fmt.Fprintf(w, "# TYPE cn_relay_read_seconds histogram\n"+
			"cn_relay_read_seconds_bucket{op=\"req\",pool=\"primary\",le=\"+Inf\"} %[1]d\ncn_relay_read_seconds_sum{op=\"req\",pool=\"primary\"} %[2]g\ncn_relay_read_seconds_count{op=\"req\",pool=\"primary\"} %[1]d\n"+
			"cn_relay_read_seconds_bucket{op=\"req\",pool=\"r1:5432\",le=\"+Inf\"} %[3]d\ncn_relay_read_seconds_sum{op=\"req\",pool=\"r1:5432\"} %[4]g\ncn_relay_read_seconds_count{op=\"req\",pool=\"r1:5432\"} %[3]d\n"+
			"# TYPE cn_relay_read_errors_total counter\ncn_relay_read_errors_total{op=\"req\",pool=\"primary\"} 0\ncn_relay_read_errors_total{op=\"req\",pool=\"r1:5432\"} %[5]d\n"+
			"# TYPE cn_relay_replica_usable gauge\ncn_relay_replica_usable{replica=\"r1:5432\"} 1\n"+
			"# TYPE cn_relay_replica_lag_seconds gauge\ncn_relay_replica_lag_seconds{replica=\"r1:5432\"} 0.5\n",
			2*i, 0.004*float64(i), 10*i, 0.01*float64(i), i)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func start(t *testing.T, token string) (string, *pgtest.DB) {
	t.Helper()
	db := pgtest.New(t)
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	for _, id := range []string{"a", "b", "c"} {
		_, err := w.Write(context.Background(), func(context.Context, pgx.Tx) ([]outbox.Record, error) {
			return []outbox.Record{{Op: outbox.OpUpsert, EventID: id, TopicID: "t", Kind: 1, CreatedAt: 1}}, nil
		})
		require.NoError(t, err)
	}
	_, err := db.Pool.Exec(context.Background(), "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('index-v1', 1)")
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	d := New(Config{Pool: db.Pool, RelayMetrics: []string{fakeRelayMetrics(t).URL, "http://127.0.0.1:1/metrics"},
		Interval: 50 * time.Millisecond, Heartbeat: 100 * time.Millisecond, Listen: ln.Addr().String()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, d, token) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 10*time.Millisecond)
	return base, db
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
	return resp.StatusCode
}

func TestStatusAPI(t *testing.T) {
	t.Parallel()
	base, db := start(t, "")
	var s map[string]json.RawMessage
	require.Eventually(t, func() bool {
		s = nil
		getJSON(t, base+"/api/status", &s)
		var relays []RelayStatus
		_ = json.Unmarshal(s["relays"], &relays)
		return len(relays) == 2 && relays[0].Events["accepted"] > 0
	}, 5*time.Second, 20*time.Millisecond, "relay rates appear from the second sample on")
	for _, k := range []string{"id", "at", "head_seq", "consumers", "outbox", "relays"} {
		require.Contains(t, s, k)
	}
	var consumers []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(s["consumers"], &consumers))
	require.Len(t, consumers, 1)
	for _, k := range []string{"consumer", "last_seq", "backlog", "lag_seconds", "owner", "dead_letters", "rate", "halted", "lease_expires_at"} {
		require.Contains(t, consumers[0], k, "the cnctl status --json shape plus rates")
	}
	require.JSONEq(t, "3", string(s["head_seq"]))
	require.JSONEq(t, "2", string(consumers[0]["backlog"]))
	var relays []RelayStatus
	require.NoError(t, json.Unmarshal(s["relays"], &relays))
	require.True(t, relays[0].Up)
	require.Equal(t, 7.0, relays[0].Connections)
	require.Greater(t, relays[0].Events["invalid"], 0.0)
	require.Greater(t, relays[0].ReqsPerSec, 0.0)
	require.False(t, relays[1].Up, "an unreachable relay is shown as down")
	// Per pool: the primary first, rates and mean durations between samples,
	// a replica's state and lag.
	require.Len(t, relays[0].Pools, 2)
	primary, r1 := relays[0].Pools[0], relays[0].Pools[1]
	require.Equal(t, "primary", primary.Pool)
	require.Nil(t, primary.Usable)
	require.Nil(t, primary.LagSeconds)
	require.Greater(t, primary.ReadsPerSec, 0.0)
	require.Zero(t, primary.ErrorsPerSec)
	require.NotNil(t, primary.MeanReadSeconds)
	require.InDelta(t, 0.002, *primary.MeanReadSeconds, 1e-9)
	require.Equal(t, "r1:5432", r1.Pool)
	require.InDelta(t, 10*r1.ErrorsPerSec, r1.ReadsPerSec, 1e-6, "1 failure per 10 reads")
	require.Greater(t, r1.ErrorsPerSec, 0.0)
	require.NotNil(t, r1.MeanReadSeconds)
	require.InDelta(t, 0.001, *r1.MeanReadSeconds, 1e-9)
	require.NotNil(t, r1.Usable)
	require.True(t, *r1.Usable)
	require.NotNil(t, r1.LagSeconds)
	require.Equal(t, 0.5, *r1.LagSeconds)
	require.Empty(t, relays[1].Pools, "an unreachable relay has no pools")

	// The consumer moves: its backlog falls and its rate shows.
	_, err := db.Pool.Exec(context.Background(), "UPDATE cn_relay.consumer_offsets SET last_seq = 3")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var st Snapshot
		getJSON(t, base+"/api/status", &st)
		return st.Consumers[0].Backlog == 0
	}, 5*time.Second, 20*time.Millisecond)

	var h []Snapshot
	require.Equal(t, http.StatusOK, getJSON(t, base+"/api/history", &h))
	require.Greater(t, len(h), 2)
	var after []Snapshot
	getJSON(t, fmt.Sprintf("%s/api/history?after=%d", base, h[len(h)-2].ID), &after)
	require.NotEmpty(t, after)
	require.Greater(t, after[0].ID, h[len(h)-2].ID)

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	page := new(strings.Builder)
	_, _ = bufio.NewReader(resp.Body).WriteTo(page)
	require.Contains(t, page.String(), "Read-only view, served on 127.0.0.1:")
	resp2, err := http.Get(base + "/assets/vendor/uplot/uPlot.iife.min.js")
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusOK, resp2.StatusCode, "the chart library is embedded")
}

// readEvents reads SSE messages until n status events arrived; it returns their ids
// and whether a heartbeat comment was seen.
func readEvents(t *testing.T, req *http.Request, n int) ([]int64, bool) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ids []int64
	heartbeat := false
	for sc.Scan() && len(ids) < n {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ": heartbeat"):
			heartbeat = true
		case strings.HasPrefix(line, "id: "):
			var id int64
			fmt.Sscan(strings.TrimPrefix(line, "id: "), &id)
			ids = append(ids, id)
		}
	}
	return ids, heartbeat
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	base, _ := start(t, "")
	req, err := http.NewRequest(http.MethodGet, base+"/api/events", nil)
	require.NoError(t, err)
	ids, _ := readEvents(t, req, 3)
	require.Len(t, ids, 3)
	require.Less(t, ids[0], ids[1])
	require.Less(t, ids[1], ids[2])

	// Reconnecting with Last-Event-ID resends what came after it, in order, once.
	time.Sleep(200 * time.Millisecond) // let samples accumulate while "disconnected"
	req.Header.Set("Last-Event-ID", fmt.Sprint(ids[2]))
	resent, _ := readEvents(t, req, 8)
	require.Equal(t, ids[2]+1, resent[0], "nothing missed")
	for i := 1; i < len(resent); i++ {
		require.Equal(t, resent[i-1]+1, resent[i], "in order, each once")
	}
	req2, err := http.NewRequest(http.MethodGet, base+"/api/events?lastEventId="+fmt.Sprint(resent[len(resent)-1]), nil)
	require.NoError(t, err)
	_, heartbeat := readEvents(t, req2, 4)
	require.True(t, heartbeat, "a comment line keeps the stream open")
}

func TestTokenAndExposure(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckExposure("127.0.0.1:7790", ""))
	require.NoError(t, CheckExposure("[::1]:7790", ""))
	require.NoError(t, CheckExposure("localhost:7790", ""))
	require.ErrorContains(t, CheckExposure("0.0.0.0:7790", ""), "--token-file")
	require.ErrorContains(t, CheckExposure(":7790", ""), "--token-file")
	require.NoError(t, CheckExposure("0.0.0.0:7790", "a-long-enough-token"))

	base, _ := start(t, "a-long-enough-token")
	var e map[string]string
	require.Equal(t, http.StatusUnauthorized, getJSON(t, base+"/api/status", &e))
	require.Contains(t, e["error"], "bearer token")
	var s Snapshot
	require.Equal(t, http.StatusOK, getJSON(t, base+"/api/status?token=a-long-enough-token", &s))
	req, err := http.NewRequest(http.MethodGet, base+"/api/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer a-long-enough-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestHostCheckWithoutToken: without a token, the page answers only requests
// naming its listen address (or localhost on its port) in Host, so a DNS
// rebinding page cannot read it; with a token, Host is not checked.
func TestHostCheckWithoutToken(t *testing.T) {
	t.Parallel()
	base, _ := start(t, "")
	_, port, err := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	get := func(url, host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port} {
		require.Equal(t, http.StatusOK, get(base+"/api/status", host), host)
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1", "127.0.0.1:1" + port} {
		require.Equal(t, http.StatusMisdirectedRequest, get(base+"/api/status", host), host)
		require.Equal(t, http.StatusMisdirectedRequest, get(base+"/", host), host)
	}
	withToken, _ := start(t, "a-long-enough-token")
	require.Equal(t, http.StatusOK, get(withToken+"/api/status?token=a-long-enough-token", "evil.example"))
}

// TestTokenFileMode: a token file others can read is refused, as the node key is.
func TestTokenFileMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(path, []byte("a-long-enough-token\n"), 0o600))
	token, err := ReadToken(path)
	require.NoError(t, err)
	require.Equal(t, "a-long-enough-token", token)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		require.NoError(t, os.Chmod(path, mode))
		_, err := ReadToken(path)
		require.ErrorContains(t, err, "readable by others", "mode %04o", mode)
	}
}
