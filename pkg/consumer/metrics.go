package consumer

import "github.com/prometheus/client_golang/prometheus"

// metrics of one consumer; every series carries the constant label consumer=<name>.
type metrics struct {
	lastSeq       prometheus.Gauge
	backlog       prometheus.Gauge
	lagSeconds    prometheus.Gauge
	active        prometheus.Gauge
	halted        prometheus.Gauge
	processed     prometheus.Counter
	failed        prometheus.Counter
	parked        prometheus.Counter
	redelivered   prometheus.Counter
	batchDuration prometheus.Histogram
	wakeups       *prometheus.CounterVec
}

// Wake-up sources, the values of cn_consumer_wakeups_total{source}.
const (
	wakeNotify    = "notify"
	wakePoll      = "poll"
	wakeReconnect = "reconnect"
)

func newMetrics(name string, reg prometheus.Registerer) *metrics {
	labels := prometheus.Labels{"consumer": name}
	g := func(n, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: help, ConstLabels: labels})
	}
	c := func(n, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: n, Help: help, ConstLabels: labels})
	}
	m := &metrics{
		lastSeq:    g("cn_consumer_last_seq", "Last outbox seq this consumer committed."),
		backlog:    g("cn_consumer_backlog", "Outbox head seq minus the consumer's last_seq."),
		lagSeconds: g("cn_consumer_lag_seconds", "Age of the oldest outbox row the consumer has not consumed (0 when caught up)."),
		active:     g("cn_consumer_active", "1 while this instance holds the consumer's lease, 0 as a standby."),
		halted:     g("cn_consumer_halted", "1 once the halt policy stopped the consumer on a failing row."),
		processed:  c("cn_consumer_processed_total", "Outbox rows applied and committed."),
		failed:     c("cn_consumer_failed_total", "Handler attempts that failed (each retry counts)."),
		parked:     c("cn_consumer_parked_total", "Rows moved to the dead-letter table."),
		redelivered: c("cn_consumer_redelivered_total",
			"Stream messages skipped because they were delivered or applied already (stream consumers only)."),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cn_consumer_batch_duration_seconds", Help: "Time to apply and commit one batch.",
			ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_consumer_wakeups_total", Help: "Times the consumer woke to read the outbox, by source.",
			ConstLabels: labels,
		}, []string{"source"}),
	}
	for _, s := range []string{wakeNotify, wakePoll, wakeReconnect} {
		m.wakeups.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.lastSeq, m.backlog, m.lagSeconds, m.active, m.halted,
			m.processed, m.failed, m.parked, m.redelivered, m.batchDuration, m.wakeups)
	}
	return m
}
