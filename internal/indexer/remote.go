package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store/mirror"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// RemoteHandler is the index-v1 handler of an indexer on another host: it
// follows the bridge's stream (consumer.NewStream) into a database of its own
// (the node's migrations applied, no relay writing to it) and serves searches
// from there.
//
// The index is derived exactly as the local Handler derives it, from the
// events' state in cn_relay.events and cn_relay.event_topics; here those
// tables hold a mirror that the messages keep, in the consumer's transaction,
// before the documents are derived (so the mirror, the documents and the
// offset commit together):
//
//   - upsert row: the event (from the message's payload; its id must be the
//     row's) is stored if new and is live again (undeleted: an unhidden event);
//     for a replaceable or addressable event it becomes its key's only
//     effective version (the outbox writes an upsert row exactly when a key's
//     effective version changes); the row's topic is added to the event's
//     scope topics.
//   - delete row: the event is deleted with the row's reason.
//   - an upsert row marked removed (consumer.Message.Removed: a superseded
//     version of the node's own state, gone before the bridge published it):
//     nothing; the newer version's row follows.
//
// The stream is not trusted with content: an upsert's event is verified (its
// id is the hash of its content, its signature is its author's) before
// anything of it is written, as the relay verified it before storing it. A
// message that fails is an error of the batch, so the consumer retries it and
// then halts before it (or parks it, under consumer.PolicyPark): it is never
// mirrored, indexed or served by /v1/search, and the halt says why. Delete
// rows carry no signed event and are trusted as they come: a forged one can
// only hide an event from search, never add or change text.
//
// Only events of indexed kinds are mirrored. At the same offset the mirror's
// live events, their effective versions and scope topics equal the
// primary's for those kinds, so the documents are the local indexer's
// (tested against it, with kills and redeliveries). A document whose event
// gained a topic in a later batch (an event's topic rows can straddle two
// batches) is derived again.
type RemoteHandler struct {
	Handler
}

var _ consumer.StreamHandler = (*RemoteHandler)(nil)

// HandleMessages mirrors msgs and derives the documents of their events.
func (h *RemoteHandler) HandleMessages(ctx context.Context, tx consumer.Tx, msgs []consumer.Message) error {
	events, err := h.verified(msgs)
	if err != nil {
		return err
	}
	var b pgx.Batch
	var ids, upserted []string
	for i, m := range msgs {
		if !h.Kinds[m.Kind] || m.Removed {
			continue // (Removed: a superseded version of the node's state, nothing to apply)
		}
		ids = append(ids, m.EventID)
		if m.Op == outbox.OpDelete {
			mirror.QueueDelete(&b, m.EventID, string(m.Reason))
			continue
		}
		mirror.QueueUpsert(&b, events[i], m.TopicID, m.EffectiveKey, m.IngestedAt)
		upserted = append(upserted, events[i].ID)
	}
	if len(ids) == 0 {
		return nil
	}
	if len(upserted) > 0 {
		b.Queue(`DELETE FROM `+documentsTable+` d WHERE d.event_id = ANY($1)
			AND d.topics IS DISTINCT FROM ARRAY(SELECT t.topic_id FROM cn_relay.event_topics t
			                                    WHERE t.event_id = d.event_id AND t.scope ORDER BY t.topic_id)`, upserted)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("mirror events: %w", err)
	}
	return h.apply(ctx, tx, documentsTable, ids, true)
}

// verified parses and verifies the events of msgs' upsert rows of indexed
// kinds, on every CPU (a signature check costs more CPU than indexing the
// event), and returns them by message (nil for the other rows). A payload
// repeated in the batch (one row per topic of an event) is checked once. The
// error is the first message's in seq order that is not its row's event or
// not what its author signed.
func (h *RemoteHandler) verified(msgs []consumer.Message) ([]*nostr.Event, error) {
	events := make([]*nostr.Event, len(msgs))
	errs := make([]error, len(msgs))
	// same[i] is the earlier message with msgs[i]'s payload, or -1.
	same := make([]int, len(msgs))
	firstOf := map[string]int{}
	for i, m := range msgs {
		same[i] = -1
		if !h.Kinds[m.Kind] || m.Op == outbox.OpDelete || m.Removed {
			continue
		}
		if j, ok := firstOf[m.EventID]; ok && bytes.Equal(msgs[j].Event, m.Event) {
			same[i] = j
			continue
		}
		firstOf[m.EventID] = i
	}
	check := func(i int) {
		m := msgs[i]
		if !h.Kinds[m.Kind] || m.Op == outbox.OpDelete || m.Removed || same[i] >= 0 {
			return
		}
		var ev nostr.Event
		if err := json.Unmarshal(m.Event, &ev); err != nil {
			errs[i] = fmt.Errorf("seq %d: event JSON: %w", m.Seq, err)
			return
		}
		if ev.ID != m.EventID || ev.Kind != m.Kind {
			errs[i] = fmt.Errorf("seq %d: the payload is event %s of kind %d, the row names %s of kind %d", m.Seq, ev.ID, ev.Kind, m.EventID, m.Kind)
			return
		}
		if r := protocol.VerifyEvent(&ev); r != "" {
			errs[i] = fmt.Errorf("seq %d: event %s is not what its author signed (%s): the stream's message was altered", m.Seq, ev.ID, r)
			return
		}
		events[i] = &ev
	}
	workers := min(runtime.GOMAXPROCS(0), (len(msgs)+verifyChunk-1)/verifyChunk)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(msgs); i += workers {
				check(i)
			}
		}()
	}
	wg.Wait()
	for i, j := range same {
		if j >= 0 {
			events[i], errs[i] = events[j], errs[j]
		}
	}
	return events, firstError(errs)
}

// verifyChunk is the fewest messages worth a goroutine of their own in
// verified.
const verifyChunk = 16

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
