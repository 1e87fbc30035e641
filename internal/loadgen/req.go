package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// ErrNoSample means the relay returned no events to take ids, authors and p
// values from.
var ErrNoSample = errors.New("no events to sample")

// ReqConfig describes a REQ run: Requests requests per query shape over
// Connections WebSockets, one REQ in flight per connection.
type ReqConfig struct {
	URL         string
	Connections int
	Requests    int // per shape
	Topic       string
	// WithTopic adds "#t":[Topic] to every shape (the #t shape always has it).
	WithTopic bool
	Kind      int      // the kinds of the 100-authors shape
	Authors   []string // authors to query; if empty, those of the sample
	// SampleLimit is the limit of the REQ that samples ids, authors and p values
	// (default 500).
	SampleLimit int
	Timeout     time.Duration
	Logf        func(format string, args ...any)
}

// Validate checks the configuration.
func (c ReqConfig) Validate() error {
	if err := firstError(CheckURL(c.URL), atLeast("connections", c.Connections, 1), atLeast("requests", c.Requests, 1),
		nonEmpty("topic", c.Topic), validKind(c.Kind), atLeast("sample limit", c.SampleLimit, 0), positive("timeout", c.Timeout)); err != nil {
		return err
	}
	for _, a := range c.Authors {
		if !nostr.IsValid32ByteHex(a) {
			return fmt.Errorf("author %q is not 64 lowercase hex digits", a)
		}
	}
	return nil
}

// ShapeReport is the outcome of one query shape.
type ShapeReport struct {
	Name   string `json:"name"`
	Filter string `json:"filter"` // the first request's filter, abbreviated: ids:[1] authors:[100] kinds:[1] #t:[bench] limit:100
	// Skipped says why the shape did not run (nothing to sample it from).
	Skipped           string        `json:"skipped,omitempty"`
	Requests          int           `json:"requests"`
	EOSE              int           `json:"eose"`
	Wall              time.Duration `json:"-"`
	WallSeconds       float64       `json:"wall_seconds"`
	RequestsPerSecond float64       `json:"requests_per_second"` // EOSEs over the wall time
	Latency           Summary       `json:"latency"`             // REQ sent -> EOSE read
	Events            int           `json:"events"`              // EVENTs received before EOSE
	EventsPerRequest  float64       `json:"events_per_request"`
	Errors            Counts        `json:"errors"`
	Notices           Counts        `json:"notices"`
}

// Failed is the number of requests that got no EOSE.
func (s *ShapeReport) Failed() int { return s.Requests - s.EOSE }

// ReqReport is the outcome of a REQ run.
type ReqReport struct {
	URL           string        `json:"url"`
	Connections   int           `json:"connections"`
	Requests      int           `json:"requests_per_shape"`
	Topic         string        `json:"topic"`
	WithTopic     bool          `json:"with_topic"`
	Kind          int           `json:"kind"`
	Sampled       int           `json:"sampled_events"`
	SampleIDs     int           `json:"sample_ids"`
	SampleAuthors int           `json:"sample_authors"`
	SamplePValues int           `json:"sample_p_values"`
	AuthorsGiven  bool          `json:"authors_given"`
	Shapes        []ShapeReport `json:"shapes"`
}

// Failed is the number of requests of all shapes that got no EOSE.
func (r *ReqReport) Failed() int {
	n := 0
	for i := range r.Shapes {
		n += r.Shapes[i].Failed()
	}
	return n
}

// shape builds the filters of one query shape.
type shape struct {
	name  string
	need  string // what the sample must hold, for the skip reason
	ok    bool
	build func(rng *rand.Rand) nostr.Filter
}

// Shape names, in the order they run.
const (
	ShapeByID      = "by-id"
	ShapeAuthor    = "1-author"
	ShapeAuthors   = "100-authors"
	ShapeTopic     = "#t"
	ShapeMentioned = "#p"
	ShapeReplies   = "#e"
	ShapeKind      = "kinds"
)

