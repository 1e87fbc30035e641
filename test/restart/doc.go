// Package restart holds the relay's restart test under load
// (restart_test.go): bin/relay runs as a real process with --reuse-port while
// clients publish continuously and hold a subscription each, and the relay is
// restarted the way docs/operations.md tells operators to (start the new
// process with the same configuration, wait until it serves, SIGTERM the old
// one, wait for it to exit). Clients reconnect when their connection closes
// and resubscribe with `since` (the newest created_at they saw, minus a
// margin). It checks what issue 52 promises:
//
//   - no connection attempt refused: every dial succeeds, the reconnects and
//     those of clients that connect and leave all the time;
//   - every connection the old process ends gets a close frame with 1012
//     (service restart), none is cut;
//   - no OK true lost: every acknowledged event is in Postgres, and every
//     client received every acknowledged event (live or in the stored part of
//     its resubscription);
//   - each old process exits 0 within its shutdown timeout and logs one
//     "relay stopped" line with its counts.
//
// It logs the gap each reconnecting client saw (from its close to the first
// message on the new connection; p50, p99, max), the figures docs/benchmarks.md
// quotes. make test runs a short version (-short: 10 clients, one restart);
// make test-long the full one (50 clients, three restarts).
//
// consumer_test.go restarts each consumer daemon (indexer, moderator, trust,
// bridge against an embedded nats-server) the same way, as real processes
// while events keep coming, and checks that the new process takes over at
// once (well within the 5s lease) at the old one's committed offset, and that
// every event had its effect exactly once; make test-long restarts each three
// times and then SIGKILLs the active one (the standby takes over when the
// lease expires, and the batch the killed one had not committed is applied
// once).
package restart
