// Package testkit is the helpers every package's tests share, declared once:
//
//   - nostr keys and signed events (Key, NewKey, SecretKeys, Pub, Sign,
//     SignNow, Follows);
//   - Buffer, a bytes.Buffer safe for a daemon's logger and the test that
//     reads it;
//   - FreeAddr, a loopback address to listen on; EnvInt, a benchmark size;
//   - RunWriter, an outbox writer running until the test ends;
//   - AwaitOffset, WaitOffset, WaitCaughtUp and CatchUp, for a consumer
//     reaching an outbox seq (tests and the catch-up benchmarks), and SetHead
//     for the benchmarks that COPY their backlog into the outbox;
//   - StreamMsgs, every message of a JetStream stream, in order (the bridge's
//     tests compare it with the outbox);
//   - Client, the one protocol-level client of a relay over a real WebSocket
//     (Dial, Publish, Req, Subscribe and live events, Auth, Count, NIP-77's
//     NEG messages), and NIP86, a management call with its NIP-98 header;
//   - HostGroups, a store hosting NIP-29 groups, and GroupFlood, a group
//     with many members.
//
// It is for tests only (no non-test file imports it), and it fails the test
// through testing.TB rather than returning errors, except where a method
// says so (AwaitOffset, which benchmarks time, and the Client's methods for
// other goroutines). It imports pkg/outbox, pkg/consumer and internal/store,
// so the in-package tests of those (and of what they import: groups,
// membership, negentropy, readpath, protocol) cannot use it; their external
// test packages (package x_test) can.
package testkit
