package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// IngestConfig describes an ingest run: publish Events signed events over
// Connections WebSockets, each keeping up to Pipeline EVENTs in flight.
type IngestConfig struct {
	URL         string
	Connections int
	Events      int // timed events
	Authors     int
	Topic       string
	Kind        int
	// Group, when set, makes a NIP-29 group workload: every event gets an h
	// tag with this id, and the group is created first (createGroup), or used
	// as it is if it exists (it must be open and not restricted).
	Group    string
	Warmup   int // events published (on the same connections) before the clock starts
	Pipeline int // EVENTs in flight per connection; 1 waits for each OK
	Timeout  time.Duration
	// Set, if not nil, is the pre-generated workload (its first Warmup events are
	// the warm-up); else Ingest generates one from Authors, Topic and Kind.
	Set *EventSet
	// Logf, if not nil, receives progress lines.
	Logf func(format string, args ...any)
}

// Validate checks the configuration.
func (c IngestConfig) Validate() error {
	if err := firstError(CheckURL(c.URL), atLeast("connections", c.Connections, 1), atLeast("events", c.Events, 1),
		atLeast("warmup", c.Warmup, 0), atLeast("pipeline", c.Pipeline, 1), positive("timeout", c.Timeout)); err != nil {
		return err
	}
	if c.Set != nil {
		if len(c.Set.Messages) < c.Warmup+c.Events {
			return fmt.Errorf("event set holds %d events, want warmup+events = %d", len(c.Set.Messages), c.Warmup+c.Events)
		}
		return nil
	}
	return GenerateConfig{Events: c.Events + c.Warmup, Authors: c.Authors, Topic: c.Topic, Kind: c.Kind, Group: c.Group}.validate()
}

// IngestReport is the outcome of an ingest run.
type IngestReport struct {
	URL             string        `json:"url"`
	Connections     int           `json:"connections"`
	Pipeline        int           `json:"pipeline"`
	Events          int           `json:"events"`
	Authors         int           `json:"authors"`
	Topic           string        `json:"topic"`
	Kind            int           `json:"kind"`
	Group           string        `json:"group,omitempty"`
	Warmup          int           `json:"warmup"`
	WarmupAccepted  int           `json:"warmup_accepted"`
	Generate        time.Duration `json:"-"`
	GenerateSeconds float64       `json:"generate_seconds"`
	Wall            time.Duration `json:"-"`
	WallSeconds     float64       `json:"wall_seconds"`
	// EventsPerSecond is accepted OKs over the wall time of the timed phase.
	EventsPerSecond float64 `json:"events_per_second"`
	Latency         Summary `json:"ok_latency"` // EVENT sent -> OK read, accepted or not
	Accepted        int     `json:"accepted"`
	// AcceptedBy counts the prefixes of non-empty OK true messages ("duplicate").
	AcceptedBy Counts `json:"accepted_by_prefix"`
	Rejected   int    `json:"rejected"`
	RejectedBy Counts `json:"rejected_by_prefix"` // OK false by reason prefix ("blocked")
	Errors     Counts `json:"errors"`
	Notices    Counts `json:"notices"`
}

// Failed is the number of timed events that got no OK.
func (r *IngestReport) Failed() int { return failed(r.Errors) }

