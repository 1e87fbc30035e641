package relay

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/eventcache"
)

// learnWait is how long the learner waits for the event cache to apply the
// seq an answer was read at before it leaves the answer.
const learnWait = 50 * time.Millisecond

// learnQueue and learnQueueBytes bound the answers waiting to be learnt,
// in number and in the bytes of their JSON (which no connection's budget
// holds once its answer is sent): beyond them answers are left (the next
// miss offers them again).
const (
	learnQueue      = 64
	learnQueueBytes = 8 << 20
)

// learnItem is a database answer to a one-filter REQ that the event cache
// may file as author ranges (eventcache.Cache.Learn): the events as the
// store served them (no tags, content or sig) with their JSON.
type learnItem struct {
	f      nostr.Filter
	events []eventcache.Loaded
	seq    int64
	bytes  int64 // the events' JSON, counted in Relay.learnBytes while queued
	// allGroups: the reader reads every group (protocol.Viewer.AllGroups).
	// Another reader's answer may lack a private or hidden group's events
	// of the range: it is not learnt while any group is (limited: at the
	// offer; the rule is read again once the cache has applied seq).
	allGroups, limited bool
}

// offerLearn hands the database's answer to s (read at seq, not stopped by
// the budget) to the learner when the cache could take it: one filter of
// the author shape, for a reader who sees every public event there is
// (Learn refuses private kinds; learn refuses answers read while a group was
// private or hidden, unless the reader reads every group). It must run before the answer's JSON is
// taken from sv. It never blocks: the learner is one goroutine, and answers
// it has no room for are left.
func (r *Relay) offerLearn(s *subscription, evs []*nostr.Event, sv *servedJSON, seq int64) {
	if r.learns == nil || len(s.filters) != 1 || !eventcache.Learnable(s.filters[0]) {
		return
	}
	item := learnItem{f: s.filters[0], events: make([]eventcache.Loaded, len(evs)), seq: seq,
		allGroups: s.viewer().AllGroups, limited: r.groups.Any()}
	for i, ev := range evs {
		js := sv.JSON(ev)
		if js == nil {
			return
		}
		item.events[i] = eventcache.Loaded{Event: ev, JSON: js}
		item.bytes += int64(len(js))
	}
	if r.learnBytes.Add(item.bytes) > learnQueueBytes {
		r.learnBytes.Add(-item.bytes)
		r.m.cacheLearns.WithLabelValues("busy").Inc()
		return
	}
	select {
	case r.learns <- item:
	default:
		r.learnBytes.Add(-item.bytes)
		r.m.cacheLearns.WithLabelValues("busy").Inc()
	}
}

// learner files the answers offerLearn hands it, one at a time, until ctx
// is done.
func (r *Relay) learner(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case item := <-r.learns:
			r.learn(ctx, item)
		}
	}
}

// learn decodes item's events whole from their JSON, waits until the cache
// has applied item's seq, and offers them to the cache. item leaves the
// queue's bytes.
func (r *Relay) learn(ctx context.Context, item learnItem) {
	defer r.learnBytes.Add(-item.bytes)
	for i, l := range item.events {
		ev := &nostr.Event{}
		if err := ev.UnmarshalJSON(l.JSON); err != nil || ev.ID != l.Event.ID {
			r.log.Warn("event cache: stored event JSON did not decode", "id", l.Event.ID, "err", err)
			return
		}
		item.events[i].Event = ev
	}
	if !r.cache.WaitFor(item.seq, learnWait, ctx.Done()) {
		r.m.cacheLearns.WithLabelValues("left").Inc()
		return
	}
	// (the group rule is now at least as new as item.seq: see groupGate)
	if !item.allGroups && (item.limited || r.groups.Any()) {
		r.m.cacheLearns.WithLabelValues("left").Inc()
		return
	}
	if r.cache.Learn(item.f, item.events, item.seq) {
		r.m.cacheLearns.WithLabelValues("taken").Inc()
	} else {
		r.m.cacheLearns.WithLabelValues("left").Inc()
	}
}
