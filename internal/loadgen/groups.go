package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// NIP-29 kinds the group workloads use.
const (
	kindPutUser     = 9000
	kindCreateGroup = 9007
	kindJoinRequest = 9021
	kindMembers     = 39002
	// KindGroupChat is NIP-29's chat message (kind 9 with h), the default
	// kind of a group ingest.
	KindGroupChat = 9
)

// roundTrip sends ev on c and reads until its OK (other messages: AUTH,
// NOTICE, events of other subscriptions, are skipped), at most c.timeout.
func roundTrip(c *conn, ev *nostr.Event) (accepted bool, msg string, err error) {
	frame, err := json.Marshal([]any{"EVENT", ev})
	if err != nil {
		return false, "", err
	}
	if err := c.write(frame); err != nil {
		return false, "", err
	}
	deadline := time.Now().Add(c.timeout)
	for {
		data, err := c.read(deadline)
		if err != nil {
			return false, "", err
		}
		m, err := parseRelayMsg(data)
		if err != nil || m.label != "OK" {
			continue
		}
		id, ok, text, err := m.ok()
		if err != nil {
			return false, "", err
		}
		if id == ev.ID {
			return ok, text, nil
		}
	}
}

// createGroup makes group id on the relay for a benchmark, as an app would
// under the default --group-creators (members of the community): a fresh key
// posts a note with a t tag (topic), then sends the 9007. A group that
// exists already (an earlier run with the same id) is used as it is: it must
// be open for the runs that follow.
func createGroup(c *conn, topic, id string) error {
	sk := nostr.GeneratePrivateKey()
	note := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", topic}}, Content: "creating group " + id}
	create := &nostr.Event{Kind: kindCreateGroup, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", id}}}
	for _, ev := range []*nostr.Event{note, create} {
		if err := ev.Sign(sk); err != nil {
			return err
		}
		ok, msg, err := roundTrip(c, ev)
		switch {
		case err != nil:
			return fmt.Errorf("create group %s: kind %d: %w", id, ev.Kind, err)
		case ev.Kind == kindCreateGroup && !ok && ReasonPrefix(msg) == "duplicate":
			return nil
		case !ok:
			return fmt.Errorf("create group %s: kind %d refused: %s", id, ev.Kind, msg)
		}
	}
	return nil
}

// JoinConfig describes a join-latency run: Joins fresh keys, one after the
// other, each send a join request (9021) to an open group while a
// subscriber on another connection waits for the node's 9000 naming the
// key and for a members list (39002) that lists it.
type JoinConfig struct {
	URL     string
	Joins   int
	Warmup  int // joins before the clock starts (not reported)
	Group   string
	Topic   string // t tag of the note that makes the group's creator a community member
	Timeout time.Duration
	Logf    func(format string, args ...any)
}

// Validate checks the configuration.
func (c JoinConfig) Validate() error {
	return firstError(CheckURL(c.URL), atLeast("joins", c.Joins, 1), atLeast("warmup", c.Warmup, 0),
		nonEmpty("group", c.Group), nonEmpty("topic", c.Topic), positive("timeout", c.Timeout))
}

// JoinReport is the outcome of a join-latency run. Every latency starts when
// the 9021 is written.
type JoinReport struct {
	URL   string `json:"url"`
	Group string `json:"group"`
	Joins int    `json:"joins"`
	// OK: until the joiner reads its OK.
	OK Summary `json:"ok_latency"`
	// Put: until the subscriber reads the node's 9000 naming the joiner.
	Put Summary `json:"put_user_latency"`
	// Members: until the subscriber reads a 39002 that lists the joiner.
	Members  Summary `json:"members_latency"`
	Accepted int     `json:"accepted"`
	Refused  Counts  `json:"refused_by_prefix"`
	Errors   Counts  `json:"errors"`
}

// Failed is the number of timed joins that did not complete (no OK, refused,
// or not seen by the subscriber in time).
func (r *JoinReport) Failed() int { return r.Joins - min(r.Put.Count, r.Members.Count) }

// WriteText prints the report for people.
func (r *JoinReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d joins of group %s at %s: %d accepted, %d refused (%s), errors %s\n"+
		"  9021 -> OK              p50 %s  p99 %s  max %s\n"+
		"  9021 -> node's 9000     p50 %s  p99 %s  max %s\n"+
		"  9021 -> 39002 lists it  p50 %s  p99 %s  max %s\n",
		r.Joins, r.Group, r.URL, r.Accepted, r.Refused.Total(), r.Refused, r.Errors,
		FormatLatency(r.OK.P50), FormatLatency(r.OK.P99), FormatLatency(r.OK.Max),
		FormatLatency(r.Put.P50), FormatLatency(r.Put.P99), FormatLatency(r.Put.Max),
		FormatLatency(r.Members.P50), FormatLatency(r.Members.P99), FormatLatency(r.Members.Max))
	return err
}

