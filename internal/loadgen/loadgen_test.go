package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/loadgen/loadgentest"
)

func ingestConfig(url string, events, connections int) IngestConfig {
	return IngestConfig{URL: url, Connections: connections, Events: events, Authors: 20, Topic: "bench",
		Kind: 1, Pipeline: 1, Timeout: 5 * time.Second}
}

func requireSaneLatency(t *testing.T, s Summary, count int) {
	t.Helper()
	require.Equal(t, count, s.Count)
	require.Positive(t, s.Min)
	require.LessOrEqual(t, s.Min, s.P50)
	require.LessOrEqual(t, s.P50, s.P95)
	require.LessOrEqual(t, s.P95, s.P99)
	require.LessOrEqual(t, s.P99, s.Max)
	require.LessOrEqual(t, s.Min, s.Mean)
	require.LessOrEqual(t, s.Mean, s.Max)
	require.Less(t, s.Max, 5*time.Second)
}

func TestGenerate(t *testing.T) {
	now := time.Now()
	set, err := Generate(GenerateConfig{Events: 200, Authors: 5, Topic: "bench", Kind: 1, Now: now})
	require.NoError(t, err)
	require.Len(t, set.Authors, 5)
	require.Len(t, set.Events, 200)
	ids := map[string]bool{}
	for i, ev := range set.Events {
		ok, err := ev.CheckSignature()
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, ev.CheckID())
		require.Equal(t, 1, ev.Kind)
		require.Contains(t, set.Authors, ev.PubKey)
		require.GreaterOrEqual(t, len(ev.Content), 100)
		require.LessOrEqual(t, len(ev.Content), 300)
		require.LessOrEqual(t, int64(ev.CreatedAt), now.Unix())
		require.GreaterOrEqual(t, int64(ev.CreatedAt), now.Unix()-60)
		require.Equal(t, nostr.Tag{"t", "bench"}, ev.Tags[0])
		ps := ev.Tags.GetAll([]string{"p"})
		require.GreaterOrEqual(t, len(ps), 1)
		require.LessOrEqual(t, len(ps), 3)
		require.Len(t, ev.Tags, 1+len(ps))
		seen := map[string]bool{}
		for _, p := range ps {
			require.NotEqual(t, ev.PubKey, p[1], "p tags name other authors")
			require.Contains(t, set.Authors, p[1])
			require.False(t, seen[p[1]])
			seen[p[1]] = true
		}
		require.False(t, ids[ev.ID], "ids differ")
		ids[ev.ID] = true
		var frame []json.RawMessage
		require.NoError(t, json.Unmarshal(set.Messages[i], &frame))
		require.Equal(t, `"EVENT"`, string(frame[0]))
		var sent nostr.Event
		require.NoError(t, json.Unmarshal(frame[1], &sent))
		require.Equal(t, ev.ID, sent.ID)
	}

	_, err = Generate(GenerateConfig{Events: 1, Authors: 1, Topic: "bench", Kind: 1})
	require.ErrorContains(t, err, "authors must be at least 2")
}

func TestIngestCountsEveryOK(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{})
	var logs []string
	cfg := ingestConfig(relay.URL, 300, 4)
	cfg.Logf = func(f string, a ...any) { logs = append(logs, f) }
	rep, err := Ingest(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, 300, rep.Accepted)
	require.Zero(t, rep.Rejected)
	require.Empty(t, rep.Errors.N)
	require.Zero(t, rep.Failed())
	requireSaneLatency(t, rep.Latency, 300)
	require.Positive(t, rep.EventsPerSecond)
	require.InDelta(t, 300/rep.Wall.Seconds(), rep.EventsPerSecond, 0.001)
	require.Len(t, relay.Events(), 300)
	require.NotEmpty(t, logs)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Regexp(t, `^ingest ws://127\.0\.0\.1:\d+: 300 events, 4 connections: \d+ events/s; `+
		`OK latency p50 [\d.]+m?s p95 [\d.]+m?s p99 [\d.]+m?s max [\d.]+m?s; accepted 300, rejected 0\n$`, text.String())

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(js, &back))
	require.EqualValues(t, 300, back["accepted"])
	require.EqualValues(t, 300, back["ok_latency"].(map[string]any)["count"])
	require.Contains(t, back["ok_latency"], "p99_ms")
}

