package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// handoffMaxRows is the most outbox rows a handoff reads after a replica's
// snapshot. A window of more rows (a replica far behind between two health
// checks) is not worth loading event by event: the primary answers the REQ.
const handoffMaxRows = 1000

// handoff turns a stored part read on a replica, whose snapshot holds the
// outbox up to seq, into the stored part the primary answers at the handoff
// point H, and returns H: the subscription's snapshot.
//
// H is the primary's outbox head in the snapshot of the handoff's read of
// the primary (Primary.Window), which starts after the subscription was filed:
// H covers every write committed before the REQ arrived, and every row after
// H is read by the follower after the filing and fanned out to the
// subscription.
//
// Promise: the stored part returned is exactly the primary's answer
// (Reader.Read) in a snapshot of the primary that holds the outbox up to H: for each
// filter the newest Limit visible matching events that the viewer may read
// (ties by lowest id), their union newest first, each once. As the
// subscription's snapshot is H, no event of a row up to H arrives live, and
// every matching event of a row after H does, once (subscription). Two
// answers differ, as they would on the primary: one that the connection's
// memory budget stopped ends at the oldest event that fit (for a lone
// filter: the newest events at H down to it; no refill); and a NIP-50 search,
// ranked by the primary's index, is the replica's answer when the window
// names none of its events and none it matches, else the primary's at H.
//
// How it is kept. The rows in (seq, H] name every event whose visibility
// may have changed (readpath.Window): the replica's events they name, or whose
// effective key an upsert among them names, are left out, and the events
// they name that are visible at H and match are candidates. For each filter,
// the replica's page down to its oldest event (the bound) is then exact at H
// above the bound: what it kept and the candidates that rank above the
// bound; candidates below the bound compete with events the replica did not
// send. So a page of Limit events above the bound is complete, and so is the
// page of a filter that had fewer matches than its Limit on the replica. A
// page left short (its events deleted, hidden or replaced since, and fewer
// new ones above the bound) is refilled from the primary in one snapshot
// (Primary.InSnapshot): the window is read again, the merge redone, and the
// filter's matches at or below the bound's created_at read, as many as are
// missing plus the page's events of that second; H is then that snapshot's
// head. A window of more than handoffMaxRows rows, or a search page it may
// have changed, is answered there by the primary whole.
//
// The cost, on the primary: one statement (the window with its events, one
// round trip; its outbox read finds nothing when the replica is current);
// a short page adds one read-only transaction (the window again and, per
// short filter, one query of the missing events only). Events the handoff
// adds take their share of the connection's budget through take, as a
// query's rows do; stopped says the replica's answer stopped at it.
func (r *Relay) handoff(ctx context.Context, s *subscription, stored []*nostr.Event, sv *servedJSON, seq int64, stopped bool, take func(int) bool) (page []*nostr.Event, head int64, err error) {
	w, err := r.primary.Window(ctx, seq, handoffMaxRows)
	if err != nil {
		return nil, 0, fmt.Errorf("handoff after seq %d: %w", seq, err)
	}
	if !w.More && len(w.Named) == 0 {
		return stored, seq, nil // (the replica was current)
	}
	// A row in a group's scope may have changed who reads the group (a
	// member removed, the group made private): the replica's answer and
	// the gate may both be older than that, so the primary answers whole.
	w.More = w.More || w.Groups
	m := &pageMerge{filters: s.filters, viewer: s.viewer(), stored: stored, stopped: stopped, sv: sv,
		matches: func(ev *nostr.Event) bool { return r.index.matchesSub(s, ev) }}
	var res merged
	if !w.More {
		if res, err = m.merge(w); err != nil {
			return nil, 0, err
		}
	}
	if w.More || res.primary || len(res.refills) > 0 {
		r.m.handoffRefills.Inc()
		read := func(sn readpath.Snapshot, filters []nostr.Filter) ([]*nostr.Event, error) {
			res, err := sn.Read(ctx, readpath.Request{Filters: filters, Viewer: s.viewer(), Take: take})
			if err != nil {
				return nil, err
			}
			sv.add(res)
			return res.Events, nil
		}
		err = r.primary.InSnapshot(ctx, func(sn readpath.Snapshot) error {
			if w, err = sn.Window(ctx, seq, handoffMaxRows); err != nil {
				return err
			}
			w.More = w.More || w.Groups
			if !w.More {
				if res, err = m.merge(w); err != nil {
					return err
				}
			}
			if w.More || res.primary {
				res = merged{dropped: res.dropped}
				res.page, err = read(sn, s.filters)
				return err
			}
			for _, rf := range res.refills {
				evs, err := read(sn, []nostr.Filter{rf.filter})
				if err != nil {
					return err
				}
				res.pages[rf.i] = rf.fill(evs)
			}
			res.page = union(res.pages, len(s.filters) > 1)
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("handoff after seq %d: refill: %w", seq, err)
		}
	}
	r.m.handoffDropped.Add(float64(res.dropped))
	// The window's events are whole (they come without JSON): their JSON is
	// made here, and takes its share of the budget as a query row would; a
	// refusal ends the page there (the newest events that fit).
	added := 0
	for i, ev := range res.page {
		if !res.fromWindow[ev] {
			continue
		}
		js := eventJSON(ev)
		if !take(len(js)) {
			res.page = res.page[:i]
			break
		}
		sv.Put(ev, js)
		added++
	}
	r.m.handoffCaught.Add(float64(added))
	return res.page, w.Seq, nil
}

// pageMerge computes a subscription's stored part at a window's head from
// the part read on a replica (see Relay.handoff).
type pageMerge struct {
	filters []nostr.Filter
	viewer  protocol.Viewer
	stored  []*nostr.Event          // read on the replica, in the store's order
	stopped bool                    // the replica's answer stopped at the memory budget
	sv      *servedJSON             // the JSON of stored's events (nil, or none: they are whole)
	matches func(*nostr.Event) bool // an event matches one of the filters (search included)
	whole   map[*nostr.Event]*nostr.Event
}

// merged is a merge's outcome: the page, or what the primary must read.
type merged struct {
	page       []*nostr.Event        // the stored part, when neither of the below
	primary    bool                  // the primary answers the REQ (a search page the window changed)
	refills    []refill              // filters whose page the window left short
	pages      [][]*nostr.Event      // each filter's page, the refills' so far
	fromWindow map[*nostr.Event]bool // page events that are the window's
	dropped    int                   // replica events the window left out
}

// refill is a filter whose page the window left short: the primary reads
// its matches below the bound.
type refill struct {
	i      int            // the filter's index
	filter nostr.Filter   // the filter at or below the bound's second: Until, and Limit = need + ties
	above  []*nostr.Event // its page down to the bound, exact
	bound  *nostr.Event   // the oldest event of the replica's page for the filter
	need   int            // events missing from the page
}

// fill completes the page with the refill's answer (newest first): the
// events ranked below the bound, up to need.
func (rf refill) fill(evs []*nostr.Event) []*nostr.Event {
	page := slices.Clip(rf.above)
	for _, ev := range evs {
		if len(page) == len(rf.above)+rf.need {
			break
		}
		if newestFirst(rf.bound, ev) < 0 {
			page = append(page, ev)
		}
	}
	return page
}

// merge computes the page at w's head (see Relay.handoff).
func (m *pageMerge) merge(w readpath.Window) (merged, error) {
	res := merged{fromWindow: map[*nostr.Event]bool{}}
	gone := func(ev *nostr.Event) bool {
		return w.Named[ev.ID] || w.Keys[protocol.EffectiveKey(ev)]
	}
	for _, ev := range m.stored {
		if gone(ev) {
			res.dropped++
		}
	}
	var cand []*nostr.Event // visible at the head, named by the window, matching
	for _, ev := range w.Events {
		if m.viewer.MayRead(ev) && m.matches(ev) {
			cand = append(cand, ev)
			res.fromWindow[ev] = true
		}
	}
	if res.dropped == 0 && len(cand) == 0 {
		res.page = m.stored // (nothing the REQ reads changed)
		return res, nil
	}
	if slices.ContainsFunc(m.filters, func(f nostr.Filter) bool { return f.Search != "" }) {
		// Search ranks by relevance, which only the primary's index knows.
		res.primary = true
		return res, nil
	}
	// The replica's answer stopped at the memory budget: each page ends at
	// its oldest event, and is not refilled.
	var stop *nostr.Event
	if m.stopped {
		if len(m.stored) == 0 {
			return res, nil
		}
		stop = m.stored[len(m.stored)-1]
	}
	res.pages = make([][]*nostr.Event, len(m.filters))
	for i, f := range m.filters {
		if f.LimitZero {
			continue
		}
		// The replica's page for f: the events of f's own answer (all of
		// them for a lone filter), down to f's Limit.
		mine := m.stored
		if len(m.filters) > 1 {
			mine = nil
			for _, ev := range m.stored {
				in, err := m.answered(i, f, ev)
				if err != nil {
					return merged{}, err
				}
				if in {
					mine = append(mine, ev)
				}
			}
		}
		complete := f.Limit <= 0 || len(mine) < f.Limit
		var bound *nostr.Event
		if !complete {
			mine = mine[:f.Limit]
			bound = mine[len(mine)-1]
		}
		if stop != nil && (bound == nil || newestFirst(stop, bound) < 0) {
			complete, bound = false, stop
		}
		var above []*nostr.Event
		for _, ev := range mine {
			if !gone(ev) {
				above = append(above, ev)
			}
		}
		for _, ev := range cand {
			if protocol.Match(f, ev) && (complete || newestFirst(ev, bound) <= 0) {
				above = append(above, ev)
			}
		}
		slices.SortFunc(above, newestFirst)
		switch {
		case complete || stop != nil || len(above) >= f.Limit:
			if f.Limit > 0 && len(above) > f.Limit {
				above = above[:f.Limit]
			}
			res.pages[i] = above
		default:
			rf := refill{i: i, filter: f.Clone(), above: above, bound: bound, need: f.Limit - len(above)}
			until := bound.CreatedAt
			rf.filter.Until = &until
			rf.filter.Limit = rf.need
			for _, ev := range above {
				if ev.CreatedAt == bound.CreatedAt {
					rf.filter.Limit++ // (at or above the bound: read again, skipped by fill)
				}
			}
			res.refills = append(res.refills, rf)
			res.pages[i] = above
		}
	}
	if len(res.refills) == 0 {
		res.page = union(res.pages, len(m.filters) > 1)
	}
	return res, nil
}

// answered reports whether the replica's answer for filters[i] (its own,
// before the union) held ev: as the read recorded it (readpath.Result.From),
// else by matching ev against f. An event that f matches but that its own
// answer did not hold ranks below that answer's Limit events, where merge
// cuts the page.
func (m *pageMerge) answered(i int, f nostr.Filter, ev *nostr.Event) (bool, error) {
	if from := m.sv.From(ev); from != 0 {
		return from&(1<<i) != 0, nil
	}
	whole, err := m.wholeEvent(ev)
	if err != nil {
		return false, err
	}
	return protocol.Match(f, whole), nil
}

// needsTags reports whether matching the filters needs events' tags, which
// events read with their JSON may lack (but for addressable kinds).
func (m *pageMerge) needsTags() bool {
	return slices.ContainsFunc(m.filters, func(f nostr.Filter) bool { return len(f.Tags) > 0 })
}

// wholeEvent returns ev as the filters need it to be matched: with its tags
// (decoded from its JSON when it was read without them and a filter
// asks for tags), else ev itself, whose id, author, kind and created_at are
// always there.
func (m *pageMerge) wholeEvent(ev *nostr.Event) (*nostr.Event, error) {
	js := m.sv.JSON(ev)
	if js == nil || !m.needsTags() {
		return ev, nil
	}
	if whole := m.whole[ev]; whole != nil {
		return whole, nil
	}
	whole := &nostr.Event{}
	if err := json.Unmarshal(js, whole); err != nil {
		return nil, fmt.Errorf("handoff: decode stored event %s: %w", ev.ID, err)
	}
	if m.whole == nil {
		m.whole = map[*nostr.Event]*nostr.Event{}
	}
	m.whole[ev] = whole
	return whole, nil
}

// union is the stored part of pages, one per filter, each newest first: each
// event once, newest first (sorted: several filters).
func union(pages [][]*nostr.Event, several bool) []*nostr.Event {
	if !several {
		for _, p := range pages {
			return p
		}
		return nil
	}
	seen := map[string]bool{}
	var out []*nostr.Event
	for _, p := range pages {
		for _, ev := range p {
			if !seen[ev.ID] {
				seen[ev.ID] = true
				out = append(out, ev)
			}
		}
	}
	slices.SortFunc(out, newestFirst)
	return out
}

// newestFirst orders events as a stored part lists them (Reader.Read):
// newest first, ties by lowest id.
func newestFirst(a, b *nostr.Event) int {
	if a.CreatedAt != b.CreatedAt {
		return cmp.Compare(b.CreatedAt, a.CreatedAt)
	}
	return strings.Compare(a.ID, b.ID)
}

// cacheWait is how long a REQ waits for the event cache to apply the writes
// committed before it arrived, before it reads the database instead
// (eventcache.Reader.Wait), and bounds its read of the outbox head.
const cacheWait = 100 * time.Millisecond