// Ingest generates the workload (unless cfg.Set is given), connects, publishes
// the warm-up events, then the timed ones, and reports. Every EVENT either gets
// its OK within cfg.Timeout or counts as an error; a connection that times out
// or fails is dropped, and the others publish the rest. It returns an error
// only if it could not run (bad config, generation or connection failure) or
// ctx ended (with the partial report).
func Ingest(ctx context.Context, cfg IngestConfig) (*IngestReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	rep := &IngestReport{URL: cfg.URL, Connections: cfg.Connections, Pipeline: cfg.Pipeline, Events: cfg.Events,
		Authors: cfg.Authors, Topic: cfg.Topic, Kind: cfg.Kind, Group: cfg.Group, Warmup: cfg.Warmup}
	set := cfg.Set
	if set == nil {
		start := time.Now()
		var err error
		set, err = Generate(GenerateConfig{Events: cfg.Warmup + cfg.Events, Authors: cfg.Authors, Topic: cfg.Topic, Kind: cfg.Kind, Group: cfg.Group})
		if err != nil {
			return nil, err
		}
		rep.Generate = time.Since(start)
		rep.GenerateSeconds = rep.Generate.Seconds()
		logf("generated %d signed events from %d authors in %v", len(set.Messages), cfg.Authors, rep.Generate.Round(time.Millisecond))
	} else {
		rep.Authors = len(set.Authors)
	}

	conns, err := dialAll(ctx, cfg.URL, cfg.Connections, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	defer closeOnCancel(ctx, conns)()
	if cfg.Group != "" {
		if err := createGroup(conns[0], cfg.Topic, cfg.Group); err != nil {
			return nil, err
		}
		logf("group %s ready", cfg.Group)
	}

	if cfg.Warmup > 0 {
		w := publishAll(ctx, live(conns), set, 0, cfg.Warmup, cfg.Pipeline)
		rep.WarmupAccepted = w.accepted
		logf("warm-up: %d of %d events accepted", w.accepted, cfg.Warmup)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}

	conns = live(conns)
	start := time.Now()
	t := publishAll(ctx, conns, set, cfg.Warmup, cfg.Warmup+cfg.Events, cfg.Pipeline)
	rep.Wall = time.Since(start)
	rep.WallSeconds = rep.Wall.Seconds()
	rep.Latency = Summarize(t.latencies)
	rep.Accepted, rep.AcceptedBy = t.accepted, t.acceptedBy
	rep.Rejected, rep.RejectedBy = t.rejected, t.rejectedBy
	rep.Errors, rep.Notices = t.errors, t.notices
	if rep.Wall > 0 {
		rep.EventsPerSecond = float64(rep.Accepted) / rep.Wall.Seconds()
	}
	return rep, ctx.Err()
}

// ingestTally is what one or all connections saw.
type ingestTally struct {
	latencies  []time.Duration
	accepted   int
	rejected   int
	acceptedBy Counts
	rejectedBy Counts
	errors     Counts
	notices    Counts
}

func (t *ingestTally) merge(o *ingestTally) {
	t.latencies = append(t.latencies, o.latencies...)
	t.accepted += o.accepted
	t.rejected += o.rejected
	t.acceptedBy.Merge(o.acceptedBy)
	t.rejectedBy.Merge(o.rejectedBy)
	t.errors.Merge(o.errors)
	t.notices.Merge(o.notices)
}

// publishAll publishes set.Messages[from:to] over conns, which take the next
// event from a shared counter; events no connection could take are not_sent.
func publishAll(ctx context.Context, conns []*conn, set *EventSet, from, to, pipeline int) *ingestTally {
	var next atomic.Int64
	next.Store(int64(from))
	tallies := make([]ingestTally, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { publish(ctx, c, set, &next, to, pipeline, &tallies[i]) })
	}
	wg.Wait()
	total := &ingestTally{}
	for i := range tallies {
		total.merge(&tallies[i])
	}
	if n := int64(to) - next.Load(); n > 0 {
		total.errors.Add(ErrNotSent, int(n), "")
	}
	return total
}

// publish is one connection's worker: it keeps up to pipeline EVENTs in flight
// and reads answers until the shared counter passes to and nothing is in flight.
// Each read waits at most until the oldest EVENT in flight is timeout old.
func publish(ctx context.Context, c *conn, set *EventSet, next *atomic.Int64, to, pipeline int, t *ingestTally) {
	type flight struct {
		id   string
		sent time.Time
	}
	inFlight := make([]flight, 0, pipeline) // oldest first
	fail := func(err error) {
		c.dead = true
		kind := failureKind(err)
		if ctx.Err() != nil {
			kind = ErrInterrupted
		}
		t.errors.Add(kind, len(inFlight), err.Error())
	}
	more := true
	for {
		for more && len(inFlight) < pipeline {
			if ctx.Err() != nil {
				more = false
				break
			}
			i := next.Add(1) - 1
			if i >= int64(to) {
				more = false
				break
			}
			sent := time.Now()
			inFlight = append(inFlight, flight{set.Events[i].ID, sent})
			if err := c.write(set.Messages[i]); err != nil {
				fail(err)
				return
			}
		}
		if len(inFlight) == 0 {
			return
		}
		data, err := c.read(inFlight[0].sent.Add(c.timeout))
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
		case "OK":
			id, accepted, msg, err := m.ok()
			if err != nil {
				t.errors.Add(ErrProtocol, 1, err.Error())
				continue
			}
			k := -1
			for j, f := range inFlight {
				if f.id == id {
					k = j
					break
				}
			}
			if k < 0 {
				t.errors.Add(ErrUnexpected, 1, id)
				continue
			}
			t.latencies = append(t.latencies, now.Sub(inFlight[k].sent))
			inFlight = append(inFlight[:k], inFlight[k+1:]...)
			if accepted {
				t.accepted++
				if msg != "" {
					t.acceptedBy.Add(ReasonPrefix(msg), 1, msg)
				}
			} else {
				t.rejected++
				t.rejectedBy.Add(ReasonPrefix(msg), 1, msg)
			}
		case "NOTICE":
			msg := m.str(0)
			t.notices.Add(ReasonPrefix(msg), 1, msg)
		}
	}
}
