// Package chaos holds the node's chaos test (chaos_test.go): the relay and the
// indexer run as real processes under their least-privilege roles while eight
// WebSocket clients publish and delete (NIP-09), retrying each message until it is
// answered, and the test SIGKILLs and restarts both processes and terminates their
// Postgres connections on a seeded random schedule. Afterwards it checks what the
// node promises:
//
//   - every event answered OK true is stored;
//   - nothing is stored that was never sent, or that was refused (OK false with a
//     definitive reason: "error:" answers are transient, and the client retries
//     them like a dropped connection);
//   - the outbox holds exactly one upsert row per (event, topic) and one delete row
//     per (deleted event, topic), and no other rows;
//   - every acknowledged deletion deleted its target, and nothing else is deleted;
//   - once the indexer's offset reaches the outbox head, its search index holds
//     exactly the live events.
//
// An event that was sent but never answered (the relay died in between) may or may
// not be stored; the retry makes that rare, since a resent stored event is
// answered "duplicate:" with OK true.
//
// CN_CHAOS_SEED replays a schedule (the seed is logged); -short shrinks the run.
package chaos
