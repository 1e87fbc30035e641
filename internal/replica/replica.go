package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// primaryName is the pool label of the primary in metrics and logs.
const primaryName = "primary"

// Config tunes a Set.
type Config struct {
	// MaxLag is the most a replica may lag (see package doc) and still serve.
	MaxLag time.Duration
	// CheckInterval is the time between health checks; each check of a
	// replica is bounded by it too.
	CheckInterval time.Duration
	Logger        *slog.Logger
	Registerer    prometheus.Registerer
}

// Replica is one read replica's pool and its name in metrics and logs.
type Replica struct {
	Name string
	Pool *pgxpool.Pool
}

// Name returns a replica's label for a database URL: host:port, without
// user or password.
func Name(dbURL string) string {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		if u, uerr := url.Parse(dbURL); uerr == nil {
			return u.Host
		}
		return "replica"
	}
	return fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
}

// Set spreads the relay's reads (relay.Reader: Read and Count) over
// replicas, in front of the primary's reader (see package doc); the
// composition root hands it to the relay as Deps.Reads, beside the primary
// (Deps.Store, whose Primary part the handoff reads). Run keeps the replicas' health current.
type Set struct {
	reader   *store.Reader // the primary's
	primary  *pgxpool.Pool
	replicas []*member
	cfg      Config
	log      *slog.Logger
	next     atomic.Uint64
	noneMu   sync.Mutex
	none     bool // no replica usable at the last check (logged once per change)
	m        metrics
}

type member struct {
	name   string
	pool   *pgxpool.Pool
	reader *store.Reader
	usable atomic.Bool
}

// New returns a Set over the primary's reader and pool and the replicas. A
// replica serves from its first successful check on (Run).
func New(primary *store.Reader, primaryPool *pgxpool.Pool, replicas []Replica, cfg Config) *Set {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{reader: primary, primary: primaryPool, cfg: cfg, log: log, m: newMetrics(cfg.Registerer)}
	s.m.maxLag.Set(cfg.MaxLag.Seconds())
	// Every pool's error counters and both retry reasons exist from the start
	// at 0: a rate over them is 0, not absent, before the first failure (the
	// dashboards' and alerts' per-pool series).
	pools := []string{primaryName}
	for _, r := range replicas {
		s.replicas = append(s.replicas, &member{name: r.Name, pool: r.Pool, reader: store.NewReader(r.Pool)})
		s.m.usable.WithLabelValues(r.Name).Set(0)
		pools = append(pools, r.Name)
	}
	for _, p := range pools {
		for _, op := range []string{"req", "count"} {
			s.m.errors.WithLabelValues(p, op)
		}
	}
	s.m.retries.WithLabelValues("conflict")
	s.m.retries.WithLabelValues("error")
	return s
}

// Close closes the replicas' pools (not the primary's).
func (s *Set) Close() {
	for _, m := range s.replicas {
		m.pool.Close()
	}
}

// Run checks the replicas at once and then every CheckInterval until ctx is
// done.
func (s *Set) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.CheckInterval)
	defer t.Stop()
	for {
		s.checkAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Set) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range s.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lag, err := s.lag(ctx, m)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil:
				s.setUsable(m, false, "replica check failed", "err", err)
			case lag > s.cfg.MaxLag:
				s.m.lag.WithLabelValues(m.name).Set(lag.Seconds())
				s.setUsable(m, false, "replica lags more than --max-replica-lag", "lag", lag.String(), "max", s.cfg.MaxLag.String())
			default:
				s.m.lag.WithLabelValues(m.name).Set(lag.Seconds())
				s.setUsable(m, true, "replica usable", "lag", lag.String())
			}
		}()
	}
	wg.Wait()
	s.noneMu.Lock()
	defer s.noneMu.Unlock()
	if none := s.pick(nil) == nil; none != s.none && len(s.replicas) > 0 {
		s.none = none
		if none {
			s.log.Warn("no read replica usable: the primary serves reads")
		} else {
			s.log.Info("read replicas serve reads again")
		}
	}
}

// lag measures m: the age of the oldest outbox row of the primary that m has
// not replayed yet, 0 when it holds them all.
func (s *Set) lag(ctx context.Context, m *member) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CheckInterval)
	defer cancel()
	head, err := outbox.Head(ctx, m.pool)
	if err != nil {
		return 0, err
	}
	var age float64
	err = s.primary.QueryRow(ctx, "SELECT greatest(extract(epoch FROM now() - ingested_at), 0)::float8 FROM cn_relay.events_outbox WHERE seq > $1 ORDER BY seq LIMIT 1", head).Scan(&age)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("primary outbox after the replica's head %d: %w", head, err)
	}
	return time.Duration(age * float64(time.Second)), nil
}

