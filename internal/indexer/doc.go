// Package indexer keeps the node's search index: the index-v1 consumer of the
// outbox, the search queries behind the HTTP API, and gap-free rebuilds.
//
// Promises:
//
//   - A document exists exactly for each visible event of an indexed kind: the
//     effective version of its replaceable or addressable key, not deleted by
//     NIP-09, not swept by NIP-40 (expired documents are also hidden at query time
//     until the sweep's delete row arrives). document_id = event_id.
//   - Applying outbox rows is idempotent and order-insensitive: a row only names an
//     event, and the document is derived from that event's current state in
//     cn_relay.events. Applying a row twice, replaying from any offset, or applying
//     rows for an event whose state changed since, all end in the same index. A
//     live-built index equals one rebuilt from offset 0 (tested).
//   - So a batch is reduced to the set of event ids its rows name, whatever their
//     order and op. Elsewhere only rows adjacent in seq for the same event may be
//     collapsed; here any may, because no row's op is applied: the outbox shape
//     `A upsert, B upsert, B delete, A upsert` (version A replaced by B, B
//     deleted, A effective again) in one batch leaves A's document (tested).
//   - A document's topics are its event's scope rows: topics, or the scope
//     GROUP:<id> of a NIP-29 group event (groups.Scope), so /v1/search?group=
//     and NIP-50 REQs with #h find a group's events through the same GIN index
//     as the text. A group's 9005 is a hide (a `delete` row, reason
//     moderation): the document goes like any hidden event's.
//   - The index writes of a batch commit in the consumer's transaction, together
//     with the offset (pkg/consumer).
//   - A rebuild (Rebuild, `cnctl reindex`) fills a second table while searches keep
//     using the current one, then switches the two in one transaction that excludes
//     the live consumer's batches (a transaction-level advisory lock, shared by
//     every batch, exclusive at the switch). The rebuild never moves the index-v1
//     offset of a consumer that exists; the live consumer stays the only writer of
//     that offset.
package indexer
