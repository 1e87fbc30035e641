package moderation

import "github.com/prometheus/client_golang/prometheus"

// metrics of the moderator, counted once a batch has committed.
type metrics struct {
	labels      *prometheus.CounterVec // by rule
	hides       *prometheus.CounterVec // by source: rule, operator
	reports     *prometheus.CounterVec // by NIP-56 type
	ruleSeconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		labels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_moderation_labels_total", Help: "NIP-32 labels the node emitted, by rule.",
		}, []string{"rule"}),
		hides: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_moderation_hides_total", Help: "Events hidden by the moderator, by source.",
		}, []string{"source"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_moderation_reports_total", Help: "NIP-56 reports tallied, by report type.",
		}, []string{"type"}),
		ruleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cn_moderation_rule_evaluation_seconds", Help: "Time spent evaluating content rules, per batch.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.labels, m.hides, m.reports, m.ruleSeconds)
	}
	return m
}
