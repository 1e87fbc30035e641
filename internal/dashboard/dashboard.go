// Package dashboard is the operator's live status page (`cnctl dashboard`): it
// samples the outbox, the consumers and the relays' /metrics every second,
// keeps the last 15 minutes in memory (a restart starts empty), and serves the
// page, a JSON snapshot and a Server-Sent Events stream of snapshots.
//
// It only reads: the database (cnctl status's queries) and the relays' metrics.
package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Config configures a Dashboard.
type Config struct {
	Pool *pgxpool.Pool
	// RelayMetrics are the /metrics URLs of the relays to show.
	RelayMetrics []string
	// Interval between samples (default 1s); Window of history kept (default 15m).
	Interval time.Duration
	Window   time.Duration
	Logger   *slog.Logger
	Client   *http.Client
	// Listen is the address the page says it is served on.
	Listen string
	// Heartbeat is the event streams' comment interval (HeartbeatInterval).
	Heartbeat time.Duration
	// Console, when set, is served under /console/ behind the page's own
	// protection (internal/console).
	Console http.Handler
}

// Snapshot is one sample: `cnctl status --json`'s head_seq and consumers, with
// rates, plus the outbox and the relays. ID increases by one per sample.
type Snapshot struct {
	ID        int64            `json:"id"`
	At        time.Time        `json:"at"`
	HeadSeq   int64            `json:"head_seq"`
	Consumers []ConsumerStatus `json:"consumers"`
	Outbox    OutboxStatus     `json:"outbox"`
	Relays    []RelayStatus    `json:"relays"`
	Error     string           `json:"error,omitempty"` // the database could not be read
	// AdminVersion (cn_admin.state) and GroupsChangedAt (the newest change of
	// cn_relay.groups, unix microseconds) are change markers: with HeadSeq, a
	// page knows that a list it shows may have changed. Read only when the
	// console is served (Config.Console); 0 otherwise.
	AdminVersion    int64 `json:"admin_version"`
	GroupsChangedAt int64 `json:"groups_changed_at"`
	// MembersMark moves when NIP-43 join requests or invites change (a
	// pending request or a revoked invite stores no event, so HeadSeq
	// does not move); console only, "" otherwise.
	MembersMark string `json:"members_mark,omitempty"`
}

// ConsumerStatus is a consumer's row of `cnctl status --json` plus what the
// dashboard derives.
type ConsumerStatus struct {
	Consumer     string     `json:"consumer"`
	LastSeq      int64      `json:"last_seq"`
	Backlog      int64      `json:"backlog"`
	LagSeconds   float64    `json:"lag_seconds"`
	Owner        *string    `json:"owner"`
	DeadLetters  int64      `json:"dead_letters"`
	Rate         float64    `json:"rate"` // rows applied per second since the previous sample
	Halted       bool       `json:"halted"`
	HaltedReason string     `json:"halted_reason,omitempty"`
	LeaseExpires *time.Time `json:"lease_expires_at"`
}

// OutboxStatus is the outbox's part of a snapshot.
type OutboxStatus struct {
	HeadSeq          int64       `json:"head_seq"`
	AppendRate       float64     `json:"append_rate"`       // rows per second
	RetentionHorizon int64       `json:"retention_horizon"` // pruned through this seq
	Partitions       []Partition `json:"partitions"`
}

// Partition is one outbox partition.
type Partition struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

// RelayStatus is what one relay's /metrics says.
type RelayStatus struct {
	URL         string             `json:"url"`
	Up          bool               `json:"up"`
	Error       string             `json:"error,omitempty"`
	Connections float64            `json:"connections"`
	Events      map[string]float64 `json:"events"`       // per second, by result (accepted, invalid, ...)
	ReqsPerSec  float64            `json:"reqs_per_sec"` // REQ and COUNT messages
	// Pools are the relay's read pools (package replica: the primary first,
	// then its read replicas by name); empty for a relay without
	// --read-database-url, whose reads all go to the primary unmeasured.
	Pools  []PoolStatus       `json:"pools"`
	totals map[string]float64 // counters at this sample, for the next rates
}

// PoolStatus is one read pool of a relay: the primary or a replica.
type PoolStatus struct {
	Pool         string  `json:"pool"`           // "primary" or a replica's host:port
	ReadsPerSec  float64 `json:"reads_per_sec"`  // REQ and COUNT reads it answered or failed
	ErrorsPerSec float64 `json:"errors_per_sec"` // reads it failed
	// MeanReadSeconds is the mean read duration since the previous sample;
	// absent without reads in between.
	MeanReadSeconds *float64 `json:"mean_read_seconds,omitempty"`
	// Usable and LagSeconds are a replica's (absent for the primary, and the
	// lag before a replica's first successful check).
	Usable     *bool    `json:"usable,omitempty"`
	LagSeconds *float64 `json:"lag_seconds,omitempty"`

	reads, errors, seconds float64 // totals at this sample
}

