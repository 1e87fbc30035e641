// Package outboxmsg is the wire format of an outbox row as a NATS message: what
// the bridge (internal/bridge) publishes and what a stream consumer
// (pkg/consumer, StreamSource) reads back. Both sides use only this package,
// so the two cannot drift apart.
//
// A message carries the row in headers: Nats-Msg-Id and Cn-Seq (the seq in
// decimal), Cn-Op, Cn-Kind, Cn-Event-Id, Cn-Topic (the topic id as stored),
// Cn-Created-At (unix seconds), Cn-Ingested-At (RFC 3339, nanoseconds),
// Cn-Reason (delete rows) and Cn-Effective-Key (replaceable and addressable
// events). The payload of an upsert row is the signed event as NIP-01 JSON;
// a delete row has none.
//
// An upsert row whose event is no longer stored (a superseded version of the
// node's own state, removed when a newer one became effective: see
// internal/store) is published with no payload and the header Cn-Removed:
// superseded. It keeps the stream a 1:1 image of the outbox (its Nats-Msg-Id
// is the row's seq, chained like any other) and is nothing to apply: a newer
// upsert row of the same effective key follows it in the stream.
package outboxmsg

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// Message headers besides Nats-Msg-Id (the seq).
const (
	HeaderSeq          = "Cn-Seq"
	HeaderOp           = "Cn-Op"
	HeaderReason       = "Cn-Reason"
	HeaderKind         = "Cn-Kind"
	HeaderEventID      = "Cn-Event-Id"
	HeaderTopic        = "Cn-Topic"
	HeaderEffectiveKey = "Cn-Effective-Key"
	HeaderCreatedAt    = "Cn-Created-At"
	HeaderIngestedAt   = "Cn-Ingested-At"
	// HeaderRemoved on an upsert row without payload: its event is gone
	// (RemovedSuperseded), nothing to apply.
	HeaderRemoved = "Cn-Removed"
)

// RemovedSuperseded is HeaderRemoved's value: the row's event was a superseded
// version of the node's own state and was removed from cn_relay.events.
const RemovedSuperseded = "superseded"

// Encode returns the message of row r on subject; event is the signed event
// JSON, ignored for a delete row. An upsert row with a nil event is encoded as
// removed (HeaderRemoved). The caller adds the publish options (Nats-Msg-Id,
// the chain).
func Encode(subject string, r outbox.Row, event []byte) *nats.Msg {
	id := strconv.FormatInt(r.Seq, 10)
	h := nats.Header{}
	h.Set(HeaderSeq, id)
	h.Set(HeaderOp, string(r.Op))
	h.Set(HeaderKind, strconv.Itoa(r.Kind))
	h.Set(HeaderEventID, r.EventID)
	h.Set(HeaderTopic, r.TopicID)
	h.Set(HeaderCreatedAt, strconv.FormatInt(r.CreatedAt, 10))
	h.Set(HeaderIngestedAt, r.IngestedAt.UTC().Format(time.RFC3339Nano))
	if r.Reason != "" {
		h.Set(HeaderReason, string(r.Reason))
	}
	if r.EffectiveKey != "" {
		h.Set(HeaderEffectiveKey, r.EffectiveKey)
	}
	msg := &nats.Msg{Subject: subject, Header: h}
	if r.Op == outbox.OpUpsert {
		msg.Data = event
		if event == nil {
			h.Set(HeaderRemoved, RemovedSuperseded)
		}
	}
	return msg
}

// ErrMalformed is wrapped by Decode's errors: the message is not an outbox row.
var ErrMalformed = errors.New("not an outbox row message")

// Decode reads the row a message's headers carry. An upsert row must have a
// payload (the event JSON, returned as is, not verified), unless it is marked
// removed (HeaderRemoved: RemovedSuperseded, no payload): then the event is
// nil, and the row is nothing to apply.
func Decode(h nats.Header, data []byte) (outbox.Row, []byte, error) {
	bad := func(what string) (outbox.Row, []byte, error) {
		return outbox.Row{}, nil, fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	var r outbox.Row
	var err error
	if r.Seq, err = strconv.ParseInt(h.Get(HeaderSeq), 10, 64); err != nil || r.Seq <= 0 {
		return bad(fmt.Sprintf("%s %q", HeaderSeq, h.Get(HeaderSeq)))
	}
	if id := h.Get(nats.MsgIdHdr); id != h.Get(HeaderSeq) {
		return bad(fmt.Sprintf("%s %q differs from %s %q", nats.MsgIdHdr, id, HeaderSeq, h.Get(HeaderSeq)))
	}
	r.Op = outbox.Op(h.Get(HeaderOp))
	if !r.Op.Valid() {
		return bad(fmt.Sprintf("%s %q", HeaderOp, r.Op))
	}
	if r.Kind, err = strconv.Atoi(h.Get(HeaderKind)); err != nil {
		return bad(fmt.Sprintf("%s %q", HeaderKind, h.Get(HeaderKind)))
	}
	if r.CreatedAt, err = strconv.ParseInt(h.Get(HeaderCreatedAt), 10, 64); err != nil {
		return bad(fmt.Sprintf("%s %q", HeaderCreatedAt, h.Get(HeaderCreatedAt)))
	}
	if r.IngestedAt, err = time.Parse(time.RFC3339Nano, h.Get(HeaderIngestedAt)); err != nil {
		return bad(fmt.Sprintf("%s %q", HeaderIngestedAt, h.Get(HeaderIngestedAt)))
	}
	r.EventID, r.TopicID = h.Get(HeaderEventID), h.Get(HeaderTopic)
	if r.EventID == "" || r.TopicID == "" {
		return bad("no event id or topic")
	}
	r.EffectiveKey = h.Get(HeaderEffectiveKey)
	r.Reason = outbox.Reason(h.Get(HeaderReason))
	if r.Op == outbox.OpUpsert {
		if removed := h.Get(HeaderRemoved); removed != "" {
			if removed != RemovedSuperseded || len(data) != 0 {
				return bad(fmt.Sprintf("upsert row %d: %s %q with %d bytes of payload", r.Seq, HeaderRemoved, removed, len(data)))
			}
			return r, nil, nil
		}
		if len(data) == 0 {
			return bad(fmt.Sprintf("upsert row %d without its event", r.Seq))
		}
		return r, data, nil
	}
	return r, nil, nil
}
