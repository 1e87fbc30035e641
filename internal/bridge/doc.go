// Package bridge publishes the outbox to a NATS JetStream stream: the consumer
// bridge-v1 (pkg/consumer) reads cn_relay.events_outbox and publishes every row,
// in seq order, to one stream of the node.
//
// # Messages
//
// A row becomes one message on the subject <prefix>.<token>, where token is the
// row's topic (TopicToken): a topic made only of [a-z0-9-] is its own token;
// any other is "_" followed by the lower-case, unpadded base32 of its UTF-8
// bytes; the person scope (protocol.NodeTopic) is the reserved token NODE, which
// no encoded or plain token can equal. Headers and payload are the format of
// pkg/outboxmsg (the row in headers, Nats-Msg-Id = seq, the signed event JSON
// of an upsert row as payload), loaded from cn_relay.events, so a remote host
// can verify it without a query to the primary. A delete row has an empty
// payload: its headers name the event and the reason, and the event is no
// longer visible. An upsert row with an effective key whose event is no longer
// in cn_relay.events (a superseded version of the node's own state, which the
// store removes when a newer one becomes effective: issue 47) is published
// with an empty payload and the header Cn-Removed: superseded
// (outboxmsg.HeaderRemoved): the stream stays one message per outbox row, a
// lagging, restarted or replayed bridge does not halt on it, and readers treat
// it as nothing to apply (a newer version of the key follows). A missing
// event of any other upsert row halts the bridge (events are never removed
// otherwise).
//
// Who may read the stream: every row is published, whoever may read its
// event on the relay: DMs (kinds 4, 1059) and the events of private NIP-29
// groups (subject: the token of GROUP:<id>) included. The stream is an
// operator-side feed for the node's own services, as trusted as the
// database (docs/groups.md); untrusted parties must not get access to it.
//
// # Promises
//
//   - Order: the stream holds the rows in ascending seq order; message N+1 of
//     the stream is the outbox row that follows message N.
//   - Exactly once, beyond the duplicate window: each message carries
//     Nats-Msg-Id = seq and Nats-Expected-Last-Msg-Id = the seq published before
//     it (the first message of an empty stream: Nats-Expected-Last-Sequence 0).
//     The server stores it only when the stream's last message is that
//     predecessor, so a resend of a stored row is rejected (or acknowledged as
//     a duplicate inside the window) and a lost row stops every later publish
//     instead of leaving a gap.
//   - The stream is the truth for what was published: before its first batch,
//     and after any failed publish, the bridge reads the stream's last message
//     id, skips the rows up to it and commits the offset past them. The offset
//     in Postgres may lag the stream after a crash, never lead it: it commits
//     only after the server acknowledged every row of its batch.
//   - One writer: the chain needs exactly one writer per stream. The consumer's
//     lease makes one bridge active and others standbys. A fenced bridge that
//     still publishes can store only the row that comes next in the chain,
//     which is the message the active one would store (same id, headers and
//     payload); anything else it sends is rejected, and it can never commit an
//     offset.
//   - Retention: bridge-v1 is a registered consumer, so outbox retention never
//     drops a row it has not published.
//   - Outages: publish failures (server down, timeouts) are retried inside the
//     batch with back-off for as long as it takes; they never count toward the
//     consumer's halt policy. A broken chain does: when the stream's last id is
//     below the bridge's offset (rows the offset counts as published are not in
//     the stream) the batch fails with ErrChainBroken and, after the consumer's
//     attempts, the bridge halts (cn_bridge_chain_broken = 1). It never skips.
//   - Poison rows: a row whose message the server can never store, because it
//     is larger than the server's max_payload (checked by the client before it
//     sends) or the stream's max_msg_size (error 10054), fails its batch with
//     ErrTooLarge at once, without the back-off retries of an outage;
//     cn_bridge_too_large_seq names it. The consumer's attempts then find it
//     (the rows before it are published and committed) and the bridge halts on
//     it: Run returns consumer.ErrHalted and the reason (seq, event id, the
//     limit to raise) is in cn_relay.consumer_offsets, shown by cnctl status,
//     cnctl dlq list --consumer bridge-v1 and the status page (alert
//     CNConsumerHalted). The operator raises the limit and restarts the bridge,
//     which publishes the row and goes on. It is neither parked nor replaced by
//     a tombstone: parking would leave a hole in the stream (its message ids
//     would no longer equal the outbox seqs), and a tombstone would make every
//     remote consumer skip an event the local ones apply, so a remote indexer
//     would differ from the local one for good. The limit is configuration, not
//     data: the relay's default message limit (128 KiB) is well below NATS's
//     default max_payload (1 MiB), so only a NATS limit below the largest event
//     the node accepts can halt the bridge, and the fix is to raise it. An operator who
//     chooses the hole anyway moves the offset past the row (cnctl
//     reset-offset --consumer bridge-v1 --to-seq N --execute); the next row is
//     chained to the stream's last message, so the chain check still holds.
//   - An empty stream starts at the first row the bridge publishes (its offset
//     plus one, or the oldest row the outbox still holds).
package bridge
