package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// model is a classifier for the reload test: every request is held until
// another one is in flight or 100ms passed (so requests allowed at once
// overlap), content with "slow" is answered after a second; it records the
// most requests it saw at once and the length of each content it got.
type model struct {
	mu       sync.Mutex
	inflight int
	most     int
	lengths  map[string]int // by the content's first word
	pair     chan struct{}  // closed when two requests are in flight
	paired   bool
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content string `json:"content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.inflight++
	m.most = max(m.most, m.inflight)
	m.lengths[strings.Fields(req.Content + " x")[0]] = len(req.Content)
	if m.inflight >= 2 && !m.paired {
		close(m.pair)
		m.paired = true
	}
	pair := m.pair
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inflight--
		m.mu.Unlock()
	}()
	wait := 100 * time.Millisecond
	if strings.Contains(req.Content, "slow") {
		wait = time.Second
	}
	hold := time.After(wait)
	for done := false; !done; {
		select {
		case <-hold:
			done = true
		case <-pair: // another request is in flight too
			if !strings.Contains(req.Content, "slow") {
				done = true
			}
			pair = nil
		case <-r.Context().Done():
			return
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"labels": []map[string]any{{"label": "spam", "confidence": 0.9}}})
}

func (m *model) resetMost() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.most
	m.most = 0
	m.pair, m.paired = make(chan struct{}), false
	return n
}

func (m *model) length(word string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lengths[word]
}

// TestReloadEveryLiveSetting changes each of the moderator's live settings
// (the classifier's limits) in a running process, as SIGHUP does, and sees
// the next batch use it: --classifier-concurrency lets requests overlap,
// --classifier-max-bytes cuts the content sent, --classifier-batch-deadline
// and --classifier-timeout record a slow answer as unclassified (timeout),
// --classifier-daily-budget leaves the requests past it unclassified (over
// budget).
func TestReloadEveryLiveSetting(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	key, _ := daemontest.KeyFiles(t)
	rules, err := moderation.ParseFile([]byte("rules:\n  - name: model-spam\n    kinds: [1]\n    classifier: {label: spam, min_confidence: 0.8}\n    label: spam\n    action: label\n"))
	require.NoError(t, err)
	_, err = moderation.ApplyRules(ctx, db.Pool, rules, "test", true)
	require.NoError(t, err)
	m := &model{lengths: map[string]int{}, pair: make(chan struct{})}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	st := testkit.NewStore(db.Pool)
	sk := nostr.GeneratePrivateKey()
	post := func(contents ...string) []string {
		t.Helper()
		var evs []*nostr.Event
		for _, c := range contents {
			ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: c}
			require.NoError(t, ev.Sign(sk))
			evs = append(evs, ev)
		}
		res, err := st.Ingest(ctx, evs) // one transaction: one batch
		require.NoError(t, err)
		var ids []string
		for i, v := range res {
			require.True(t, v.OK, v.Message)
			ids = append(ids, evs[i].ID)
		}
		return ids
	}

	addr := testkit.FreeAddr(t)
	metrics := "http://" + addr + "/metrics"
	file := filepath.Join(t.TempDir(), "node.yaml")
	settings := map[string]string{"listen": addr, "classifier-url": srv.URL, "classifier-timeout": "5s", "classifier-batch-deadline": "5s",
		"classifier-concurrency": "1", "classifier-daily-budget": "0", "classifier-max-bytes": "4096"}
	write := func() {
		var sb strings.Builder
		sb.WriteString("moderator:\n")
		for _, name := range []string{"listen", "classifier-url", "classifier-timeout", "classifier-batch-deadline",
			"classifier-concurrency", "classifier-daily-budget", "classifier-max-bytes"} {
			fmt.Fprintf(&sb, "  %s: %s\n", name, settings[name])
		}
		require.NoError(t, os.WriteFile(file, []byte(sb.String()), 0o600))
	}
	write()
	args := []string{"moderator", "--config", file, "--database-url", db.URL, "--node-key-file", key}
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
			t.Error("moderator did not stop")
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
	reload := func(changes map[string]string) {
		t.Helper()
		for name, value := range changes {
			settings[name] = value
		}
		write()
		requests <- struct{}{}
		gen++
		eventually(fmt.Sprint("generation ", gen), func() bool { return metric("cn_config_generation") == gen })
		line := ""
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"msg":"moderator: configuration reloaded"`) {
				line = l
			}
		}
		for name := range changes {
			require.Contains(t, line, name)
		}
		require.Contains(t, line, `"needs_restart":""`)
	}
	// outcomes waits until every id has its classification and returns them
	// ("classified", or the unclassified reason).
	outcomes := func(ids []string) []string {
		t.Helper()
		var out []string
		eventually("classifications", func() bool {
			out = out[:0]
			for _, id := range ids {
				var outcome, reason string
				if err := db.Pool.QueryRow(ctx, `SELECT outcome, reason FROM cn_moderation.classifications WHERE event_id = $1`, id).Scan(&outcome, &reason); err != nil {
					return false
				}
				if outcome == "unclassified" {
					outcome = reason
				}
				out = append(out, outcome)
			}
			return true
		})
		return out
	}
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	daemontest.WaitLease(t, db.Pool, moderation.ConsumerName)

	// classifier-concurrency: one request at a time, then four.
	long := strings.Repeat("long ", 20)
	require.Equal(t, []string{"classified", "classified", "classified"}, outcomes(post("a1 "+long, "a2", "a3")))
	require.Equal(t, 1, m.resetMost())
	require.Greater(t, m.length("a1"), 10)
	reload(map[string]string{"classifier-concurrency": "4"})
	require.Equal(t, []string{"classified", "classified", "classified"}, outcomes(post("b1", "b2", "b3")))
	require.Greater(t, m.resetMost(), 1, "requests at once")

	// classifier-max-bytes: the content is cut.
	reload(map[string]string{"classifier-max-bytes": "10"})
	require.Equal(t, []string{"classified"}, outcomes(post("c1 "+long)))
	require.Equal(t, 10, m.length("c1"))

	// classifier-batch-deadline: a slow answer (1s) is late for a 200ms batch.
	require.Equal(t, []string{"classified"}, outcomes(post("d1 slow")))
	reload(map[string]string{"classifier-batch-deadline": "200ms"})
	require.Equal(t, []string{"timeout"}, outcomes(post("d2 slow")))

	// classifier-timeout: the same with the batch's bound back at 5s.
	reload(map[string]string{"classifier-batch-deadline": "5s", "classifier-timeout": "200ms"})
	require.Equal(t, []string{"timeout"}, outcomes(post("e1 slow")))

	// classifier-daily-budget: one more request today, the rest wait for tomorrow.
	reload(map[string]string{"classifier-daily-budget": "1"})
	// (Requests go in event id order: which of the three is classified is not fixed.)
	budget := outcomes(post("f1", "f2", "f3"))
	slices.Sort(budget)
	require.Equal(t, []string{"classified", "over budget", "over budget"}, budget)
	// A budget lowered below what today used: nothing more today.
	reload(map[string]string{"classifier-daily-budget": "3"})
	require.Equal(t, []string{"classified", "classified"}, outcomes(post("g1", "g2")))
	reload(map[string]string{"classifier-daily-budget": "2"})
	require.Equal(t, []string{"over budget"}, outcomes(post("h1")))
	require.Equal(t, 0, metric("cn_moderation_classifier_budget_remaining"))
	var used int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT requests FROM cn_moderation.classifier_usage`).Scan(&used))
	require.Equal(t, 3, used, "today's count is kept")
	require.NotContains(t, logs.String(), "panic")
	require.Equal(t, 0, metric("cn_config_reload_failures_total"))
}
