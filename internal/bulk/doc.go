// Package bulk moves a community's events between relays as JSON Lines (one
// NIP-01 event object per line, the format of `strfry export` and `nak`):
// Importer stores a file through the relay's own rules, Export writes what a REQ
// would return.
//
// Import promises:
//
//   - Every line gets the checks an EVENT message gets from the relay, except
//     those of a connection (rates, AUTH) and the rank gate, in the order of the
//     relay's admission chain (internal/admission): parsing
//     (protocol.ParseClientMessage on the line wrapped as ["EVENT", <line>], so
//     the message size limit, UTF-8 and field types apply),
//     protocol.ValidateEvent with the configured limits and topic rules (id and
//     signature included), the management policy (banned pubkeys and events,
//     accepted kinds) and NIP-70 (a protected event is refused: no author
//     authenticated for it). Ephemeral events are never
//     stored. Events that pass are stored with store.Import, the relay's own
//     ingest path (store.Ingest's plan, decisions and transaction, under the
//     same store rules) that writes the new event, topic and tag rows with
//     COPY: topics (own, inherited, node-wide identity events), replaceable
//     and addressable versions, NIP-09 deletions and tombstones, NIP-40
//     expiration and the outbox rows (appended last, in the batch's
//     transaction, in seq order) are decided and written there.
//   - Parsing and signature checks run on every CPU (one worker of several
//     pauses while a batch is being stored if a whole batch is already checked,
//     so the one serial stage does not wait for a CPU); storing runs on one
//     connection, one transaction per batch, batches in file order. So an event
//     sees every event before it in the file, stored or earlier in its batch,
//     exactly as if a client had published the file line by line and waited for
//     each OK.
//   - One exception to file order, because a live relay's clients would simply
//     publish again: an event refused only for what was not stored yet (a reply
//     or reaction whose referenced event comes later in the file, so it has no
//     topic to inherit; a profile or list from an author whose first post comes
//     later) is kept and tried again after the whole file, in file order, until
//     a pass stores nothing more. Only what is still refused then is reported.
//   - A refused line (bad JSON, bad signature, a rule) is reported with its line
//     number and never stops the import; a duplicate counts as a duplicate, not
//     a refusal; an identity event whose author is still not a member when the
//     import ends counts as pending (it waits for the author's first post), not
//     as accepted. Only an operational error (unreadable input, the database)
//     stops it, after the batches committed so far.
//   - After a real import, NOTIFY cn_relay_outbox '<head seq>' wakes the live
//     consumers, as the relay does after its commits. A dry run writes through
//     the same decisions inside one transaction that is rolled back at the end,
//     without touching the outbox (store.DryRunTx).
//
// Export promises: the visible events matching one NIP-01 filter (effective,
// not deleted, not expired; #t matches own t tags as in a REQ), oldest first,
// from one consistent snapshot, streamed with flat memory (store.Export).
// Importing an export into an empty node stores the same visible events.
package bulk