// Dashboard samples and serves. Its methods are safe for concurrent use.
type Dashboard struct {
	cfg Config

	mu      sync.Mutex
	history []Snapshot // oldest first, at most Window/Interval
	nextID  int64
	subs    map[chan Snapshot]struct{}
}

// New returns a Dashboard; call Run to sample.
func New(cfg Config) *Dashboard {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 15 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 2 * time.Second}
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = HeartbeatInterval
	}
	return &Dashboard{cfg: cfg, nextID: 1, subs: map[chan Snapshot]struct{}{}}
}

// Run samples every Interval until ctx is done.
func (d *Dashboard) Run(ctx context.Context) error {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		d.publish(d.sample(ctx))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sample reads everything once.
func (d *Dashboard) sample(ctx context.Context) Snapshot {
	now := time.Now()
	s := Snapshot{At: now, Consumers: []ConsumerStatus{}, Relays: []RelayStatus{}, Outbox: OutboxStatus{Partitions: []Partition{}}}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := d.readDatabase(sctx, &s); err != nil {
		s.Error = err.Error()
	}
	for _, u := range d.cfg.RelayMetrics {
		s.Relays = append(s.Relays, d.scrape(sctx, u))
	}
	d.mu.Lock()
	prev := d.last()
	d.mu.Unlock()
	if prev != nil {
		dt := now.Sub(prev.At).Seconds()
		if dt > 0 {
			if s.Error == "" && prev.Error == "" {
				s.Outbox.AppendRate = max(float64(s.HeadSeq-prev.HeadSeq), 0) / dt
			}
			for i := range s.Consumers {
				for _, pc := range prev.Consumers {
					if pc.Consumer == s.Consumers[i].Consumer && s.Consumers[i].LastSeq >= pc.LastSeq {
						s.Consumers[i].Rate = float64(s.Consumers[i].LastSeq-pc.LastSeq) / dt
					}
				}
			}
			for i := range s.Relays {
				for _, pr := range prev.Relays {
					if pr.URL == s.Relays[i].URL && s.Relays[i].Up && pr.Up {
						rates(&s.Relays[i], pr, dt)
					}
				}
			}
		}
	}
	return s
}

func (d *Dashboard) readDatabase(ctx context.Context, s *Snapshot) error {
	st, err := consumer.ReadStatus(ctx, d.cfg.Pool)
	if err != nil {
		return err
	}
	s.HeadSeq, s.Outbox.HeadSeq = st.HeadSeq, st.HeadSeq
	for _, c := range st.Consumers {
		s.Consumers = append(s.Consumers, ConsumerStatus{Consumer: c.Consumer, LastSeq: c.LastSeq, Backlog: c.Backlog,
			LagSeconds: c.LagSeconds, Owner: c.Owner, DeadLetters: c.DeadLetters, Halted: c.Halted,
			HaltedReason: c.HaltedReason, LeaseExpires: c.LeaseExpires})
	}
	if d.cfg.Console != nil {
		// Each marker is read through its table's owner (three reads: the
		// page only compares them with the last ones it saw).
		var err error
		if s.AdminVersion, err = relayadmin.Version(ctx, d.cfg.Pool); err != nil {
			return err
		}
		if s.GroupsChangedAt, err = groups.ChangedAt(ctx, d.cfg.Pool); err != nil {
			return err
		}
		if s.MembersMark, err = membership.ChangeMark(ctx, d.cfg.Pool); err != nil {
			return err
		}
	}
	if err := d.cfg.Pool.QueryRow(ctx, "SELECT pruned_through FROM cn_relay.outbox_retention").Scan(&s.Outbox.RetentionHorizon); err != nil {
		return fmt.Errorf("read retention horizon: %w", err)
	}
	parts, err := outbox.Partitions(ctx, d.cfg.Pool)
	if err != nil {
		return err
	}
	for _, p := range parts {
		s.Outbox.Partitions = append(s.Outbox.Partitions, Partition{Name: p.Name, From: p.Lo, To: p.Hi})
	}
	return nil
}

// scrape reads one relay's /metrics.
func (d *Dashboard) scrape(ctx context.Context, url string) RelayStatus {
	r := RelayStatus{URL: url, Events: map[string]float64{}, totals: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.Error = resp.Status
		return r
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		r.Error = "metrics: " + err.Error()
		return r
	}
	r.Up = true
	value := func(m *dto.Metric) float64 {
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		}
		return 0
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.Label {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	if f := families["cn_relay_connections"]; f != nil && len(f.Metric) > 0 {
		r.Connections = value(f.Metric[0])
	}
	if f := families["cn_relay_events_total"]; f != nil {
		for _, m := range f.Metric {
			r.totals["events:"+label(m, "result")] = value(m)
		}
	}
	if f := families["cn_relay_messages_total"]; f != nil {
		for _, m := range f.Metric {
			if t := label(m, "type"); t == "REQ" || t == "COUNT" {
				r.totals["reqs"] += value(m)
			}
		}
	}
	r.Pools = pools(families, value, label)
	return r
}

// pools reads package replica's per-pool series: reads and their durations
// (cn_relay_read_seconds, summed over ops), failures, and each replica's
// usable flag and lag.
func pools(families map[string]*dto.MetricFamily, value func(*dto.Metric) float64, label func(*dto.Metric, string) string) []PoolStatus {
	byName := map[string]*PoolStatus{}
	pool := func(name string) *PoolStatus {
		p := byName[name]
		if p == nil {
			p = &PoolStatus{Pool: name}
			byName[name] = p
		}
		return p
	}
	if f := families["cn_relay_read_seconds"]; f != nil {
		for _, m := range f.Metric {
			if h := m.GetHistogram(); h != nil {
				p := pool(label(m, "pool"))
				p.reads += float64(h.GetSampleCount())
				p.seconds += h.GetSampleSum()
			}
		}
	}
	if f := families["cn_relay_read_errors_total"]; f != nil {
		for _, m := range f.Metric {
			pool(label(m, "pool")).errors += value(m)
		}
	}
	if f := families["cn_relay_replica_usable"]; f != nil {
		for _, m := range f.Metric {
			usable := value(m) == 1
			pool(label(m, "replica")).Usable = &usable
		}
	}
	if f := families["cn_relay_replica_lag_seconds"]; f != nil {
		for _, m := range f.Metric {
			lag := value(m)
			pool(label(m, "replica")).LagSeconds = &lag
		}
	}
	out := make([]PoolStatus, 0, len(byName))
	for _, p := range byName {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Pool == "primary") != (out[j].Pool == "primary") {
			return out[i].Pool == "primary"
		}
		return out[i].Pool < out[j].Pool
	})
	return out
}

