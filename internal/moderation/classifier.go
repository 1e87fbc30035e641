package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// ClassifierConfig configures the optional content classifier: an HTTP service
// that takes POST {"content": "...", "kind": N} and answers
// {"labels":[{"label":"...","confidence":0.0-1.0}]} (a local model server behind
// a thin adapter, or a hosted moderation API).
type ClassifierConfig struct {
	URL string // empty: no classifier; rules with a classifier condition never fire
	// MaxContentBytes: only the content is sent, cut to this many bytes (at a
	// character boundary). Default 4096.
	MaxContentBytes int
	// Timeout bounds one request (default 2s); BatchDeadline bounds the
	// classification of one moderation batch (default 5s): what has no answer
	// by then is recorded as unclassified, so the consumer never stalls longer.
	Timeout       time.Duration
	BatchDeadline time.Duration
	// Concurrency is how many requests run at once (default 4).
	Concurrency int
	// DailyBudget is how many requests may be sent per UTC day (0: unlimited).
	// Counted in cn_moderation.classifier_usage, shared by every moderator.
	DailyBudget int
	// BreakerFailures consecutive failures open the circuit breaker (default
	// 5); it stays open BreakerCooldown (default 30s), then lets one request try.
	BreakerFailures int
	BreakerCooldown time.Duration
	Client          *http.Client
}

// The classifier's defaults (a zero field of ClassifierConfig takes them).
const (
	DefaultClassifierMaxBytes      = 4096
	DefaultClassifierTimeout       = 2 * time.Second
	DefaultClassifierBatchDeadline = 5 * time.Second
	DefaultClassifierConcurrency   = 4
)

func (c *ClassifierConfig) setDefaults() {
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = DefaultClassifierMaxBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultClassifierTimeout
	}
	if c.BatchDeadline == 0 {
		c.BatchDeadline = DefaultClassifierBatchDeadline
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultClassifierConcurrency
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = 5
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = 30 * time.Second
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
}

// Classification is the recorded outcome for one event.
type Classification struct {
	Classified bool
	Labels     []LabelScore
	Reason     string // why unclassified: timeout, error, breaker open, over budget
}

// LabelScore is one label the classifier gave, with its confidence.
type LabelScore struct {
	Label      string  `json:"label"`
	Confidence float64 `json:"confidence"`
}

// Unclassified reasons.
const (
	reasonTimeout     = "timeout"
	reasonError       = "error"
	reasonBreakerOpen = "breaker open"
	reasonOverBudget  = "over budget"
)

// classifier calls the service with a concurrency limit, a budget and a
// circuit breaker. It is safe for concurrent use; setLimits swaps its limits
// for the batches that start after it (a batch keeps the ones it started with).
type classifier struct {
	cfg  atomic.Pointer[ClassifierConfig]
	pool *pgxpool.Pool
	log  *slog.Logger

	mu        sync.Mutex
	failures  int       // consecutive
	openUntil time.Time // breaker open until then

	requests    *prometheus.CounterVec // by result
	unclassfied *prometheus.CounterVec // by reason
	budgetLeft  prometheus.Gauge
	breakerOpen prometheus.Gauge
}

func newClassifier(cfg ClassifierConfig, pool *pgxpool.Pool, reg prometheus.Registerer, log *slog.Logger) *classifier {
	cfg.setDefaults()
	c := &classifier{pool: pool, log: log,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_moderation_classifier_requests_total", Help: "Classifier requests, by result (ok, error, timeout).",
		}, []string{"result"}),
		unclassfied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_moderation_classifier_unclassified_total", Help: "Events recorded as unclassified, by reason.",
		}, []string{"reason"}),
		budgetLeft: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_moderation_classifier_budget_remaining", Help: "Classifier requests left today (-1: no budget).",
		}),
		breakerOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_moderation_classifier_breaker_open", Help: "1 while the classifier's circuit breaker is open.",
		}),
	}
	c.cfg.Store(&cfg)
	c.budgetLeft.Set(-1)
	if reg != nil {
		reg.MustRegister(c.requests, c.unclassfied, c.budgetLeft, c.breakerOpen)
	}
	return c
}

// classifyItem is one event to classify.
type classifyItem struct {
	id      string
	kind    int
	content string
}