func TestIngestPipelineAndWarmup(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{})
	cfg := ingestConfig(relay.URL, 200, 3)
	cfg.Pipeline, cfg.Warmup = 8, 50
	rep, err := Ingest(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, 200, rep.Accepted)
	require.Equal(t, 50, rep.WarmupAccepted)
	requireSaneLatency(t, rep.Latency, 200)
	require.Empty(t, rep.Errors.N)
	require.Len(t, relay.Events(), 250)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "200 events, 3 connections x 8 in flight:")
	require.Contains(t, text.String(), "warm-up: 50 events before timing, 50 accepted")
}

func TestIngestCountsRejectionsByPrefix(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{Reject: "blocked: x"})
	rep, err := Ingest(context.Background(), ingestConfig(relay.URL, 40, 2))
	require.NoError(t, err)
	require.Zero(t, rep.Accepted)
	require.Zero(t, rep.EventsPerSecond)
	require.Equal(t, 40, rep.Rejected)
	require.Equal(t, map[string]int{"blocked": 40}, rep.RejectedBy.N)
	require.Equal(t, "blocked: x", rep.RejectedBy.Examples["blocked"])
	requireSaneLatency(t, rep.Latency, 40) // a rejection is an answer too
	require.Empty(t, rep.Errors.N)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "accepted 0, rejected 40\n  rejected: blocked 40\n    first blocked: blocked: x\n")
}

func TestIngestSilentRelayTimesOut(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{Silent: true})
	cfg := ingestConfig(relay.URL, 50, 4)
	cfg.Timeout = 300 * time.Millisecond
	start := time.Now()
	rep, err := Ingest(context.Background(), cfg)
	took := time.Since(start)
	require.NoError(t, err)
	require.Less(t, took, 2*time.Second, "the run ends by itself, about one timeout after the start")
	require.Zero(t, rep.Accepted)
	require.Equal(t, map[string]int{ErrTimeout: 4, ErrNotSent: 46}, rep.Errors.N)
	require.Equal(t, 50, rep.Failed())
	require.Zero(t, rep.Latency.Count)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "errors: not_sent 46, timeout 4\n")
	require.Contains(t, text.String(), "first timeout: ")
}

func TestIngestDroppedConnectionIsAnError(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{HangUp: true})
	cfg := ingestConfig(relay.URL, 30, 3)
	cfg.Pipeline = 2
	start := time.Now()
	rep, err := Ingest(context.Background(), cfg)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 3*time.Second, "a dead connection is not waited for")
	require.Zero(t, rep.Accepted)
	require.Equal(t, 30, rep.Failed())
	require.Positive(t, rep.Errors.N[ErrConnection])
	require.Equal(t, 30, rep.Errors.N[ErrConnection]+rep.Errors.N[ErrNotSent])
}

