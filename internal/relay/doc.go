// Package relay is the node's Nostr relay: a WebSocket server (NIP-01) with NIP-09,
// NIP-11, NIP-40, NIP-42 (when enabled), NIP-45 and NIP-70, in front of a Store.
//
// # Writes: group commit, then OK
//
// Every EVENT is admitted on its connection's reading turn (rate limits, auth
// rules, protocol.ValidateEvent including the signature, NIP-70). An ephemeral event
// (kinds 20000-29999) is fanned out to this process's matching subscriptions and
// answered OK at once; it is never stored and never reaches the outbox. Any other
// event goes to the batcher, which hands batches of up to BatchMaxEvents events, or
// whatever arrived within BatchMaxDelay, to one Store.Ingest call: one transaction
// ending with the outbox append (batched because the append holds the outbox
// lock to commit: see pkg/outbox/doc.go). The OK is sent only after that
// call returned, with the store's verdict; so OK true means committed. With
// IngestConcurrency 1 (the default) the batches are pipelined: a full batch
// starts while the previous one's COMMIT waits for the disk, and its reads
// wait on the server for that commit (outbox.WithTurn), so it decides on what
// the previous batch wrote (see batcher).
//
// # Live delivery: following the outbox
//
// Stored events reach live subscriptions only through the outbox, never from the
// local ingest path: the follower reads the outbox after the last seq it handled,
// loads the events of upsert rows (Store.Events) and fans them out. So every relay
// process sharing the database delivers every event, whichever process stored it,
// and only committed, visible events are ever delivered. The follower starts at the
// outbox head, wakes on NOTIFY cn_relay_outbox (Feed.Listen), on a local commit,
// and polls every second as a fallback; a failed read is retried from the same seq.
//
// Each run of adjacent outbox rows of one event is one delivery, with the seq of
// its first row; an event named again after other rows (a version that became
// effective again) is delivered again.
//
// A REQ is filed in the fan-out index before its query runs; the query reads the
// stored events and the outbox head in one snapshot (Reader.Read), and a
// live event whose outbox seq that snapshot holds is never sent, before EOSE or
// after: each matching event reaches a subscription exactly once, none is lost
// (see subscription).
//
// # Slow clients
//
// Each connection has at most one writer draining a send queue bounded in
// messages (SendQueueSize) and bytes (SendQueueBytes), which holds no memory while
// empty: a goroutine started while something is due, or, for the live fan-out,
// the fan-out's own goroutine, which writes to the socket without waiting and
// hands what the socket does not take to a writer goroutine (kickInline; the
// writer and its queue are the transport's, internal/relay/wsconn). The
// fan-out and the batcher's answers never wait for a socket: when a
// message would take a connection's queue past either limit, the client is sent
// (best effort) NOTICE "error: too slow, disconnecting" and is disconnected. Query
// results wait for room but leave a quarter of the queue to live traffic (see
// conn).
//
// # Shutdown
//
// Serve stops accepting connections when its context ends, flushes the pending
// batch so its clients get their OKs, drains each connection's queue and closes it
// with a close frame (1001), all within ShutdownTimeout.
package relay