// seen is what the subscriber read: a 9000 or a 39002 and the pubkeys it
// names, at the time it was read.
type seen struct {
	kind int
	p    []string
	at   time.Time
}

// Joins runs a join-latency benchmark (see JoinConfig). It creates the group
// (createGroup), subscribes to {"kinds":[9000],"#h":[group]} and
// {"kinds":[39002],"#d":[group]} on one connection, then sends the joins on
// another, one at a time: each waits for its OK and for the subscriber to
// read both the 9000 and a 39002 naming the joiner (or Timeout).
func Joins(ctx context.Context, cfg JoinConfig) (*JoinReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	total := cfg.Warmup + cfg.Joins
	evs := make([]*nostr.Event, total)
	for i := range evs {
		ev := &nostr.Event{Kind: kindJoinRequest, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", cfg.Group}}}
		if err := ev.Sign(nostr.GeneratePrivateKey()); err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	conns, err := dialAll(ctx, cfg.URL, 2, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	defer closeOnCancel(ctx, conns)()
	joiner, sub := conns[0], conns[1]
	if err := createGroup(joiner, cfg.Topic, cfg.Group); err != nil {
		return nil, err
	}
	req, _ := json.Marshal([]any{"REQ", "joins", map[string]any{"kinds": []int{kindPutUser}, "#h": []string{cfg.Group}},
		map[string]any{"kinds": []int{kindMembers}, "#d": []string{cfg.Group}}})
	if err := sub.write(req); err != nil {
		return nil, err
	}
	feed := make(chan seen, 1024)
	eose := make(chan struct{})
	go func() { // the subscriber: stamps what it reads as it reads it
		defer close(feed)
		gotEOSE := false
		for {
			data, err := sub.read(time.Time{})
			if err != nil {
				return
			}
			at := time.Now()
			m, err := parseRelayMsg(data)
			if err != nil {
				continue
			}
			switch m.label {
			case "EOSE":
				if !gotEOSE {
					gotEOSE = true
					close(eose)
				}
			case "EVENT":
				var ev nostr.Event
				if len(m.args) < 2 || json.Unmarshal(m.args[1], &ev) != nil {
					continue
				}
				s := seen{kind: ev.Kind, at: at}
				for _, t := range ev.Tags {
					if len(t) >= 2 && t[0] == "p" {
						s.p = append(s.p, t[1])
					}
				}
				select {
				case feed <- s:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	select {
	case <-eose:
	case <-time.After(cfg.Timeout):
		return nil, errors.New("the subscription got no EOSE")
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	rep := &JoinReport{URL: cfg.URL, Group: cfg.Group, Joins: cfg.Joins}
	var oks, puts, lists []time.Duration
	putAt, listAt := map[string]time.Time{}, map[string]time.Time{}
	note := func(s seen) {
		for _, p := range s.p {
			switch s.kind {
			case kindPutUser:
				if _, ok := putAt[p]; !ok {
					putAt[p] = s.at
				}
			case kindMembers:
				if _, ok := listAt[p]; !ok {
					listAt[p] = s.at
				}
			}
		}
	}
	for i, ev := range evs {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		timed := i >= cfg.Warmup
		start := time.Now()
		ok, msg, err := roundTrip(joiner, ev)
		okAt := time.Now()
		switch {
		case err != nil:
			if timed {
				rep.Errors.Add(failureKind(err), 1, err.Error())
			}
			return rep, fmt.Errorf("join %d: %w", i+1, err)
		case !ok:
			if timed {
				rep.Refused.Add(ReasonPrefix(msg), 1, msg)
			}
			continue
		}
		deadline := time.After(cfg.Timeout)
		for !hasKey(putAt, ev.PubKey) || !hasKey(listAt, ev.PubKey) {
			select {
			case s, open := <-feed:
				if !open {
					return rep, errors.New("the subscriber's connection closed")
				}
				note(s)
				continue
			case <-deadline:
			case <-ctx.Done():
				return rep, ctx.Err()
			}
			break
		}
		if !timed {
			continue
		}
		rep.Accepted++
		oks = append(oks, okAt.Sub(start))
		if at, ok := putAt[ev.PubKey]; ok {
			puts = append(puts, at.Sub(start))
		} else {
			rep.Errors.Add("put_user_not_seen", 1, "")
		}
		if at, ok := listAt[ev.PubKey]; ok {
			lists = append(lists, at.Sub(start))
		} else {
			rep.Errors.Add("members_not_seen", 1, "")
		}
	}
	rep.OK, rep.Put, rep.Members = Summarize(oks), Summarize(puts), Summarize(lists)
	logf("%d joins timed after %d warm-up joins", cfg.Joins, cfg.Warmup)
	return rep, nil
}

func hasKey(m map[string]time.Time, k string) bool {
	_, ok := m[k]
	return ok
}
