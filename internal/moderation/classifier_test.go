package moderation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// fakeClassifier answers like a moderation model: "spam" with confidence 0.95
// for content with "buy", 0.5 for "maybe", nothing otherwise. mode switches it
// to slow (sleeps past any timeout) or failing (500).
type fakeClassifier struct {
	*httptest.Server
	hits atomic.Int64
	mode atomic.Value // "ok", "slow", "fail"
	last atomic.Value // the last request body
}

func newFakeClassifier(t *testing.T) *fakeClassifier {
	f := &fakeClassifier{}
	f.mode.Store("ok")
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		var req struct {
			Content string `json:"content"`
			Kind    int    `json:"kind"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.last.Store(req.Content)
		switch f.mode.Load() {
		case "slow":
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		case "fail":
			http.Error(w, "model crashed", http.StatusInternalServerError)
			return
		}
		var labels []LabelScore
		switch {
		case strings.Contains(req.Content, "buy"):
			labels = []LabelScore{{Label: "spam", Confidence: 0.95}}
		case strings.Contains(req.Content, "maybe"):
			labels = []LabelScore{{Label: "spam", Confidence: 0.5}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"labels": labels})
	}))
	t.Cleanup(f.Close)
	return f
}

const classifierRules = `
rules:
  - name: model-spam
    kinds: [1]
    classifier: {label: spam, min_confidence: 0.8}
    label: spam
    action: label
`

func TestClassifier(t *testing.T) {
	t.Parallel()
	fake := newFakeClassifier(t)
	n := newTestNode(t)
	n.applyRules(t, classifierRules)
	n.wrap = func(consumer.Handler) consumer.Handler {
		n.mod = New(Config{Key: n.key, Store: n.store.Publisher(), Registerer: prometheus.NewRegistry(), Pool: n.db.Pool,
			Classifier: ClassifierConfig{URL: fake.URL, Timeout: 200 * time.Millisecond, BatchDeadline: 400 * time.Millisecond,
				DailyBudget: 6, BreakerFailures: 2, BreakerCooldown: time.Hour, MaxContentBytes: 32}})
		return n.mod
	}
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	a := newAuthor(t)
	publish := func(content string) *nostr.Event {
		ev := a.event(t, 1, nostr.Tags{{"t", "go"}}, content)
		ok, reason := c.Publish(ev)
		require.True(t, ok, reason)
		n.sync(t, ConsumerName)
		return ev
	}
	labelled := func(ev *nostr.Event) bool {
		return len(c.Query(map[string]any{"kinds": []int{1985}, "#e": []string{ev.ID}})) == 1
	}
	outcome := func(ev *nostr.Event) string {
		var o, reason string
		require.NoError(t, n.db.Pool.QueryRow(context.Background(),
			"SELECT outcome, reason FROM cn_moderation.classifications WHERE event_id = $1", ev.ID).Scan(&o, &reason))
		return strings.TrimSpace(o + " " + reason)
	}

	spam := publish("buy cheap followers now, only the content is sent, cut to 32 bytes")
	require.True(t, labelled(spam), "confidence 0.95 >= 0.8")
	require.Equal(t, "buy cheap followers now, only th", fake.last.Load(), "content cut to MaxContentBytes")
	unsure := publish("maybe spam")
	require.False(t, labelled(unsure), "confidence 0.5 < 0.8")
	require.Equal(t, "classified", outcome(unsure))

	// Slow: the consumer does not wait past the batch deadline.
	fake.mode.Store("slow")
	start := time.Now()
	slow := publish("buy buy buy")
	require.Less(t, time.Since(start), 1500*time.Millisecond, "the consumer never stalls on the classifier")
	require.Equal(t, "unclassified timeout", outcome(slow))
	require.False(t, labelled(slow))

	// Failing: after two failures the breaker opens and no request is sent.
	fake.mode.Store("fail")
	require.Equal(t, "unclassified error", outcome(publish("buy 1")))
	hits := fake.hits.Load()
	require.Equal(t, "unclassified breaker open", outcome(publish("buy 2")))
	require.Equal(t, hits, fake.hits.Load(), "an open breaker sends nothing")
	require.Equal(t, 1.0, testutil.ToFloat64(n.mod.classifier.breakerOpen))

	// Over budget: 6 requests a day (spam, unsure, slow, buy 1 and the request
	// that opened the breaker... the breaker spent none), so the next are refused.
	n.mod.classifier.mu.Lock()
	n.mod.classifier.openUntil = time.Time{}
	n.mod.classifier.mu.Unlock()
	fake.mode.Store("ok")
	var used int
	require.NoError(t, n.db.Pool.QueryRow(context.Background(), "SELECT requests FROM cn_moderation.classifier_usage").Scan(&used))
	for range 6 - used {
		publish("hello")
	}
	over := publish("buy at last")
	require.Equal(t, "unclassified over budget", outcome(over))
	require.Equal(t, 0.0, testutil.ToFloat64(n.mod.classifier.budgetLeft))

	// A replay asks nothing and labels the same events (with budget to spare,
	// so that asking again would show).
	_, err := n.db.Pool.Exec(context.Background(), "DELETE FROM cn_moderation.classifier_usage")
	require.NoError(t, err)
	before := dump(t, n)
	hits = fake.hits.Load()
	n.stopMod()
	resetTo(t, n, 0)
	n.startModerator(t)
	n.sync(t, ConsumerName)
	require.Equal(t, hits, fake.hits.Load(), "recorded outcomes are reused")
	require.Equal(t, before, dump(t, n))
}

func TestClassifierRuleValidation(t *testing.T) {
	t.Parallel()
	_, err := ParseFile([]byte("rules:\n  - {name: r, classifier: {label: spam, min_confidence: 1.5}, label: spam, action: label}\n"))
	require.ErrorContains(t, err, "min_confidence")
	_, err = ParseFile([]byte("rules:\n  - {name: r, min_reports: 2, classifier: {label: spam, min_confidence: 0.5}, label: spam, action: hide}\n"))
	require.ErrorContains(t, err, "content rules")
	_, err = ParseFile([]byte("rules:\n  - {name: r, classifier: {label: spam, min_confidence: 0.5, colour: red}, label: spam, action: label}\n"))
	require.ErrorContains(t, err, "colour")
}