// Req connects, samples ids, authors and p values from up to SampleLimit recent
// events on the topic (ErrNoSample if there are none), then runs each query
// shape in turn and reports it. A request that gets no EOSE within the timeout
// is a timeout and its connection is dropped; CLOSED counts as "closed: <prefix>".
func Req(ctx context.Context, cfg ReqConfig) (*ReqReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SampleLimit == 0 {
		cfg.SampleLimit = 500
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	conns, err := dialAll(ctx, cfg.URL, cfg.Connections, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	defer closeOnCancel(ctx, conns)()

	events, err := sample(conns[0], cfg.Topic, cfg.SampleLimit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if len(events) == 0 {
		return nil, ErrNoSample
	}
	ids, authors, pvals := pools(events)
	rep := &ReqReport{URL: cfg.URL, Connections: cfg.Connections, Requests: cfg.Requests, Topic: cfg.Topic,
		WithTopic: cfg.WithTopic, Kind: cfg.Kind, Sampled: len(events),
		SampleIDs: len(ids), SampleAuthors: len(authors), SamplePValues: len(pvals)}
	if len(cfg.Authors) > 0 {
		authors, rep.AuthorsGiven = cfg.Authors, true
	}
	logf("sampled %d events: %d ids, %d authors, %d p values", len(events), len(ids), len(authors), len(pvals))

	topic := func(f nostr.Filter) nostr.Filter {
		if cfg.WithTopic {
			if f.Tags == nil {
				f.Tags = nostr.TagMap{}
			}
			f.Tags["t"] = []string{cfg.Topic}
		}
		return f
	}
	shapes := []shape{
		{ShapeByID, "ids", len(ids) > 0, func(rng *rand.Rand) nostr.Filter {
			return topic(nostr.Filter{IDs: []string{pick(rng, ids)}})
		}},
		{ShapeAuthor, "authors", len(authors) > 0, func(rng *rand.Rand) nostr.Filter {
			return topic(nostr.Filter{Authors: []string{pick(rng, authors)}, Limit: 20})
		}},
		{ShapeAuthors, "authors", len(authors) > 0, func(rng *rand.Rand) nostr.Filter {
			return topic(nostr.Filter{Authors: pickN(rng, authors, 100), Kinds: []int{cfg.Kind}, Limit: 100})
		}},
		{ShapeTopic, "", true, func(*rand.Rand) nostr.Filter {
			return nostr.Filter{Tags: nostr.TagMap{"t": {cfg.Topic}}, Limit: 50}
		}},
		{ShapeMentioned, "p tags", len(pvals) > 0, func(rng *rand.Rand) nostr.Filter {
			return topic(nostr.Filter{Tags: nostr.TagMap{"p": {pick(rng, pvals)}}, Limit: 50})
		}},
		{ShapeReplies, "ids", len(ids) > 0, func(rng *rand.Rand) nostr.Filter {
			return topic(nostr.Filter{Tags: nostr.TagMap{"e": {pick(rng, ids)}}, Limit: 50})
		}},
		{ShapeKind, "", true, func(*rand.Rand) nostr.Filter {
			return topic(nostr.Filter{Kinds: []int{cfg.Kind}, Limit: 50})
		}},
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for si, sh := range shapes {
		sr := ShapeReport{Name: sh.name, Requests: cfg.Requests}
		if !sh.ok {
			sr.Skipped = fmt.Sprintf("the sampled events have no %s", sh.need)
			sr.Requests = 0
			rep.Shapes = append(rep.Shapes, sr)
			continue
		}
		// Build every request before the clock starts.
		subs := make([]string, cfg.Requests)
		msgs := make([][]byte, cfg.Requests)
		for i := range msgs {
			f := sh.build(rng)
			if i == 0 {
				sr.Filter = describe(f)
			}
			subs[i] = fmt.Sprintf("bench-%d-%d", si, i)
			if msgs[i], err = json.Marshal([]any{"REQ", subs[i], f}); err != nil {
				return nil, fmt.Errorf("encode REQ: %w", err)
			}
		}
		start := time.Now()
		t := queryAll(ctx, live(conns), subs, msgs)
		sr.Wall = time.Since(start)
		sr.WallSeconds = sr.Wall.Seconds()
		sr.Latency = Summarize(t.latencies)
		sr.EOSE = len(t.latencies)
		sr.Events = t.events
		sr.Errors, sr.Notices = t.errors, t.notices
		if sr.Wall > 0 {
			sr.RequestsPerSecond = float64(sr.EOSE) / sr.Wall.Seconds()
		}
		if sr.EOSE > 0 {
			sr.EventsPerRequest = float64(sr.Events) / float64(sr.EOSE)
		}
		rep.Shapes = append(rep.Shapes, sr)
		logf("%s: %d of %d requests answered", sh.name, sr.EOSE, sr.Requests)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	return rep, nil
}

// sample asks for up to limit recent events on topic and returns them.
func sample(c *conn, topic string, limit int) ([]*nostr.Event, error) {
	const sub = "bench-sample"
	f := nostr.Filter{Tags: nostr.TagMap{"t": {topic}}, Limit: limit}
	msg, err := json.Marshal([]any{"REQ", sub, f})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(c.timeout)
	if err := c.write(msg); err != nil {
		return nil, fmt.Errorf("sample REQ: %w", err)
	}
	var events []*nostr.Event
	for {
		data, err := c.read(deadline)
		if err != nil {
			if failureKind(err) == ErrTimeout {
				return nil, fmt.Errorf("sample REQ %s: no EOSE within %v", f, c.timeout)
			}
			return nil, fmt.Errorf("sample REQ: %w", err)
		}
		m, err := parseRelayMsg(data)
		if err != nil || m.str(0) != sub {
			continue
		}
		switch m.label {
		case "EVENT":
			if len(m.args) < 2 {
				continue
			}
			ev := &nostr.Event{}
			if err := json.Unmarshal(m.args[1], ev); err != nil {
				return nil, fmt.Errorf("sample REQ: bad event: %w", err)
			}
			events = append(events, ev)
		case "EOSE":
			if err := c.write(closeMsg(sub)); err != nil {
				return nil, fmt.Errorf("sample REQ: %w", err)
			}
			return events, nil
		case "CLOSED":
			return nil, fmt.Errorf("sample REQ %s: relay answered CLOSED %q", f, m.str(1))
		}
	}
}

// pools returns the distinct ids, authors and p tag values of events.
func pools(events []*nostr.Event) (ids, authors, pvals []string) {
	seen := map[string]bool{}
	add := func(dst *[]string, kind, v string) {
		if !seen[kind+v] {
			seen[kind+v] = true
			*dst = append(*dst, v)
		}
	}
	for _, ev := range events {
		add(&ids, "e", ev.ID)
		add(&authors, "a", ev.PubKey)
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "p" && nostr.IsValid32ByteHex(tag[1]) {
				add(&pvals, "p", tag[1])
			}
		}
	}
	return ids, authors, pvals
}

func pick(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

// pickN returns min(n, len(from)) distinct elements of from in random order.
func pickN(rng *rand.Rand, from []string, n int) []string {
	s := append([]string(nil), from...)
	n = min(n, len(s))
	for i := range n {
		j := i + rng.IntN(len(s)-i)
		s[i], s[j] = s[j], s[i]
	}
	return s[:n]
}

func closeMsg(sub string) []byte {
	b, _ := json.Marshal([]string{"CLOSE", sub})
	return b
}

type reqTally struct {
	latencies []time.Duration
	events    int
	errors    Counts
	notices   Counts
}

// queryAll sends every message over conns, one in flight per connection;
// requests no connection could send are not_sent.
func queryAll(ctx context.Context, conns []*conn, subs []string, msgs [][]byte) *reqTally {
	var next atomic.Int64
	tallies := make([]reqTally, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { query(ctx, c, subs, msgs, &next, &tallies[i]) })
	}
	wg.Wait()
	total := &reqTally{}
	for _, t := range tallies {
		total.latencies = append(total.latencies, t.latencies...)
		total.events += t.events
		total.errors.Merge(t.errors)
		total.notices.Merge(t.notices)
	}
	if n := int64(len(msgs)) - next.Load(); n > 0 {
		total.errors.Add(ErrNotSent, int(n), "")
	}
	return total
}

// query is one connection's worker: REQ, read until its EOSE or CLOSED (or the
// timeout), CLOSE, next.
func query(ctx context.Context, c *conn, subs []string, msgs [][]byte, next *atomic.Int64, t *reqTally) {
	fail := func(err error) {
		c.dead = true
		kind := failureKind(err)
		if ctx.Err() != nil {
			kind = ErrInterrupted
		}
		t.errors.Add(kind, 1, err.Error())
	}
	for ctx.Err() == nil {
		i := next.Add(1) - 1
		if i >= int64(len(msgs)) {
			return
		}
		sub := subs[i]
		sent := time.Now()
		if err := c.write(msgs[i]); err != nil {
			fail(err)
			return
		}
		deadline := sent.Add(c.timeout)
		events := 0
	answer:
		for {
			data, err := c.read(deadline)
			now := time.Now()
			if err != nil {
				fail(err)
				return
			}
			m, err := parseRelayMsg(data)
			if err != nil {
				t.errors.Add(ErrProtocol, 1, err.Error())
				continue
			}
			switch m.label {
			case "EVENT":
				if m.str(0) == sub {
					events++
				}
			case "EOSE":
				if m.str(0) != sub {
					continue
				}
				t.latencies = append(t.latencies, now.Sub(sent))
				t.events += events
				if err := c.write(closeMsg(sub)); err != nil {
					c.dead = true // answered, but the connection is gone: the others go on
					return
				}
				break answer
			case "CLOSED":
				if m.str(0) != sub {
					continue
				}
				msg := m.str(1)
				t.errors.Add(ErrClosed+": "+ReasonPrefix(msg), 1, msg)
				break answer
			case "NOTICE":
				msg := m.str(0)
				t.notices.Add(ReasonPrefix(msg), 1, msg)
			}
		}
	}
}
