package store

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// Outcome is what hiding or unhiding did to one event.
type Outcome string

const (
	// Hidden: the event was visible (or a replaced version) and is now hidden.
	Hidden Outcome = "hidden"
	// Unhidden: the event was hidden by moderation and is visible again (if it
	// is its key's effective version and not expired).
	Unhidden Outcome = "unhidden"
	// Unchanged: already hidden, or not hidden by moderation (deleted by its
	// author, expired, or never hidden): nothing to do.
	Unchanged Outcome = "unchanged"
	// NotFound: no such event is stored.
	NotFound Outcome = "not found"
)

// ModerateTx hides and shows events again, inside the caller's transaction
// (committed by the caller, as IngestTx); see PublishTx.
func (s *Store) ModerateTx(ctx context.Context, tx outbox.Batcher, hide, unhide []string) (map[string]Outcome, outbox.Range, error) {
	p, err := s.PublishTx(ctx, tx, nil, hide, unhide)
	return p.Outcomes, p.Range, err
}

// Published is what PublishTx did.
type Published struct {
	Verdicts []protocol.Verdict // one per event, in order
	Outcomes map[string]Outcome // one per id to hide or unhide
	Range    outbox.Range       // the outbox rows appended (announce them after the commit)
}

// PublishTx stores the node's own events and hides and unhides events, in one
// plan inside the caller's transaction, which the caller commits and then
// announces (outbox.Notifier). It is how consumers act: a label and the hide it
// explains commit with the consumer's offset. Events are stored as by IngestTx
// (trusted, topic rules applied), in order, before the hides.
//
// Hiding is a soft delete with reason "moderation": readers stop seeing the
// event at once (REQ, COUNT, search, live delivery) and the outbox gets one
// `delete` row per topic with that reason, so the index drops it. A hidden
// replaceable or addressable version makes way for the newest remaining version,
// as a NIP-09 deletion does. Unhiding undoes only moderation: an event its
// author deleted (NIP-09) or that expired stays gone; it writes `upsert` rows for
// what became visible again. A hidden event that its author re-submits stays
// hidden (it is a duplicate of a deleted event). An id in both lists is hidden.
// The outbox append is the plan's last statement.
func (s *Store) PublishTx(ctx context.Context, tx outbox.Batcher, evs []*nostr.Event, hide, unhide []string) (Published, error) {
	p := s.newPlan(evs)
	p.trusted = true
	p.hideIDs, p.unhideIDs = hide, unhide
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return Published{}, fmt.Errorf("publish: %w", err)
	}
	return Published{Verdicts: p.results, Outcomes: p.outcomes, Range: r}, nil
}

// applyModeration settles hideIDs and unhideIDs against the loaded state.
func (p *plan) applyModeration() {
	hiding := map[string]bool{}
	for _, id := range p.hideIDs {
		hiding[id] = true
		st := p.byID[id]
		switch {
		case st == nil:
			p.outcomes[id] = NotFound
		case st.deleted:
			p.outcomes[id] = Unchanged
		default:
			st.reason = reasonModeration
			p.delete(st)
			p.outcomes[id] = Hidden
		}
	}
	for _, id := range p.unhideIDs {
		if hiding[id] {
			continue
		}
		st := p.byID[id]
		switch {
		case st == nil:
			p.outcomes[id] = NotFound
		case !st.deleted || st.reason != reasonModeration || p.tombIDs[id][st.pubkey] || p.addressDeleted(st):
			p.outcomes[id] = Unchanged
		default:
			st.deleted, st.reason = false, ""
			p.unhidden = append(p.unhidden, id)
			p.outcomes[id] = Unhidden
			if st.effectiveKey == "" {
				p.upserts(st)
			} else {
				p.touched[st.effectiveKey] = true
			}
		}
	}
}

// addressDeleted reports whether a NIP-09 'a' deletion by the author covers st.
func (p *plan) addressDeleted(st *stored) bool {
	if st.effectiveKey == "" {
		return false
	}
	at, ok := p.tombAddr[addressOfKey(st.effectiveKey)]
	return ok && st.createdAt <= at
}
