// Package replica serves a relay's reads (REQ, COUNT, NIP-50 search) from
// Postgres streaming replicas, and everything else from the primary.
//
// Promises:
//
//   - Health: every check interval each replica is measured: its outbox head
//     (the highest seq it has replayed) is compared with the primary's
//     outbox, and its lag is the age of the oldest primary outbox row it does
//     not hold yet (0 when it holds them all, whatever the time since the last
//     write, unlike pg_last_xact_replay_timestamp on an idle node). A replica
//     that does not answer, or lags more than MaxLag, is not used until a
//     later check finds it well; a failed read marks it down at once. State
//     changes are logged and exported (cn_relay_replica_usable).
//   - Spread: reads go round robin to the usable replicas; with none usable
//     the primary serves them.
//   - Never a failed read because of a replica: a read that fails on a
//     replica (down, or cancelled by WAL replay: SQLSTATE 40001 "canceling
//     statement due to conflict with recovery") is retried once on another
//     usable replica, else on the primary, and a second replica failure goes
//     to the primary (cn_relay_read_retries_total). Only the caller's own
//     deadline or cancellation ends a read early.
//   - Freshness: a replica's REQ snapshot may lag the primary. Set's Read
//     says so (readpath.Result.Source is readpath.Replica), so the relay
//     makes the stored part, with the primary's window and snapshot reads
//     (relay.Primary: the primary's store), the primary's answer at the primary's
//     outbox head read after the REQ arrived (relay.Relay's handoff): each
//     filter's newest Limit events visible there, pages that deletions or
//     replacements since left short refilled from the primary; every later
//     matching event then arrives live exactly once. COUNT answers from a
//     replica are as old as its lag (at most MaxLag once checked).
//
// Writes, AUTH state, bans, the outbox follower, live event loads and
// NIP-77 stay on the primary.
package replica
