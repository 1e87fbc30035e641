// Package consumer runs a named consumer of the outbox: it follows seq from
// cn_relay.consumer_offsets, hands rows to a Handler in batches and commits the
// offset after them.
//
// # Promises
//
//   - Order: rows reach the handler in ascending seq order, in batches of at most
//     Config.BatchSize, each batch exactly once per successful offset commit.
//   - Same-transaction effects: Handle receives the transaction that then advances
//     the offset. Effects written through it commit atomically with the offset, so a
//     crash, a retry or a takeover never applies them twice or loses them.
//   - Durability: consumer transactions commit asynchronously by default
//     (Config.SynchronousCommit). A crash may then lose the last few milliseconds
//     of offset commits together with their same-transaction effects; both are
//     applied again from the outbox, so nothing is lost or doubled. A batch whose
//     handler appended outbox rows (outbox.Append) commits synchronously anyway:
//     others read those rows as soon as they are visible.
//   - External effects: effects outside the database happen before the offset
//     commit and are repeated if that commit is lost (at-least-once); they must be
//     idempotent by event_id and version-gated (compare created_at or seq).
//   - One active instance per name: an instance works only while it holds the
//     consumer's lease (owner_id, lease_expires_at, with database time). Others wait
//     as standbys and take over once the lease has expired (at most LeaseTTL plus one
//     standby poll after the active one dies or stalls; at once after a clean stop).
//     Every takeover increments owner_generation, and each offset commit checks the
//     generation in the same transaction as the handler's effects: an instance that
//     was paused or cut off and lost its lease can never commit again (fencing).
//   - Wake-ups: LISTEN cn_relay_outbox on a dedicated connection wakes the consumer;
//     it also polls, backing off with jitter from MinPollInterval to PollInterval
//     while idle, and re-polls at once after every (re)connect. The connection is
//     re-established with back-off after Postgres restarts or kills it.
//   - Failures: a failing batch is retried with exponential back-off and jitter.
//     After MaxAttempts, the batch is split and its rows retried one by one; a row
//     that still fails MaxAttempts times is either parked (PolicyPark: copied with its
//     error into cn_relay.consumer_dead_letters in the same transaction that moves the
//     offset past it) or halts the consumer (PolicyHalt: Run returns ErrHalted and the
//     offset stays before the row). Rows are never skipped silently. Database errors
//     that are not the handler's (connection lost, server restarting) are retried
//     without limit and never park a row.
//   - Shutdown: cancelling Run's context abandons the batch in flight (its
//     transaction rolls back as a whole) unless its COMMIT was already sent,
//     which is then awaited (a commit cancelled while it waits for a synchronous
//     standby would stay on the primary alone), and releases the lease so that a
//     standby can take over at once.
//
// The package owns the DDL of its tables (Schema, schema.sql; the node's
// migrations create the same objects, checked by a test) and is the only code
// that reads or writes cn_relay.consumer_offsets: other packages register a
// consumer (Register), read an offset (Offset, LockOffset) and let retention
// see the offsets (Offsets, an outbox.Readers) through it.
//
// Parked rows return through `cnctl dlq retry`, which marks them; the active
// consumer re-applies marked rows when it is idle and removes them on success.
package consumer
