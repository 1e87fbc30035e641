package store

import (
	"context"
	"fmt"

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
// (committed by the caller, as IngestTx). Hiding is a soft delete with reason
// "moderation": readers stop seeing the event at once (REQ, COUNT, search, live
// delivery) and the outbox gets one `delete` row per topic with that reason,
// so the index drops it. A hidden replaceable or addressable version makes way
// for the newest remaining version, as a NIP-09 deletion does. Unhiding undoes
// only moderation: an event its author deleted (NIP-09) or that expired stays
// gone; it writes `upsert` rows for what became visible again. A hidden event
// that its author re-submits stays hidden (it is a duplicate of a deleted event).
// An id in both lists is hidden.
func (s *Store) ModerateTx(ctx context.Context, tx outbox.Batcher, hide, unhide []string) (map[string]Outcome, outbox.Range, error) {
	p := s.newPlan(nil)
	p.hideIDs, p.unhideIDs = hide, unhide
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return nil, outbox.Range{}, fmt.Errorf("moderate: %w", err)
	}
	return p.outcomes, r, nil
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