// rates turns counter totals into per-second rates against the previous sample.
func rates(r *RelayStatus, prev RelayStatus, dt float64) {
	for k, v := range r.totals {
		pv, ok := prev.totals[k]
		if !ok {
			continue // a new series: a rate from the next sample on
		}
		if v < pv {
			pv = 0 // the relay restarted
		}
		rate := (v - pv) / dt
		if k == "reqs" {
			r.ReqsPerSec = rate
		} else if len(k) > 7 {
			r.Events[k[7:]] = rate
		}
	}
	for i := range r.Pools {
		p := &r.Pools[i]
		for _, pp := range prev.Pools {
			if pp.Pool != p.Pool {
				continue
			}
			if p.reads < pp.reads || p.errors < pp.errors {
				pp = PoolStatus{} // the relay restarted
			}
			p.ReadsPerSec = (p.reads - pp.reads) / dt
			p.ErrorsPerSec = (p.errors - pp.errors) / dt
			if n := p.reads - pp.reads; n > 0 {
				mean := (p.seconds - pp.seconds) / n
				p.MeanReadSeconds = &mean
			}
		}
	}
}

// publish appends s to the history and hands it to every subscriber.
func (d *Dashboard) publish(s Snapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.ID = d.nextID
	d.nextID++
	d.history = append(d.history, s)
	if keep := int(d.cfg.Window / d.cfg.Interval); len(d.history) > keep {
		d.history = append(d.history[:0], d.history[len(d.history)-keep:]...)
	}
	for ch := range d.subs {
		select {
		case ch <- s:
		default: // a slow reader misses a sample; it reconnects with Last-Event-ID if it must
		}
	}
}

func (d *Dashboard) last() *Snapshot {
	if len(d.history) == 0 {
		return nil
	}
	return &d.history[len(d.history)-1]
}

// Latest returns the newest snapshot (false before the first sample).
func (d *Dashboard) Latest() (Snapshot, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.last(); l != nil {
		return *l, true
	}
	return Snapshot{}, false
}

// History returns the kept snapshots with an id above after, oldest first.
func (d *Dashboard) History(after int64) []Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.history), func(i int) bool { return d.history[i].ID > after })
	return append([]Snapshot(nil), d.history[i:]...)
}

// subscribe registers a channel for new snapshots; cancel unregisters it.
func (d *Dashboard) subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, 16)
	d.mu.Lock()
	d.subs[ch] = struct{}{}
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		delete(d.subs, ch)
		d.mu.Unlock()
	}
}
