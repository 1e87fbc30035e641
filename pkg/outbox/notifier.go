package outbox

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultNotifyInterval is the shortest time between two NOTIFYs from one Notifier.
const DefaultNotifyInterval = 3 * time.Millisecond

// Notifier announces committed outbox rows with NOTIFY cn_relay_outbox '<max_seq>'.
//
// Notify only records the highest seq and wakes Run; Run sends at most one NOTIFY per
// interval, always outside any write transaction (a NOTIFY inside one takes a
// cluster-wide lock through commit). Callers must call Notify only after the commit
// of the rows they announce. A failed NOTIFY is logged and retried at the next tick
// with the then highest seq; consumers do not depend on it (they also poll).
type Notifier struct {
	pool     *pgxpool.Pool
	interval time.Duration
	logger   *slog.Logger
	sent     prometheus.Counter
	failed   prometheus.Counter

	mu      sync.Mutex
	pending int64 // highest seq handed to Notify
	done    int64 // highest seq announced
	wake    chan struct{}
}

// NewNotifier returns a Notifier that sends on pool. interval <= 0 means
// DefaultNotifyInterval. reg may be nil.
func NewNotifier(pool *pgxpool.Pool, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) *Notifier {
	if interval <= 0 {
		interval = DefaultNotifyInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{
		pool:     pool,
		interval: interval,
		logger:   logger,
		wake:     make(chan struct{}, 1),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_outbox_notifications_total",
			Help: "NOTIFY cn_relay_outbox messages sent by this process.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_outbox_notification_failures_total",
			Help: "NOTIFY cn_relay_outbox attempts that failed (consumers then rely on polling).",
		}),
	}
	if reg != nil {
		reg.MustRegister(n.sent, n.failed)
	}
	return n
}

// Notify asks for seq to be announced. It never blocks and never talks to the
// database; call it after the commit of the transaction that appended seq.
func (n *Notifier) Notify(seq int64) {
	n.mu.Lock()
	if seq > n.pending {
		n.pending = seq
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run sends coalesced notifications until ctx is done. Run at most once per Notifier.
func (n *Notifier) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.wake:
		}
		n.mu.Lock()
		seq, due := n.pending, n.pending > n.done
		n.mu.Unlock()
		if due {
			if _, err := n.pool.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, strconv.FormatInt(seq, 10)); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				n.failed.Inc()
				n.logger.Warn("outbox notify failed", "seq", seq, "err", err)
				n.Notify(seq) // try again after the interval
			} else {
				n.sent.Inc()
				n.mu.Lock()
				if seq > n.done {
					n.done = seq
				}
				n.mu.Unlock()
			}
		}
		t := time.NewTimer(n.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
