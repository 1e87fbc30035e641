package bridge

import "github.com/prometheus/client_golang/prometheus"

// metrics of the bridge (the consumer's own cn_consumer_* series carry
// consumer="bridge-v1": lag, backlog, active, halted).
type metrics struct {
	published      prometheus.Counter
	duplicates     prometheus.Counter
	skipped        prometheus.Counter
	publishErrors  prometheus.Counter
	chainRejects   prometheus.Counter
	lastPublished  prometheus.Gauge
	chainBroken    prometheus.Gauge
	tooLarge       prometheus.Gauge
	publishSeconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		published:     prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_bridge_published_total", Help: "Outbox rows the NATS server acknowledged (duplicates included)."}),
		duplicates:    prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_bridge_duplicates_total", Help: "Publishes the server acknowledged as duplicates (resent inside the duplicate window)."}),
		skipped:       prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_bridge_skipped_total", Help: "Rows not published because the stream already held them (offset behind the stream after a crash)."}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_bridge_publish_errors_total", Help: "Failed publish attempts of a batch (each retry counts)."}),
		chainRejects:  prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_bridge_chain_rejects_total", Help: "Batches the server rejected because the stream's last id was not the expected one (a stale or second writer)."}),
		lastPublished: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_bridge_last_published_seq", Help: "Outbox seq of the stream's last message, as the bridge knows it."}),
		chainBroken:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_bridge_chain_broken", Help: "1 while the stream ends before rows the bridge's offset counts as published."}),
		tooLarge:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_bridge_too_large_seq", Help: "Outbox seq of a row whose message the NATS server refuses as too large (max_payload, max_msg_size), 0 when none: the bridge halts on it."}),
		publishSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cn_bridge_publish_seconds", Help: "Time to publish one batch and receive every acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	if reg != nil {
		reg.MustRegister(m.published, m.duplicates, m.skipped, m.publishErrors, m.chainRejects, m.lastPublished, m.chainBroken, m.tooLarge, m.publishSeconds)
	}
	return m
}
