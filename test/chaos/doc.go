// Package chaos holds the node's chaos test (chaos_test.go, community_test.go):
// the relay, the indexer, the moderator and trust run as real processes under
// their least-privilege roles while eight WebSocket clients publish and delete
// notes (NIP-09) and three community clients publish follow lists in several
// versions and delete the newest (so that the version before it becomes
// effective again: `A upsert, B upsert, B delete, A upsert` in the outbox),
// marker notes for a label rule (some deleted by their authors), reactions,
// reports reaching and not reaching a hide threshold, and a Sybil ring's follow
// lists, and one group client (NIP-29: two groups created, joins, leaves,
// posts with h, the admin's 9005 deletes), each message retried until it is
// answered. The test SIGKILLs and
// restarts the four processes and terminates their Postgres connections on a
// seeded random schedule. Afterwards it checks what the node promises:
//
//   - every event answered OK true is stored;
//   - nothing is stored that was never sent (but the node's own labels,
//     retractions and assertions), or that was refused (OK false with a
//     definitive reason: "error:" answers are transient, and the client retries
//     them like a dropped connection);
//   - the outbox holds exactly one upsert row per (regular event, topic) and one
//     delete row per (deleted regular event, topic), and no other rows; the last
//     row of an effective replaceable version is an upsert;
//   - every acknowledged deletion deleted its target, and nothing else is
//     deleted but the hides;
//   - once every consumer has applied the whole outbox, the search index holds
//     exactly the live notes;
//   - one live label per live marker note and none for a deleted one; exactly the
//     notes with three distinct reporters hidden, each with one live label;
//   - each key's trust `followers` equals the number of current follow lists
//     naming it, in the graph and in the NIP-85 assertions; the Sybil ring and its
//     target are unranked, the community ranked;
//   - the groups' live state equals the projection of their stored events;
//     group posts' outbox rows are in their group's scope only; each
//     acknowledged 9005 hid its target and no other group post is hidden;
//     each group's search holds exactly its live posts, a rule scoped to one
//     group labels exactly its matching posts, and trust's graph holds
//     exactly the live group posts;
//   - a trust replay from offset 0 (what `cnctl reset-offset --consumer trust-v1
//     --to-earliest` does) ends in the same graph, ranks and assertions, and
//     passes the same checks.
//
// An event that was sent but never answered (the process died in between) may
// or may not be stored; the retry makes that rare, since a resent stored event
// is answered "duplicate:" with OK true.
//
// CN_CHAOS_SEED replays a schedule (the seed is logged); -short shrinks the run.
package chaos
