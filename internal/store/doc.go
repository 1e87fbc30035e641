// Package store keeps the relay's Nostr events in Postgres and feeds the outbox.
// It is the only writer of cn_relay.events, event_topics, event_tags,
// deletion_targets, members and pending_events; schema/events.go states what
// their rows mean to readers (visible, live, hidden, the scope rule).
//
// Three types share the work, so that nothing can reach a path it cannot run:
//
//   - Store (New) is the relay's: it ingests batches through the outbox
//     writer's group commit (Ingest), under the topic rules it was built with,
//     and sweeps expired and pending events. It needs a writer.
//   - Publisher (NewPublisher, or Store.Publisher to share the relay's member
//     cache and gate) publishes inside the caller's transaction: the node's
//     own events (PublishTx), hides (ModerateTx), admissions (AdmitTx). The
//     topic rules come with each call; it has no writer.
//   - Reader (NewReader, embedded in Store) answers queries and exports.
//
// Every batch is a plan in three phases, each in its own file: plan_load.go
// reads what the decisions need (locks first, one pipelined round trip),
// plan_decide.go decides (pure: topics, inheritance, person scope, effective
// versions, deletions, moderation, pending identity events),
// plan_write.go queues the writes; the outbox append comes last.
//
// The plan holds what every event needs. Two rooms decide inside the same
// transaction as parts (parts.go: one interface, called at each phase in
// order), each with what it loads and decides, and each the writer of its
// own tables, through its package's functions:
//
//   - groupPart (groups.go, package groups): NIP-29. Writes cn_relay.groups,
//     group_users, group_access and group_withheld (groups.QueueSave,
//     QueueListsDue, QueueWithhold), and stores the node's 39000-39005, 9000,
//     9001 and kind 5 through the plan like any event.
//   - membershipPart (membership.go, package membership): NIP-43. Writes
//     cn_relay.nip43_members (registers and each member's roles) and
//     nip43_roles, and stores the node's 13534, 8000, 8001 and 33534 through
//     the plan. (membership.Service writes the claims and the pending join
//     requests outside the store.)
//
// A new NIP's room is a new part: plan.load, decideEvent and queueWrites loop
// over the parts and need no change.
//
// Promises:
//
//   - One transaction per Ingest (or Import) batch: events, topics, tags, effective-version
//     markers, NIP-09 deletions and their tombstones are written together, and the
//     outbox append (pkg/outbox) is the transaction's last statement. Results are
//     returned only after the commit. The topic and tag rows of an event exist
//     only together with the event (no foreign keys enforce it since migration
//     0004: this store is their only writer).
//   - Import (cnctl import's batches) decides and writes exactly what Ingest
//     does, in the same order within the transaction; only the new rows of
//     events, event_topics and event_tags go in with COPY instead of INSERT
//     ... unnest (plan.copyWrites), and fail the same way on a duplicate.
//   - Replaceable (0, 3, 10000-19999) and addressable (30000-39999) events: the
//     effective version of a key is the newest created_at, ties broken by the lowest
//     id. Older versions are stored but never effective; an `upsert` outbox row (with
//     effective_key) is written whenever the effective version changes, including
//     when deleting the effective version promotes the newest remaining one.
//   - Tag rows (event_tags) exist only for regular events and for the effective
//     version of a key: the batch that supersedes, deletes or hides a version
//     deletes its rows, a version stored already superseded gets none, and one
//     that becomes effective again gets them back from its stored JSON. A #x
//     filter only ever matches visible events, so a superseded version's rows
//     would only cost space: a node-signed member list (39002) re-signed for
//     each new member would otherwise keep every earlier list's p tags, storage
//     quadratic in the group's size (issue 47). A client's superseded version's
//     events row (its JSON) stays: "duplicate:" answers and promotion after a
//     deletion need it.
//   - The node's own state is not kept once superseded: a replaceable or
//     addressable version signed by the node key (Groups.Policy.Node,
//     Membership.Self: 39000-39003, 39005, 13534, 33534) or by a key of
//     Publisher.SetOwnState (trust's provider: 30382, its kind 0) that stops being
//     effective because a newer one is (not because it is deleted or hidden)
//     loses its events and event_tags rows in the same transaction, and one
//     that arrives superseded already is not stored (answered OK, as a late
//     version is); its event_topics rows stay, so that NIP-29 timeline
//     references to it still resolve (a topic row alone matches no query). That
//     state is rebuilt from the moderation events (9000-9022, 8000/8001 ...),
//     never from old versions. The outbox rows that named it stay: an upsert
//     row with an effective key whose event is not in cn_relay.events is
//     "nothing to apply" for every consumer (the bridge publishes it marked
//     removed, outboxmsg.HeaderRemoved; the indexer, the moderator, trust and
//     the relay's follower skip an event they cannot load), and a newer upsert
//     row of the same key follows it.
//   - NIP-09: a kind 5 event soft-deletes its author's own targets ('e' ids and 'a'
//     addresses, the latter up to the deletion's created_at) and writes one `delete`
//     outbox row (reason nip09) per topic of each visible target. Its targets are
//     remembered, so a target that arrives later is refused ("blocked: ..."), and a
//     deleted event never comes back, even when re-submitted.
//   - NIP-40: expired events are invisible to queries at once; Sweep marks them
//     deleted (reason expiration) and writes `delete` outbox rows, one relay at a
//     time when several share the database.
//   - Topics (protocol.TopicRules) are decided in the ingest transaction, from
//     what is stored and what came earlier in the batch: own `t` tags; else the
//     topics of the referenced events (e, E, a, A, q), enabled ones only; identity
//     events get protocol.NodeTopic, from members only unless the rules say any
//     author. The chosen topics go into event_topics and the outbox alike, so a
//     deletion's `delete` rows name the inherited topics too. The first event an
//     author stores in a community topic makes them a member (cn_relay.members).
//   - Queries only ever return visible events: effective, not deleted, not expired.
//   - Concurrent batches (several relays on one database) serialise on
//     transaction-level advisory locks per effective key, taken in sorted order.
//
// Events of exempt kinds (deletions whose targets are not here) that have no
// topic of their own take the person scope (protocol.TopicRules). Events
// without a topic (any event that has none when the relay does not require
// topics, and exempt events stored before that rule) are stored and queryable
// but produce no outbox rows: consumers follow topics.
package store
