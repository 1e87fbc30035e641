package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/nbd-wtf/go-nostr"
)

// Ingest stores verified, non-ephemeral events in one transaction ending with the
// outbox append and returns one result per event, in order. An error means nothing
// was stored. A batch that loses a race with another relay (deadlock, unique key)
// is retried a few times.
//
// Each stored event gets its topics here (protocol.TopicRules, in that order),
// and they go into event_topics and into the outbox (one row per topic): an
// identity event (protocol.IsIdentityKind) gets protocol.NodeTopic, the person
// scope; an event with `t` tags gets those; any other event inherits the topics
// of the events it references (protocol.TopicRefs) that are stored, or accepted
// earlier in the same batch, keeping the enabled ones; a person kind
// (protocol.IsPersonKind) that inherits none gets NodeTopic when a `p` tag names
// a member; then the default topic, if any. One that ends with no topic is
// refused (protocol.ReasonMissingTopic, ReasonPersonNotMember, or
// ReasonTopicNotEnabled when everything it inherited is disabled) unless its kind
// is exempt or topics are not required. Inheritance follows arrival: a reply that
// arrives before its parent has nothing to inherit from. An identity event's own
// `t` tags are stored for #t (event_topics rows with scope false), never in the
// outbox.
//
// Membership: an author becomes a member (cn_relay.members) with the first
// stored event in a community topic, or when the member gate (SetMemberGate)
// admits them. Under IdentityWritersMembers an identity event of a key that is
// not a member is answered OK true MsgPending and kept in cn_relay.pending_events
// (the newest version per effective key, within PendingLimits), not stored. The
// batch that makes the key a member publishes the newest pending version of each
// of its keys in the same transaction, as if it had just arrived (event rows,
// outbox rows, so live delivery and the index follow), and deletes the pending
// rows; a key admitted in another way is published by AdmitTx or SweepPending.
func (s *Store) Ingest(ctx context.Context, evs []*nostr.Event) ([]protocol.Verdict, error) {
	return s.ingest(ctx, evs, false)
}

// retryable reports the errors of a batch that lost a race with another
// relay's: deadlock_detected (40P01), serialization_failure (40001) and
// unique_violation (23505, an event stored meanwhile; see queueInsert).
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001" || pgErr.Code == "23505")
}

// Import stores a large batch exactly as Ingest does (the same plan under the
// store's rules, the same decisions, results, retries and one transaction
// ending with the outbox append), but writes the new rows of events,
// event_topics and event_tags with COPY (plan.copyWrites). It is for imports,
// whose batches are thousands of events; the relay's small batches are
// cheaper as one pipelined round trip (Ingest).
func (s *Store) Import(ctx context.Context, evs []*nostr.Event) ([]protocol.Verdict, error) {
	return s.ingest(ctx, evs, true)
}

func (s *Store) ingest(ctx context.Context, evs []*nostr.Event, copyRows bool) ([]protocol.Verdict, error) {
	var results []protocol.Verdict
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		results, err = s.ingestOnce(ctx, evs, copyRows)
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ingest %d events: %w", len(evs), err)
	}
	return results, nil
}

func (s *Store) ingestOnce(ctx context.Context, evs []*nostr.Event, copyRows bool) ([]protocol.Verdict, error) {
	p := s.pub.newPlan(evs, s.Rules())
	if err := s.write(ctx, p, copyRows); err != nil {
		return nil, err
	}
	return p.results, nil
}

// write runs p in a transaction of the outbox writer (group commit) and
// remembers what it committed. copyRows writes the new rows with COPY
// (Import).
func (s *Store) write(ctx context.Context, p *plan, copyRows bool) error {
	_, err := s.writer.WriteBatch(ctx, func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) ([]outbox.Record, error) {
		if err := p.prepare(ctx, tx); err != nil {
			return nil, err
		}
		if copyRows {
			if err := p.copyWrites(ctx, tx, b); err != nil {
				return nil, err
			}
			return p.records, nil
		}
		p.queueWrites(b) // they travel with the outbox append and the commit
		return p.records, nil
	})
	if err != nil {
		return err
	}
	s.pub.committed(p)
	return nil
}

// committed updates what the publisher remembers after p's transaction committed.
func (pub *Publisher) committed(p *plan) {
	pub.members.add(p.members)
	pub.pendingRows.Add(p.kept - int64(len(p.unpend)))
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
// explains commit with the consumer's offset. Events are stored as by Ingest
// under rules, in order, before the hides, but trusted: no ValidateEvent (the
// node made and signed them) and no wait for membership.
//
// Hiding is a soft delete with reason outbox.ReasonModeration: readers stop
// seeing the event at once (REQ, COUNT, search, live delivery) and the outbox
// gets one `delete` row per topic with that reason, so the index drops it. A
// hidden replaceable or addressable version makes way for the newest remaining
// version, as a NIP-09 deletion does. Unhiding undoes only moderation: an event
// its author deleted (NIP-09) or that expired stays gone; it writes `upsert`
// rows for what became visible again. A hidden event that its author
// re-submits stays hidden (it is a duplicate of a deleted event). An id in both
// lists is hidden. The outbox append is the plan's last statement: it holds
// the outbox lock until the caller's commit, so commit soon after.
func (pub *Publisher) PublishTx(ctx context.Context, tx outbox.Batcher, rules protocol.TopicRules, evs []*nostr.Event, hide, unhide []string) (Published, error) {
	p := pub.newPlan(evs, rules)
	p.trusted = true
	p.hideIDs, p.unhideIDs = hide, unhide
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return Published{}, fmt.Errorf("publish: %w", err)
	}
	return Published{Verdicts: p.results, Outcomes: p.outcomes, Range: r}, nil
}

