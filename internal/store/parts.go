package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// A part is one room of the store's batch: NIP-29 groups (groupPart,
// groups.go) and NIP-43 membership (membershipPart, membership.go). Each
// holds what it loaded and decided; the plan holds only what every event
// needs, and calls every part, in the order of plan.parts, at each step of
// the batch's one transaction, as khatru composes policies as hook slices:
//
//   - load (plan_load.go): need for each event, needBatch once, then
//     queueLocks (before the effective-key locks), queueLoad (in the load's
//     round trip), loadMore (the part's own round trips after it) and loaded;
//   - decide (plan_decide.go): begin before the events; for each event,
//     duplicate (an id stored already), refuse, decide (whose apply runs once
//     the event is stored), and scope and made for its topics;
//   - finish, after the events: the part's own node events; its error fails
//     the batch;
//   - write (plan_write.go): queueWrites, after the events' rows.
//
// A part is there whether or not its room is configured: without groups,
// the groups part refuses every group event; without membership, the
// membership part still refuses the NIP-43 node kinds from everyone. A new
// NIP's room is a new part, with no change to plan.load.
type part interface {
	need(ev *nostr.Event, n *needs)
	needBatch(n *needs)
	queueLocks(b *pgx.Batch)
	queueLoad(b *pgx.Batch, n *needs)
	loadMore(ctx context.Context, tx outbox.Batcher) error
	loaded()

	begin()
	duplicate(ev *nostr.Event) (protocol.Verdict, bool)
	refuse(ev *nostr.Event) (protocol.Verdict, bool)
	// decide: stop, the answer is v and the event goes no further;
	// decided, v is the event's answer if it is stored; apply (may be
	// nil) runs after it is stored.
	decide(ev *nostr.Event) (v protocol.Verdict, apply func(), decided, stop bool)
	// scope is the scope (topic) of an event this part owns, "" for others.
	scope(ev *nostr.Event) string
	// made reports a node event this part made that goes to the person
	// scope (protocol.NodeTopic) and never waits for membership.
	made(ev *nostr.Event) bool
	// passesOn reports whether a referenced event's topic t passes on to
	// the events that reference it (a part's own scopes may not).
	passesOn(t string) bool
	// signer is the key the part signs its state with ("" for none): a
	// superseded version of that key's state is not kept (plan.ownState).
	signer() string

	finish() error
	queueWrites(b *pgx.Batch)
}

// needs is what a load reads and locks, which parts add to.
type needs struct {
	ids, targetIDs, keys, addrs, people map[string]bool
}

// partOf returns the plan's part of type T.
func partOf[T part](p *plan) T {
	for _, pt := range p.parts {
		if t, ok := pt.(T); ok {
			return t
		}
	}
	panic("store: the plan has no such part")
}

// scope is the scope a part gives ev, "" when none does.
func (p *plan) scope(ev *nostr.Event) string {
	for _, pt := range p.parts {
		if s := pt.scope(ev); s != "" {
			return s
		}
	}
	return ""
}

// made reports a node event a part made for the person scope.
func (p *plan) made(ev *nostr.Event) bool {
	for _, pt := range p.parts {
		if pt.made(ev) {
			return true
		}
	}
	return false
}

// passesOn reports whether every part lets topic t pass on by reference.
func (p *plan) passesOn(t string) bool {
	for _, pt := range p.parts {
		if !pt.passesOn(t) {
			return false
		}
	}
	return true
}