// setUsable records m's state and logs a change.
func (s *Set) setUsable(m *member, usable bool, msg string, args ...any) {
	v := 0.0
	if usable {
		v = 1
	}
	s.m.usable.WithLabelValues(m.name).Set(v)
	if m.usable.Swap(usable) == usable {
		return
	}
	args = append([]any{"replica", m.name}, args...)
	if usable {
		s.log.Info(msg, args...)
	} else {
		s.log.Warn(msg, args...)
	}
}

// pick returns the next usable replica other than not, round robin; nil when
// there is none.
func (s *Set) pick(not *member) *member {
	n := len(s.replicas)
	start := int(s.next.Add(1))
	for i := range n {
		m := s.replicas[(start+i)%n]
		if m != not && m.usable.Load() {
			return m
		}
	}
	return nil
}

// Read implements relay.Reader: store.Reader's Read on a usable replica
// (Source readpath.Replica) or, with none or after failures (see package
// doc), on the primary (Source readpath.Primary).
func (s *Set) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	res, replica, err := read(s, ctx, "req", func(r *store.Reader) (readpath.Result, error) { return r.Read(ctx, req) })
	if err == nil && replica {
		res.Source = readpath.Replica
	}
	return res, err
}

// Count is store.Reader's Count on a usable replica or the primary, like
// Read. A replica's count is as old as its lag.
func (s *Set) Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error) {
	n, _, err := read(s, ctx, "count", func(r *store.Reader) (int64, error) { return r.Count(ctx, filters, v) })
	return n, err
}

// read runs fn on a usable replica, then on another or the primary after a
// failure, and on the primary after a second one; replica reports where the
// answer came from. Rows a failed attempt read stay counted in the caller's
// row budget (readpath.Request.Take) until the REQ ends: a retried answer may
// stop earlier at the budget, never hold more memory than it allows.
func read[T any](s *Set, ctx context.Context, op string, fn func(*store.Reader) (T, error)) (res T, replica bool, err error) {
	var failed *member
	for attempt := 0; attempt < 2; attempt++ {
		m := s.pick(failed)
		if m == nil {
			break
		}
		res, err = timed(s, m.name, op, func() (T, error) { return fn(m.reader) })
		if err == nil {
			return res, true, nil
		}
		if ctx.Err() != nil {
			return res, false, err
		}
		reason := "error"
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "40001" {
			reason = "conflict" // cancelled by WAL replay; the replica is well
		} else {
			s.setUsable(m, false, "replica read failed", "op", op, "err", err)
		}
		s.m.retries.WithLabelValues(reason).Inc()
		s.log.Debug("replica read failed; retrying elsewhere", "replica", m.name, "op", op, "reason", reason, "err", err)
		failed = m
	}
	res, err = timed(s, primaryName, op, func() (T, error) { return fn(s.reader) })
	return res, false, err
}

// timed runs fn and records its duration and failure under pool.
func timed[T any](s *Set, pool, op string, fn func() (T, error)) (T, error) {
	start := time.Now()
	res, err := fn()
	s.m.seconds.WithLabelValues(pool, op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.errors.WithLabelValues(pool, op).Inc()
	}
	return res, err
}

type metrics struct {
	seconds *prometheus.HistogramVec
	errors  *prometheus.CounterVec
	retries *prometheus.CounterVec
	lag     *prometheus.GaugeVec
	usable  *prometheus.GaugeVec
	maxLag  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cn_relay_read_seconds",
			Help:    "Duration of REQ (op=req) and COUNT (op=count) reads, by pool: primary or a replica (host:port).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"pool", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_read_errors_total",
			Help: "Failed REQ and COUNT reads, by pool and op (a replica's failures are retried elsewhere).",
		}, []string{"pool", "op"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_read_retries_total",
			Help: "Reads retried elsewhere after a replica failed them, by reason: conflict (cancelled by WAL replay, SQLSTATE 40001) or error (the replica is then marked down until a check finds it well).",
		}, []string{"reason"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cn_relay_replica_lag_seconds",
			Help: "Age of the oldest primary outbox row a replica has not replayed (0: it holds them all), at the last check.",
		}, []string{"replica"}),
		usable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cn_relay_replica_usable",
			Help: "1 while a replica serves reads (it answers and lags at most --max-replica-lag), else 0.",
		}, []string{"replica"}),
		maxLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_replica_max_lag_seconds",
			Help: "The relay's --max-replica-lag: a replica lagging more is skipped (alert CNReplicaLagging compares cn_relay_replica_lag_seconds with it).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.seconds, m.errors, m.retries, m.lag, m.usable, m.maxLag)
	}
	return m
}
