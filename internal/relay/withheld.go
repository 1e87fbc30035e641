package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
)

// WithheldStore reads the NIP-29 group events withheld for their invite
// codes (cn_relay.group_withheld: a 9009, a 9021 with a code), which have no
// row in cn_relay.events nor in the outbox (store.Reader implements it, on
// the primary). While Config.Groups is set the relay (Deps.Store) serves them to the REQs
// of the readers groups.WithheldReader allows, and nothing else does.
type WithheldStore interface {
	// GroupWithheld returns the withheld events matching f that r may read
	// (groups.ReadWithheld), newest first, at most f.Limit.
	GroupWithheld(ctx context.Context, f nostr.Filter, r groups.WithheldReader) ([]*nostr.Event, error)
	// GroupState returns group id's state (nil: no such group).
	GroupState(ctx context.Context, id string) (*groups.State, error)
}

const reasonAuthForInvites = "auth-required: invite codes (kind 9009) are served only to the group's admins: authenticate (NIP-42)"

// asksInvites reports whether f names kind 9009 (create-invite): a reader
// that has not authenticated is asked to (auth-required), as for direct
// messages, so that apps authenticate and ask again.
func asksInvites(f nostr.Filter) bool { return slices.Contains(f.Kinds, groups.KindCreateInvite) }

// withheldReader is who v is to the withheld events' rule.
func withheldReader(v protocol.Viewer) groups.WithheldReader {
	return groups.WithheldReader{Keys: v.Authed, Master: v.AllGroups}
}

// withheldFilters returns the filters of a REQ that can match withheld events
// v may be allowed to read (groups.WithheldKindsOf: a #h, kinds that include
// 9009 or 9021 or none, no search), nil for every other REQ: those cost
// nothing more.
func (r *Relay) withheldFilters(filters []nostr.Filter, v protocol.Viewer) []nostr.Filter {
	if r.withheld == nil || !r.cfg.Groups || len(v.Authed) == 0 {
		return nil
	}
	var out []nostr.Filter
	for _, f := range filters {
		if len(groups.WithheldKindsOf(f)) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// addWithheld reads the withheld events s's reader may read for each of its
// withheld filters and merges them into stored, the stored part of the REQ
// (newest first, ties by lowest id): each filter's limit then holds for its
// stored and withheld matches together (a stored event only that filter
// held that falls past the limit is dropped). It records the withheld ids
// sent, so that their live delivery is skipped (subWithheld.sent).
//
// stored's events may lack their tags (readpath.Result.Events): they are
// matched whole, from their JSON in sv.
func (r *Relay) addWithheld(ctx context.Context, s *subscription, stored []*nostr.Event, sv *servedJSON) ([]*nostr.Event, error) {
	reader := withheldReader(s.viewer())
	wholes := map[*nostr.Event]*nostr.Event{}
	matches := func(f nostr.Filter, ev *nostr.Event) bool {
		if len(f.Tags) == 0 || ev.Tags != nil {
			return f.Matches(ev)
		}
		w, ok := wholes[ev]
		if !ok {
			w = ev
			if js := sv.JSON(ev); js != nil {
				w = &nostr.Event{}
				if err := json.Unmarshal(js, w); err != nil {
					w = ev
				}
			}
			wholes[ev] = w
		}
		return f.Matches(w)
	}
	tops := map[int]map[*nostr.Event]bool{} // by filter: its answer, its limit's newest matches
	sent := map[string]bool{}
	var extra []*nostr.Event
	for i, f := range s.filters {
		if len(groups.WithheldKindsOf(f)) == 0 {
			continue
		}
		evs, err := r.withheld.GroupWithheld(ctx, f, reader)
		if err != nil {
			return stored, err
		}
		if len(evs) == 0 {
			continue
		}
		cand := slices.Clone(evs)
		for _, ev := range stored {
			if matches(f, ev) {
				cand = append(cand, ev)
			}
		}
		sortEvents(cand)
		if f.Limit > 0 && len(cand) > f.Limit {
			cand = cand[:f.Limit]
		}
		top := make(map[*nostr.Event]bool, len(cand))
		for _, ev := range cand {
			top[ev] = true
		}
		tops[i] = top
		for _, ev := range evs {
			if top[ev] && !sent[ev.ID] {
				sent[ev.ID] = true
				extra = append(extra, ev)
			}
		}
	}
	if len(tops) == 0 {
		return stored, nil
	}
	out := make([]*nostr.Event, 0, len(stored)+len(extra))
	for _, ev := range stored {
		// Kept unless every filter it matches dropped it past its limit (a
		// filter without withheld events drops nothing; an event no filter
		// matches here, such as a search's, is kept).
		keep := true
		for i, f := range s.filters {
			if !matches(f, ev) {
				continue
			}
			if top, ok := tops[i]; !ok || top[ev] {
				keep = true
				break
			}
			keep = false
		}
		if keep {
			out = append(out, ev)
		}
	}
	out = append(out, extra...)
	sortEvents(out)
	s.mu.Lock()
	s.withheld.sent = sent
	s.mu.Unlock()
	return out, nil
}

// sortEvents sorts evs as NIP-01 answers: newest first, ties by lowest id.
func sortEvents(evs []*nostr.Event) {
	slices.SortStableFunc(evs, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return cmp.Compare(b.CreatedAt, a.CreatedAt)
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// fanoutWithheld delivers ev, a group event this relay has just committed
// withheld (IngestResult.Withheld), to the live subscriptions of this
// process that match it with one of their withheld filters and whose reader
// may read it (groups.WithheldReader, with the group's state read now; the
// private group's rule on top, as for every delivery). It has no outbox
// row, so other relay processes sharing the database do not deliver it live:
// their subscribers read it when they send the REQ again. It reads the state
// only when a subscription matches, at most QueryTimeout.
func (r *Relay) fanoutWithheld(ctx context.Context, ev *nostr.Event) {
	if r.withheld == nil || !r.cfg.Groups {
		return
	}
	var subs []*subscription
	for _, s := range r.index.matching(ev, nil) {
		if slices.ContainsFunc(s.withheldFilters(), func(f nostr.Filter) bool {
			return slices.Contains(groups.WithheldKindsOf(f), ev.Kind) && f.Matches(ev)
		}) {
			subs = append(subs, s)
		}
	}
	if len(subs) == 0 {
		return
	}
	id, _ := protocol.GroupTag(ev)
	ctx, cancel := context.WithTimeout(ctx, r.lv().QueryTimeout)
	st, err := r.withheld.GroupState(ctx, id)
	cancel()
	if err != nil {
		r.log.Warn("read group state for a withheld event failed; not delivered live", "group", id, "err", err)
		return
	}
	js := eventJSON(ev)
	for _, s := range subs {
		if !withheldReader(s.viewer()).MayRead(st, ev) || !s.viewer().MayRead(ev) {
			continue
		}
		if s.deliver(ev, 0, js) {
			r.m.liveDeliveries.Inc()
		}
	}
}
