package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Defaults of the daemon.
const (
	DefaultBatchSize         = 1000
	DefaultRecomputeInterval = 10 * time.Minute
	DefaultPublishInterval   = 2 * time.Second
)

// Options is what one trust process needs.
type Options struct {
	DatabaseURL string
	Listen      string // /healthz, /metrics, /v1/trust/{pubkey}; "" serves nothing
	NodeKey     nodekey.Key
	// ProviderKey signs the assertions; zero: derived from NodeKey (ProviderPurpose).
	ProviderKey       nodekey.Key
	Seeds             []string // hex pubkeys; empty: Admins, or uniform
	Admins            []string
	Params            Params
	RecomputeInterval time.Duration
	PublishInterval   time.Duration
	AssertMinRank     int
	NodeName          string
	BatchSize         int
	Logger            *slog.Logger
	Ready             func(addr string) // called with the HTTP address once it listens
	// AsOf gives the as_of time of a scheduled run; time.Now when nil.
	AsOf func() int64
}

// Run runs the trust-v1 consumer, the recompute schedule and the publisher
// until ctx is done or one fails.
func Run(ctx context.Context, o Options) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if o.NodeKey.PubKey == "" {
		return errors.New("trust: no node key (--node-key-file)")
	}
	provider := o.ProviderKey
	if provider.PubKey == "" {
		var err error
		if provider, err = o.NodeKey.Derive(ProviderPurpose); err != nil {
			return err
		}
	}
	if o.Params == (Params{}) {
		o.Params = DefaultParams()
	}
	seeds := Seeds{Pubkeys: o.Seeds, Source: "flag"}
	switch {
	case len(o.Seeds) > 0:
	case len(o.Admins) > 0:
		seeds = Seeds{Pubkeys: o.Admins, Source: "admins"}
	default:
		seeds = Seeds{Source: "uniform"}
		logger.Warn("trust: no --seeds and no admins: ranks use a uniform teleport (plain PageRank), which a large Sybil ring can game; set --seeds")
	}
	if o.RecomputeInterval == 0 {
		o.RecomputeInterval = DefaultRecomputeInterval
	}
	if o.PublishInterval == 0 {
		o.PublishInterval = DefaultPublishInterval
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	asOf := o.AsOf
	if asOf == nil {
		asOf = func() int64 { return time.Now().Unix() }
	}
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := daemon.Registry()
	m := newMetrics(reg)
	notifier := outbox.NewNotifier(pool, 0, logger, reg)
	graph := &Graph{NodePubKey: o.NodeKey.PubKey}
	c, err := consumer.New(pool, graph, consumer.Config{Name: ConsumerName, BatchSize: o.BatchSize, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	pub := &Publisher{Pool: pool, Store: store.New(pool, nil, protocol.DefaultTopicRules()), Key: provider,
		Notifier: notifier, MinRank: o.AssertMinRank}
	logger.Info("trust starting", "provider_pubkey", provider.PubKey, "seeds", len(seeds.Pubkeys), "seeds_source", seeds.Source,
		"recompute_interval", o.RecomputeInterval.String())
	mux := daemon.Mux(reg, pool)
	mux.Handle("GET /v1/trust/{pubkey}", SubjectHandler(pool))
	return daemon.Process{Name: "trust", Listen: o.Listen, Handler: mux, Path: "/v1/trust/{pubkey}", Logger: logger, Ready: o.Ready}.Run(ctx,
		c.Run, notifier.Run,
		func(ctx context.Context) error { return schedule(ctx, pool, pub, seeds, o, asOf, m, logger) })
}

// publisherLock is the advisory lock that makes one trust process the one that
// recomputes and publishes (a second process waits as a standby).
const publisherLock = 0x74727573 // "trus"

// schedule recomputes at start, every interval and on request, and publishes
// dirty subjects every publish interval.
func schedule(ctx context.Context, pool *pgxpool.Pool, pub *Publisher, seeds Seeds, o Options, asOf func() int64,
	m *metrics, logger *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, publisherLock).Scan(&ok); err != nil {
			return fmt.Errorf("trust publisher lock: %w", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, publisherLock)
	}()
	if err := pub.PublishProvider(ctx, o.NodeName); err != nil {
		return err
	}
	nextRun := time.Now()
	tick := time.NewTicker(min(o.PublishInterval, time.Second))
	defer tick.Stop()
	lastPublish := time.Time{}
	for {
		var req int64
		var reqAsOf *int64
		err := pool.QueryRow(ctx, `SELECT id, as_of FROM cn_trust.requests WHERE run_id IS NULL ORDER BY id DESC LIMIT 1`).Scan(&req, &reqAsOf)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logger.Error("trust: read recompute requests", "err", err)
		}
		if req > 0 || !time.Now().Before(nextRun) {
			at := asOf()
			if reqAsOf != nil {
				at = *reqAsOf
			}
			run, err := Recompute(ctx, pool, seeds, o.Params, at, req)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				logger.Error("trust recompute failed", "err", err)
				m.runFailures.Inc()
			} else {
				logger.Info("trust recomputed", "run", run.ID, "snapshot_seq", run.SnapshotSeq, "subjects", run.Subjects,
					"edges", run.Edges, "iterations", run.Iterations, "changed", run.Changed, "load_ms", run.LoadMS, "compute_ms", run.ComputeMS)
				m.observeRun(run)
			}
			nextRun = time.Now().Add(o.RecomputeInterval)
			lastPublish = time.Time{}
		}
		if time.Since(lastPublish) >= o.PublishInterval {
			n, err := pub.PublishPending(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				logger.Error("trust publish failed", "err", err)
			} else if n.Assertions+n.Deletions > 0 {
				logger.Info("trust published", "assertions", n.Assertions, "deletions", n.Deletions)
			}
			m.assertions.Add(float64(n.Assertions))
			m.deletions.Add(float64(n.Deletions))
			lastPublish = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

type metrics struct {
	runs, runFailures, assertions, deletions prometheus.Counter
	lastRun, lastSeq, loadSec, computeSec    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs:        prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_trust_runs_total", Help: "Full trust computations completed."}),
		runFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_trust_run_failures_total", Help: "Full trust computations that failed."}),
		assertions:  prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_trust_assertions_published_total", Help: "NIP-85 assertions published."}),
		deletions:   prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_trust_assertions_deleted_total", Help: "NIP-85 assertions withdrawn (NIP-09) for subjects below the cutoff."}),
		lastRun:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_trust_last_run_timestamp_seconds", Help: "When the last full computation finished."}),
		lastSeq:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_trust_last_run_snapshot_seq", Help: "The outbox seq the last computation saw."}),
		loadSec:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_trust_last_run_load_seconds", Help: "Graph load time of the last computation."}),
		computeSec:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_trust_last_run_compute_seconds", Help: "Compute time of the last computation."}),
	}
	reg.MustRegister(m.runs, m.runFailures, m.assertions, m.deletions, m.lastRun, m.lastSeq, m.loadSec, m.computeSec)
	return m
}

func (m *metrics) observeRun(r Computation) {
	m.runs.Inc()
	m.lastRun.Set(float64(r.FinishedAt.Unix()))
	m.lastSeq.Set(float64(r.SnapshotSeq))
	m.loadSec.Set(float64(r.LoadMS) / 1000)
	m.computeSec.Set(float64(r.ComputeMS) / 1000)
}

// ParsePubkey accepts a hex pubkey or an npub.
func ParsePubkey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "npub1") {
		_, v, err := nip19.Decode(s)
		if err != nil {
			return "", fmt.Errorf("bad npub: %w", err)
		}
		return v.(string), nil
	}
	if !isHex64(s) {
		return "", errors.New("a pubkey is 64 lowercase hex characters or an npub")
	}
	return s, nil
}

// SubjectHandler serves GET /v1/trust/{pubkey}[?explain=1].
func SubjectHandler(pool *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		pk, err := ParsePubkey(r.PathValue("pubkey"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		var s *Subject
		err = pgx.BeginTxFunc(r.Context(), pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			s, err = Explain(r.Context(), tx, pk, r.URL.Query().Get("explain") != "")
			return err
		})
		switch {
		case errors.Is(err, ErrUnknown):
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error(), "pubkey": pk})
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "trust lookup failed"})
		default:
			_ = json.NewEncoder(w).Encode(s)
		}
	})
}
