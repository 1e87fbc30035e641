package groups

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the collector (NewCollector).
const (
	MetricGroups  = "cn_relay_groups"
	MetricMembers = "cn_relay_group_members"
	MetricPending = "cn_relay_group_pending_joins"
)

var (
	descGroups = prometheus.NewDesc(MetricGroups,
		"NIP-29 groups this node hosts, by flags (open, closed, restricted, closed_restricted, deleted): node-wide, the same on every relay process (read cn_relay.groups at scrape time, cached for 10 s).",
		[]string{"flags"}, nil)
	descMembers = prometheus.NewDesc(MetricMembers,
		"Members of the NIP-29 groups that exist (not deleted), summed over groups: node-wide.", nil, nil)
	descPending = prometheus.NewDesc(MetricPending,
		"Join requests (kind 9021) waiting for a group admin (closed groups, no valid invite code), in groups that exist: node-wide.", nil, nil)
	// allFlags are reported even when no group has them, so a dashboard's
	// series exist from the start.
	allFlags = []string{FlagsOpen, FlagsClosed, FlagsRestricted, FlagsClosedRestricted, FlagsDeleted}
)

// Collector reports CountLive as gauges. A scrape reads the database at most
// every CacheFor (10 s unset), with a 5 s timeout; when the read fails it
// reports nothing (and logs), never a stale or made-up figure.
type Collector struct {
	Q        Querier
	Logger   *slog.Logger
	CacheFor time.Duration

	mu   sync.Mutex
	at   time.Time
	last Counts
	ok   bool
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroups
	ch <- descMembers
	ch <- descPending
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counts, ok := c.counts()
	if !ok {
		return
	}
	for _, f := range allFlags {
		ch <- prometheus.MustNewConstMetric(descGroups, prometheus.GaugeValue, float64(counts.Groups[f]), f)
	}
	ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(counts.Members))
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(counts.Pending))
}

func (c *Collector) counts() (Counts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cacheFor := c.CacheFor
	if cacheFor <= 0 {
		cacheFor = 10 * time.Second
	}
	if c.ok && time.Since(c.at) < cacheFor {
		return c.last, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := CountLive(ctx, c.Q)
	if err != nil {
		c.ok = false
		if c.Logger != nil {
			c.Logger.Warn("group metrics: counting the groups failed", "err", err)
		}
		return Counts{}, false
	}
	c.last, c.at, c.ok = counts, time.Now(), true
	return counts, true
}