// ModerateTx hides and shows events again, inside the caller's transaction
// (committed and announced by the caller), as PublishTx does. It publishes no
// event, so no topic rules play a part: the outbox rows carry the topics the
// events were stored with.
func (pub *Publisher) ModerateTx(ctx context.Context, tx outbox.Batcher, hide, unhide []string) (Published, error) {
	return pub.PublishTx(ctx, tx, protocol.TopicRules{}, nil, hide, unhide)
}

// AdmitTx makes pubkeys members inside the caller's transaction (an operator's
// NIP-86 allowpubkey) and publishes their pending identity events, under
// rules, as Ingest does when a key becomes a member; it also shows again the
// events in unhide (see PublishTx). The caller commits and then announces the
// range, as with PublishTx. The outbox append is the plan's last statement.
func (pub *Publisher) AdmitTx(ctx context.Context, tx outbox.Batcher, rules protocol.TopicRules, pubkeys, unhide []string) (Published, error) {
	p := pub.newPlan(nil, rules)
	p.admitting = pubkeys
	p.unhideIDs = unhide
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return Published{}, fmt.Errorf("admit %d keys: %w", len(pubkeys), err)
	}
	return Published{Outcomes: p.outcomes, Range: r}, nil
}

// DryRunTx decides and writes events exactly as Ingest does, under the
// store's rules but in the caller's transaction, and appends nothing to the
// outbox: it returns how many outbox rows the batch would have appended
// instead. It is for dry runs (`cnctl import --dry-run`) whose transaction is
// rolled back: later batches in the same transaction see this one's events, as
// they would after a real import, and no outbox lock is taken, so the relay's
// writers are not held up.
func (s *Store) DryRunTx(ctx context.Context, tx outbox.Batcher, evs []*nostr.Event) ([]protocol.Verdict, int, error) {
	p := s.pub.newPlan(evs, s.Rules())
	if err := p.prepare(ctx, tx); err != nil {
		return nil, 0, fmt.Errorf("dry-run %d events: %w", len(evs), err)
	}
	var b pgx.Batch
	p.queueWrites(&b)
	queueRestorePlans(&b)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return nil, 0, fmt.Errorf("dry-run %d events: write events: %w", len(evs), err)
		}
	}
	return p.results, len(p.records), nil
}

// newPlan starts a plan of evs under rules with what the publisher shares.
func (pub *Publisher) newPlan(evs []*nostr.Event, rules protocol.TopicRules) *plan {
	p := newPlan(evs, pub.now(), rules)
	p.cache = &pub.members
	p.gate = pub.gate
	p.limits = pub.pending
	p.pendingN = pub.pendingRows.Load()
	partOf[*groupPart](p).groups = pub.groups.Load()
	partOf[*membershipPart](p).mship = pub.membership
	p.own = pub.own
	return p
}

// runTx loads, decides, writes and appends the outbox rows in tx.
func (p *plan) runTx(ctx context.Context, tx outbox.Batcher) (outbox.Range, error) {
	if err := p.prepare(ctx, tx); err != nil {
		return outbox.Range{}, err
	}
	var b pgx.Batch
	p.queueWrites(&b)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return outbox.Range{}, fmt.Errorf("write events: %w", err)
		}
	}
	r, err := outbox.Append(ctx, tx, p.records)
	if err != nil {
		return outbox.Range{}, err
	}
	var restore pgx.Batch
	queueRestorePlans(&restore)
	if err := tx.SendBatch(ctx, &restore).Close(); err != nil {
		return outbox.Range{}, fmt.Errorf("restore plan mode: %w", err)
	}
	return r, nil
}

// prepare loads, decides, publishes what became publishable and settles the
// plan: everything but the writes.
func (p *plan) prepare(ctx context.Context, tx outbox.Batcher) error {
	if err := p.load(ctx, tx); err != nil {
		return err
	}
	p.decide()
	// Keys that became members publish their pending versions: read what
	// deciding those needs, then decide them as if they had just arrived.
	if due := p.due(); len(due) > 0 {
		if err := p.loadPromoted(ctx, tx, due); err != nil {
			return err
		}
		p.promote(due)
	}
	return p.finish()
}
