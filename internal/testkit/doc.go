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
//     tests compare it with the outbox).
//
// It is for tests only (no non-test file imports it), and it fails the test
// through testing.TB rather than returning errors, except AwaitOffset, which
// benchmarks time. It imports pkg/outbox and pkg/consumer, so the tests of
// those two packages (and of what they import) cannot use it.
package testkit