func TestReqReportsEveryShape(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{})
	ing, err := Ingest(context.Background(), ingestConfig(relay.URL, 300, 4))
	require.NoError(t, err)
	require.Equal(t, 300, ing.Accepted)

	rep, err := Req(context.Background(), ReqConfig{URL: relay.URL, Connections: 3, Requests: 40, Topic: "bench",
		WithTopic: true, Kind: 1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 300, rep.Sampled)
	require.Equal(t, 300, rep.SampleIDs)
	require.Equal(t, 20, rep.SampleAuthors)
	require.Equal(t, 20, rep.SamplePValues)
	require.Zero(t, rep.Failed())
	names := []string{}
	for _, s := range rep.Shapes {
		names = append(names, s.Name)
		require.Empty(t, s.Skipped)
		require.Equal(t, 40, s.Requests, s.Name)
		require.Equal(t, 40, s.EOSE, s.Name)
		require.Empty(t, s.Errors.N, s.Name)
		requireSaneLatency(t, s.Latency, 40)
		require.Positive(t, s.RequestsPerSecond, s.Name)
		require.Contains(t, s.Filter, "#t:[bench]", s.Name)
	}
	require.Equal(t, []string{ShapeByID, ShapeAuthor, ShapeAuthors, ShapeTopic, ShapeMentioned, ShapeReplies, ShapeKind}, names)
	byName := map[string]ShapeReport{}
	for _, s := range rep.Shapes {
		byName[s.Name] = s
	}
	require.Equal(t, "ids:[1] #t:[bench]", byName[ShapeByID].Filter)
	require.InDelta(t, 1.0, byName[ShapeByID].EventsPerRequest, 0)
	require.Equal(t, "authors:[1] #t:[bench] limit:20", byName[ShapeAuthor].Filter)
	require.LessOrEqual(t, byName[ShapeAuthor].EventsPerRequest, 20.0)
	require.Equal(t, "authors:[20] kinds:[1] #t:[bench] limit:100", byName[ShapeAuthors].Filter, "only 20 authors exist")
	require.InDelta(t, 100.0, byName[ShapeAuthors].EventsPerRequest, 0)
	require.Equal(t, "#t:[bench] limit:50", byName[ShapeTopic].Filter)
	require.InDelta(t, 50.0, byName[ShapeTopic].EventsPerRequest, 0)
	require.Equal(t, "#p:[1] #t:[bench] limit:50", byName[ShapeMentioned].Filter)
	require.Positive(t, byName[ShapeMentioned].EventsPerRequest)
	require.Equal(t, "#e:[1] #t:[bench] limit:50", byName[ShapeReplies].Filter)
	require.Equal(t, "kinds:[1] #t:[bench] limit:50", byName[ShapeKind].Filter)
	require.InDelta(t, 50.0, byName[ShapeKind].EventsPerRequest, 0)

	// The relay saw the sample REQ and 7 x 40 measured ones, all with #t.
	fs := relay.Filters()
	require.Len(t, fs, 1+7*40)
	require.Equal(t, 500, fs[0].Limit)
	for _, f := range fs {
		require.Equal(t, []string{"bench"}, f.Tags["t"])
	}

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	out := text.String()
	require.Contains(t, out, `3 connections, 40 requests per shape, topic "bench"; sampled 300 events (300 ids, 20 authors, 20 p values)`)
	for _, n := range names {
		require.Regexp(t, `\n  `+n+`\s+\S.*\s40/40\s`, out)
	}
}

func TestReqWithoutTopicAndClosed(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{RequireTopic: true})
	_, err := Ingest(context.Background(), ingestConfig(relay.URL, 60, 2))
	require.NoError(t, err)
	authors := []string{strings.Repeat("ab", 32), strings.Repeat("cd", 32)}

	rep, err := Req(context.Background(), ReqConfig{URL: relay.URL, Connections: 2, Requests: 10, Topic: "bench",
		WithTopic: false, Kind: 1, Authors: authors, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.True(t, rep.AuthorsGiven)
	for _, s := range rep.Shapes {
		if s.Name == ShapeTopic {
			require.Equal(t, 10, s.EOSE, "the #t shape always names the topic")
			require.Empty(t, s.Errors.N)
			continue
		}
		require.NotContains(t, s.Filter, "#t", s.Name)
		require.Zero(t, s.EOSE, s.Name)
		require.Equal(t, map[string]int{"closed: restricted": 10}, s.Errors.N, s.Name)
		require.Equal(t, "restricted: #t is required", s.Errors.Examples["closed: restricted"])
		require.Zero(t, s.Latency.Count)
	}
	require.Equal(t, 60, rep.Failed())
	require.Equal(t, "authors:[2] kinds:[1] limit:100", rep.Shapes[2].Filter, "the authors given are queried")
}

func TestReqNeedsEvents(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{})
	_, err := Req(context.Background(), ReqConfig{URL: relay.URL, Connections: 1, Requests: 1, Topic: "bench",
		WithTopic: true, Kind: 1, Timeout: 5 * time.Second})
	require.ErrorIs(t, err, ErrNoSample)
}

