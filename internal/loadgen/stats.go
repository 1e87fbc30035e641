package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// Summary describes a set of latency samples. Percentiles are exact (nearest
// rank over the sorted samples).
type Summary struct {
	Count int
	Min   time.Duration
	Mean  time.Duration
	P50   time.Duration
	P95   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// Summarize sorts samples in place and summarizes them.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Summary{
		Count: len(samples),
		Min:   samples[0],
		Mean:  sum / time.Duration(len(samples)),
		P50:   Percentile(samples, 50),
		P95:   Percentile(samples, 95),
		P99:   Percentile(samples, 99),
		Max:   samples[len(samples)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted
// samples: the smallest sample that at least p% of the samples do not exceed.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted)) / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// MarshalJSON writes the durations as milliseconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Count int     `json:"count"`
		Min   float64 `json:"min_ms"`
		Mean  float64 `json:"mean_ms"`
		P50   float64 `json:"p50_ms"`
		P95   float64 `json:"p95_ms"`
		P99   float64 `json:"p99_ms"`
		Max   float64 `json:"max_ms"`
	}{s.Count, ms(s.Min), ms(s.Mean), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max)})
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// FormatLatency prints a latency for people: 0.42ms, 6.0ms, 40ms, 1.25s.
func FormatLatency(d time.Duration) string {
	m := float64(d) / float64(time.Millisecond)
	switch {
	case m >= 1000:
		return fmt.Sprintf("%.2fs", m/1000)
	case m >= 100:
		return fmt.Sprintf("%.0fms", m)
	case m >= 1:
		return fmt.Sprintf("%.1fms", m)
	default:
		return fmt.Sprintf("%.2fms", m)
	}
}

// ReasonPrefix is the machine-readable prefix of a relay's OK or CLOSED message
// ("blocked: spam" -> "blocked"), "(none)" for an empty message and "(other)"
// for one without a prefix.
func ReasonPrefix(msg string) string {
	if i := strings.IndexByte(msg, ':'); i > 0 {
		if p := strings.TrimSpace(msg[:i]); p != "" && !strings.ContainsAny(p, " \t\n") {
			return p
		}
	}
	if strings.TrimSpace(msg) == "" {
		return "(none)"
	}
	return "(other)"
}

// Error kinds counted in reports' Errors maps.
const (
	ErrTimeout     = "timeout"       // no answer within the timeout (the connection is then dropped)
	ErrConnection  = "connection"    // the connection failed (read or write error, closed by the relay)
	ErrNotSent     = "not_sent"      // never sent: every connection had failed or the run was interrupted
	ErrInterrupted = "interrupted"   // in flight when the run was interrupted
	ErrUnexpected  = "unexpected_ok" // an OK for an id that was not in flight on that connection
	ErrProtocol    = "protocol"      // a message that is not a JSON array with a string label
	ErrClosed      = "closed"        // prefix of "closed: <reason prefix>" (REQ answered with CLOSED)
)

// Counts counts occurrences by key and keeps the first example message of each.
// In JSON it is {"key": {"count": n, "first": "message"}, ...}.
type Counts struct {
	N        map[string]int
	Examples map[string]string
}

// Add counts n occurrences of key, remembering example if it is the first one.
func (c *Counts) Add(key string, n int, example string) {
	if n <= 0 {
		return
	}
	if c.N == nil {
		c.N = map[string]int{}
	}
	c.N[key] += n
	if example != "" {
		if c.Examples == nil {
			c.Examples = map[string]string{}
		}
		if _, ok := c.Examples[key]; !ok {
			c.Examples[key] = example
		}
	}
}

// Merge adds o's counts to c.
func (c *Counts) Merge(o Counts) {
	for k, n := range o.N {
		c.Add(k, n, o.Examples[k])
	}
}

// Total is the sum of all counts.
func (c Counts) Total() int {
	t := 0
	for _, n := range c.N {
		t += n
	}
	return t
}

// String lists the counts by key: "blocked 3, invalid 1".
func (c Counts) String() string {
	parts := make([]string, 0, len(c.N))
	for _, k := range slices.Sorted(maps.Keys(c.N)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.N[k]))
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON writes {"key": {"count": n, "first": "message"}, ...} ({} if empty).
func (c Counts) MarshalJSON() ([]byte, error) {
	type entry struct {
		Count int    `json:"count"`
		First string `json:"first,omitempty"`
	}
	m := make(map[string]entry, len(c.N))
	for k, n := range c.N {
		m[k] = entry{n, c.Examples[k]}
	}
	return json.Marshal(m)
}

// failureKind tells a timeout from another connection failure.
func failureKind(err error) string {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ErrTimeout
	}
	return ErrConnection
}

// failed counts the requests that got no answer: timeouts, connection
// failures, never sent, interrupted.
func failed(c Counts) int {
	return c.N[ErrTimeout] + c.N[ErrConnection] + c.N[ErrNotSent] + c.N[ErrInterrupted]
}
