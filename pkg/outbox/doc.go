// Package outbox is the only code that writes to or reads from cn_relay.events_outbox,
// the ordered change feed from the relay to the node's consumers.
//
// It owns the DDL of its tables (Schema, schema.sql); the node's migrations
// create the same objects, and a test keeps the two identical. It renders no
// text for people: its reports are data (PruneReport marshals to JSON).
//
// # Ordering
//
// Append takes a transaction-level advisory lock (LockKey) and then inserts its rows
// in one statement; it must be the last statement of the caller's transaction before
// COMMIT. Postgres holds that lock until the transaction's commit is visible, and the
// seq sequence has CACHE 1, so a transaction that draws higher seq values can only
// become visible after every transaction that drew lower ones has committed or rolled
// back. In plain words: once a reader can see seq N, every row with seq < N that will
// ever exist is already visible. A reader may therefore follow the outbox with nothing
// but "WHERE seq > last_seq ORDER BY seq" and never miss a row.
//
// A caller that pipelines its writes (the relay's group commit: the next
// transaction begins while the previous one's COMMIT waits for the disk) gives
// each of them the same turn (WithTurn): a transaction lock taken before its
// first statement and held to its end, so that each transaction reads only
// after the previous one committed. The append lock is taken as before, under
// the turn, right before the insert.
//
// Within one Append the rows receive increasing seq values in the order of the slice.
// Seq values are not gap-free: a rolled-back transaction consumes its values, and the
// gap it leaves is permanent. Readers must not wait for gaps to fill.
//
// # Delivery
//
// The outbox is the source of truth; NOTIFY is only a wake-up. After a transaction that
// appended rows has committed, Notifier sends NOTIFY cn_relay_outbox with the highest
// seq it knows of as payload, at most once per MinInterval per process. A notification
// is never sent before the commit of the rows it announces, so a consumer woken by it
// will find them. Notifications can be lost (a dropped connection, a crashed process):
// consumers poll as a fallback and re-read after every reconnect.
//
// Consumers get at-least-once delivery: a row is delivered again if a consumer's
// offset commit is lost, so every side effect must be idempotent by event_id.
//
// # Retention
//
// The table is range-partitioned by seq (cn_relay.outbox_partitions lists the
// partitions). EnsurePartitions keeps whole partitions ready ahead of the head;
// Writer calls it in the background. Prune removes a prefix of the outbox: whole
// partitions by DROP TABLE, then a bounded DELETE in the oldest remaining one, never
// a row some registered reader still needs (PruneOptions.Readers: the node's
// consumers through pkg/consumer.Offsets; unless forced) and never the head
// row. cn_relay.outbox_retention.pruned_through records how far it went.
package outbox
