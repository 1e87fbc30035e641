package loadgen

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nbd-wtf/go-nostr"
)

// WriteText prints the report for people: one summary line, then a line each
// for warm-up, rejections, messages of accepted events, errors and notices when
// there are any.
func (r *IngestReport) WriteText(w io.Writer) error {
	conns := fmt.Sprintf("%d connections", r.Connections)
	if r.Pipeline > 1 {
		conns += fmt.Sprintf(" x %d in flight", r.Pipeline)
	}
	l := r.Latency
	var b strings.Builder
	fmt.Fprintf(&b, "ingest %s: %d events, %s: %.0f events/s; OK latency p50 %s p95 %s p99 %s max %s; accepted %d, rejected %d\n",
		r.URL, r.Events, conns, r.EventsPerSecond,
		FormatLatency(l.P50), FormatLatency(l.P95), FormatLatency(l.P99), FormatLatency(l.Max), r.Accepted, r.Rejected)
	if r.Warmup > 0 {
		fmt.Fprintf(&b, "  warm-up: %d events before timing, %d accepted\n", r.Warmup, r.WarmupAccepted)
	}
	writeCounts(&b, "rejected", r.RejectedBy)
	writeCounts(&b, "accepted with message", r.AcceptedBy)
	writeCounts(&b, "errors", r.Errors)
	writeCounts(&b, "notices", r.Notices)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText prints the report for people: a header line and a table with a row
// per shape, then the errors and notices of each shape that had any.
func (r *ReqReport) WriteText(w io.Writer) error {
	topic := ""
	if !r.WithTopic {
		topic = " (no #t on other shapes)"
	}
	authors := fmt.Sprintf("%d authors", r.SampleAuthors)
	if r.AuthorsGiven {
		authors += ", authors from file"
	}
	if _, err := fmt.Fprintf(w, "req %s: %d connections, %d requests per shape, topic %q%s; sampled %d events (%d ids, %s, %d p values)\n",
		r.URL, r.Connections, r.Requests, r.Topic, topic, r.Sampled, r.SampleIDs, authors, r.SamplePValues); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SHAPE\tFILTER\tEOSE\tREQ/S\tP50\tP95\tP99\tMAX\tEVENTS/REQ\tERRORS")
	for _, s := range r.Shapes {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "  %s\t-\tskipped: %s\t\t\t\t\t\t\t\n", s.Name, s.Skipped)
			continue
		}
		errs := "-"
		if len(s.Errors.N) > 0 {
			errs = s.Errors.String()
		}
		l := s.Latency
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%.0f\t%s\t%s\t%s\t%s\t%.1f\t%s\n", s.Name, s.Filter, s.EOSE, s.Requests,
			s.RequestsPerSecond, FormatLatency(l.P50), FormatLatency(l.P95), FormatLatency(l.P99), FormatLatency(l.Max),
			s.EventsPerRequest, errs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, s := range r.Shapes {
		writeCounts(&b, s.Name+" errors", s.Errors)
		writeCounts(&b, s.Name+" notices", s.Notices)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCounts writes "  what: a 1, b 2" and the first message of each key.
func writeCounts(b *strings.Builder, what string, c Counts) {
	if len(c.N) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s: %s\n", what, c.String())
	for _, k := range slices.Sorted(maps.Keys(c.Examples)) {
		fmt.Fprintf(b, "    first %s: %s\n", k, strings.Join(strings.Fields(c.Examples[k]), " "))
	}
}

// describe abbreviates a filter: lists of ids, authors and p values become counts.
func describe(f nostr.Filter) string {
	var parts []string
	if len(f.IDs) > 0 {
		parts = append(parts, fmt.Sprintf("ids:[%d]", len(f.IDs)))
	}
	if len(f.Authors) > 0 {
		parts = append(parts, fmt.Sprintf("authors:[%d]", len(f.Authors)))
	}
	if len(f.Kinds) > 0 {
		parts = append(parts, fmt.Sprintf("kinds:%v", strings.ReplaceAll(fmt.Sprint(f.Kinds), " ", ",")))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Tags)) {
		if k == "t" {
			parts = append(parts, fmt.Sprintf("#t:[%s]", strings.Join(f.Tags[k], ",")))
		} else {
			parts = append(parts, fmt.Sprintf("#%s:[%d]", k, len(f.Tags[k])))
		}
	}
	if f.Limit > 0 {
		parts = append(parts, fmt.Sprintf("limit:%d", f.Limit))
	}
	return strings.Join(parts, " ")
}