// classify asks for every item, within the batch deadline, and returns one
// outcome per item: answers, or unclassified with the reason.
func (c *classifier) classify(ctx context.Context, items []classifyItem) map[string]Classification {
	cfg := c.cfg.Load()
	out := make(map[string]Classification, len(items))
	granted, err := c.reserve(ctx, cfg, len(items))
	if err != nil {
		c.log.Warn("classifier budget unavailable; not classifying", "err", err)
		granted = 0
	}
	for _, it := range items[granted:] {
		out[it.id] = Classification{Reason: reasonOverBudget}
	}
	items = items[:granted]
	dctx, cancel := context.WithTimeout(ctx, cfg.BatchDeadline)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, cfg.Concurrency)
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := Classification{Reason: reasonTimeout}
			select {
			case sem <- struct{}{}:
				res = c.one(dctx, cfg, it)
				<-sem
			case <-dctx.Done():
			}
			mu.Lock()
			out[it.id] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, res := range out {
		if !res.Classified {
			c.unclassfied.WithLabelValues(res.Reason).Inc()
		}
	}
	return out
}

// one classifies one item, through the breaker.
func (c *classifier) one(ctx context.Context, cfg *ClassifierConfig, it classifyItem) Classification {
	c.mu.Lock()
	if time.Now().Before(c.openUntil) {
		c.mu.Unlock()
		return Classification{Reason: reasonBreakerOpen}
	}
	c.mu.Unlock()
	labels, err := c.request(ctx, cfg, it)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.failures = 0
		c.breakerOpen.Set(0)
		c.requests.WithLabelValues("ok").Inc()
		return Classification{Classified: true, Labels: labels}
	case errors.Is(err, context.DeadlineExceeded):
		c.requests.WithLabelValues("timeout").Inc()
	default:
		c.requests.WithLabelValues("error").Inc()
	}
	c.failures++
	if c.failures >= cfg.BreakerFailures {
		c.openUntil = time.Now().Add(cfg.BreakerCooldown)
		c.breakerOpen.Set(1)
		c.log.Warn("classifier failing; circuit breaker open", "failures", c.failures, "for", cfg.BreakerCooldown, "err", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Classification{Reason: reasonTimeout}
	}
	return Classification{Reason: reasonError}
}

// request sends one item: its kind and its content, cut to MaxContentBytes.
func (c *classifier) request(ctx context.Context, cfg *ClassifierConfig, it classifyItem) ([]LabelScore, error) {
	content := it.content
	if len(content) > cfg.MaxContentBytes {
		content = content[:cfg.MaxContentBytes]
		for !utf8.ValidString(content) {
			content = content[:len(content)-1]
		}
	}
	body, _ := json.Marshal(map[string]any{"content": content, "kind": it.kind})
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cfg.Client.Do(req)
	if err != nil {
		if rctx.Err() != nil {
			return nil, context.DeadlineExceeded
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, fmt.Errorf("classifier answered %s", resp.Status)
	}
	var answer struct {
		Labels []LabelScore `json:"labels"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		return nil, fmt.Errorf("classifier answer: %w", err)
	}
	return answer.Labels, nil
}

// reserve takes up to n requests from today's budget and returns how many.
func (c *classifier) reserve(ctx context.Context, cfg *ClassifierConfig, n int) (int, error) {
	if cfg.DailyBudget <= 0 || n == 0 {
		return n, nil
	}
	day := time.Now().UTC().Format("2006-01-02")
	if _, err := c.pool.Exec(ctx, `INSERT INTO cn_moderation.classifier_usage (day, requests) VALUES ($1, 0)
		ON CONFLICT DO NOTHING`, day); err != nil {
		return 0, err
	}
	var granted, used int
	err := c.pool.QueryRow(ctx, `
		WITH cur AS (SELECT requests FROM cn_moderation.classifier_usage WHERE day = $1 FOR UPDATE)
		UPDATE cn_moderation.classifier_usage u SET requests = GREATEST(cur.requests, LEAST($2, cur.requests + $3))
		FROM cur WHERE u.day = $1
		RETURNING u.requests - cur.requests, u.requests`, day, cfg.DailyBudget, n).Scan(&granted, &used)
	if err != nil {
		return 0, err
	}
	// A budget below what today used (lowered by a reload or by another
	// moderator's flag) grants nothing and keeps the count.
	c.budgetLeft.Set(float64(max(0, cfg.DailyBudget-used)))
	return granted, nil
}

// setLimits installs l's timeout, batch deadline, concurrency, daily budget
// and content cut (a zero takes its default; the budget's zero is unlimited)
// for the batches that start from now on; the URL, the breaker and the client
// stay.
func (c *classifier) setLimits(l ClassifierConfig) {
	next := *c.cfg.Load()
	next.Timeout, next.BatchDeadline, next.Concurrency = l.Timeout, l.BatchDeadline, l.Concurrency
	next.DailyBudget, next.MaxContentBytes = l.DailyBudget, l.MaxContentBytes
	next.setDefaults()
	if next.DailyBudget <= 0 {
		c.budgetLeft.Set(-1)
	}
	c.cfg.Store(&next)
}
