package trust

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// DefaultBatchSize is the trust consumer's outbox rows per graph transaction.
const DefaultBatchSize = 1000

// SeedsFor chooses the seeds of the ranks: the given seeds, else the relay's
// admins, else none (a uniform teleport, plain PageRank).
func SeedsFor(seeds, admins []string) Seeds {
	switch {
	case len(seeds) > 0:
		return Seeds{Pubkeys: seeds, Source: "flag"}
	case len(admins) > 0:
		return Seeds{Pubkeys: admins, Source: "admins"}
	default:
		return Seeds{Source: "uniform"}
	}
}

// Scheduler is the trust daemon's clock: it recomputes the ranks at start (once
// the graph has applied the outbox as it was then), every RecomputeInterval and
// when cnctl asks (cn_trust.requests), and publishes the changed assertions
// every PublishInterval. One process at a time schedules (an advisory lock held
// on a dedicated connection); another waits as a standby. Set the fields, then
// call Run once; SetPolicy changes the seeds, the intervals and the cutoff of a
// running Scheduler.
type Scheduler struct {
	Pool      *pgxpool.Pool
	Publisher *Publisher
	Seeds     Seeds
	Params    Params
	// NodeName is shown in the provider's profile.
	NodeName          string
	RecomputeInterval time.Duration
	PublishInterval   time.Duration
	// AsOf gives the as_of time of a scheduled run; time.Now when nil.
	AsOf func() int64
	// Registerer takes the cn_trust_* run and publication metrics; nil: none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger // nil: discard

	mu   sync.Mutex
	next *Policy // set by SetPolicy, taken by Run
}

// Policy is what a configuration reload changes in a running Scheduler.
type Policy struct {
	Seeds             Seeds
	RecomputeInterval time.Duration
	PublishInterval   time.Duration
	MinRank           int // the Publisher's cutoff
}

// SetPolicy installs p in the running Scheduler at its next tick (within a
// second, or PublishInterval when shorter): new seeds recompute the ranks at
// once; a new recompute interval counts from the last computation; a new
// cutoff marks dirty the subjects whose rank lies between the old cutoff and
// the new one and publishes at once, so the assertions above the new cutoff
// appear and those below it are withdrawn (NIP-09). A standby (not holding
// the lock) keeps p for when it leads.
func (s *Scheduler) SetPolicy(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = &p
}

func (s *Scheduler) takePolicy() *Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.next
	s.next = nil
	return p
}

// markCutoff marks dirty the subjects whose rank is in [min(a,b), max(a,b)):
// those on the other side of the cutoff when it moves from a to b.
func markCutoff(ctx context.Context, pool *pgxpool.Pool, a, b int) error {
	_, err := pool.Exec(ctx, `UPDATE cn_trust.subjects s SET dirty = true
		FROM cn_trust.pubkeys k JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
		WHERE k.id = s.id AND NOT s.dirty AND sc.rank >= $1 AND sc.rank < $2`, min(a, b), max(a, b))
	if err != nil {
		return fmt.Errorf("trust: mark subjects across the new cutoff: %w", err)
	}
	return nil
}

// Run schedules until ctx is done, and returns ctx's error then, or an error
// of the lock or of the provider's profile.
func (s *Scheduler) Run(ctx context.Context) error {
	pool, pub, logger, asOf := s.Pool, s.Publisher, s.Logger, s.AsOf
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if asOf == nil {
		asOf = func() int64 { return time.Now().Unix() }
	}
	reg := s.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := newMetrics(reg)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, schema.TrustPublisherLock).Scan(&ok); err != nil {
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
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, schema.TrustPublisherLock)
	}()
	if err := pub.PublishProvider(ctx, s.NodeName); err != nil {
		return err
	}
	// The first run waits until the graph has caught up with the outbox as it
	// was at start (ranks at start then reflect what is stored, not an empty
	// graph that the next run, an interval later, would correct).
	startHead, err := outbox.Head(ctx, pool)
	if err != nil {
		return fmt.Errorf("trust: read the outbox head: %w", err)
	}
	caughtUp := false
	nextRun := time.Now()
	tick := time.NewTicker(min(s.PublishInterval, time.Second))
	defer tick.Stop()
	lastPublish, lastRun := time.Time{}, time.Time{}
	for {
		if p := s.takePolicy(); p != nil {
			if !slices.Equal(p.Seeds.Pubkeys, s.Seeds.Pubkeys) || p.Seeds.Source != s.Seeds.Source {
				s.Seeds = p.Seeds
				nextRun = time.Now()
			}
			if p.RecomputeInterval > 0 && p.RecomputeInterval != s.RecomputeInterval {
				s.RecomputeInterval = p.RecomputeInterval
				if !lastRun.IsZero() {
					nextRun = lastRun.Add(p.RecomputeInterval)
				}
			}
			if p.PublishInterval > 0 && p.PublishInterval != s.PublishInterval {
				s.PublishInterval = p.PublishInterval
				tick.Reset(min(s.PublishInterval, time.Second))
			}
			if old := cmp.Or(pub.MinRank, DefaultAssertMinRank); p.MinRank > 0 && p.MinRank != old {
				if err := markCutoff(ctx, pool, old, p.MinRank); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					logger.Error("trust: new assertion cutoff not applied; retrying", "err", err)
					s.mu.Lock()
					if s.next == nil {
						s.next = p
					}
					s.mu.Unlock()
				} else {
					pub.MinRank = p.MinRank
					lastPublish = time.Time{}
				}
			}
		}
		var req int64
		var reqAsOf *int64
		err := pool.QueryRow(ctx, `SELECT id, as_of FROM cn_trust.requests WHERE run_id IS NULL ORDER BY id DESC LIMIT 1`).Scan(&req, &reqAsOf)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logger.Error("trust: read recompute requests", "err", err)
		}
		if !caughtUp {
			last, err := consumer.Offset(ctx, pool, ConsumerName)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			caughtUp = err == nil && last >= startHead
		}
		if req > 0 || (caughtUp && !time.Now().Before(nextRun)) {
			at := asOf()
			if reqAsOf != nil {
				at = *reqAsOf
			}
			run, err := Recompute(ctx, pool, s.Seeds, s.Params, at, req)
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
			lastRun = time.Now()
			nextRun = lastRun.Add(s.RecomputeInterval)
			lastPublish = time.Time{}
		}
		if time.Since(lastPublish) >= s.PublishInterval {
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

// SubjectHandler serves GET /v1/trust/{pubkey}[?explain=1].
func SubjectHandler(pool *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		pk, err := protocol.ParsePubkey(r.PathValue("pubkey"))
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