func TestReqSilentRelayTimesOut(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{Silent: true})
	start := time.Now()
	_, err := Req(context.Background(), ReqConfig{URL: relay.URL, Connections: 2, Requests: 5, Topic: "bench",
		WithTopic: true, Kind: 1, Timeout: 300 * time.Millisecond})
	require.ErrorContains(t, err, "no EOSE within 300ms")
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestBadURLFailsFast(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"", "no relay URL"},
		{"http://127.0.0.1:7777", "want ws:// or wss://"},
		{"127.0.0.1:7777", "bad relay URL"},
		{"ws://", "no host"},
		{"ws://127.0.0.1:1", "connect to ws://127.0.0.1:1 (connection 1 of 2)"},
	} {
		start := time.Now()
		_, err := Ingest(context.Background(), ingestConfig(tc.url, 5, 2))
		require.ErrorContains(t, err, tc.want, tc.url)
		_, err = Req(context.Background(), ReqConfig{URL: tc.url, Connections: 2, Requests: 1, Topic: "bench",
			Kind: 1, Timeout: 5 * time.Second})
		require.ErrorContains(t, err, tc.want, tc.url)
		require.Less(t, time.Since(start), 3*time.Second, tc.url)
	}
}

func TestInterruptedRunStops(t *testing.T) {
	t.Parallel()
	relay := loadgentest.New(t, loadgentest.Options{Silent: true})
	cfg := ingestConfig(relay.URL, 20, 2) // 5s timeout: the context ends first
	set, err := Generate(GenerateConfig{Events: 20, Authors: 3, Topic: "bench", Kind: 1})
	require.NoError(t, err)
	cfg.Set = set
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := Ingest(ctx, cfg)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, 20, rep.Failed())
	require.Equal(t, 2, rep.Errors.N[ErrInterrupted])
}

func TestPercentiles(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(samples)
	require.Equal(t, Summary{Count: 100, Min: time.Millisecond, Mean: 50500 * time.Microsecond,
		P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}, s)
	require.Equal(t, Summary{Count: 1, Min: 7, Mean: 7, P50: 7, P95: 7, P99: 7, Max: 7}, Summarize([]time.Duration{7}))
	require.Equal(t, Summary{}, Summarize(nil))
	require.Equal(t, time.Duration(2), Percentile([]time.Duration{1, 2, 3}, 51))
	require.Equal(t, time.Duration(3), Percentile([]time.Duration{1, 2, 3}, 67))

	js, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"count":100,"min_ms":1,"mean_ms":50.5,"p50_ms":50,"p95_ms":95,"p99_ms":99,"max_ms":100}`, string(js))

	require.Equal(t, "0.42ms", FormatLatency(420*time.Microsecond))
	require.Equal(t, "6.0ms", FormatLatency(6*time.Millisecond))
	require.Equal(t, "11.3ms", FormatLatency(11300*time.Microsecond))
	require.Equal(t, "140ms", FormatLatency(140*time.Millisecond))
	require.Equal(t, "1.25s", FormatLatency(1250*time.Millisecond))
}

func TestReasonPrefix(t *testing.T) {
	for msg, want := range map[string]string{
		"blocked: x":                "blocked",
		"rate-limited: slow down":   "rate-limited",
		"duplicate:":                "duplicate",
		"":                          "(none)",
		"  ":                        "(none)",
		"something went wrong":      "(other)",
		"no prefix here: but colon": "(other)",
		": empty":                   "(other)",
	} {
		require.Equal(t, want, ReasonPrefix(msg), msg)
	}
}

func TestCountsJSON(t *testing.T) {
	var c Counts
	js, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(js))
	c.Add("blocked", 2, "blocked: x")
	c.Add("blocked", 1, "blocked: y")
	c.Add(ErrNotSent, 3, "")
	js, err = json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, `{"blocked":{"count":3,"first":"blocked: x"},"not_sent":{"count":3}}`, string(js))
	require.Equal(t, "blocked 3, not_sent 3", c.String())
	require.Equal(t, 6, c.Total())
}
