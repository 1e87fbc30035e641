// Package durability holds the tests of the node's first promise: an event
// answered `OK true` is stored, with its outbox rows, whatever happens to the
// database server afterwards. Each test runs its own Postgres cluster (pgembed)
// so that it can crash it (pg_ctl stop -m immediate: no checkpoint, no WAL
// written past what was written), withhold a synchronous standby, promote
// one, or restore a backup; a clean restart would flush the WAL first and
// prove nothing.
//
// The package has no code of its own: what it tests is pkg/outbox's write
// path (a synchronous commit under the append lock), pkg/consumer's offset
// commit, the daemons healing after a failover (every daemon of package node
// in one process, against both hosts), and internal/restore's repair after a
// point-in-time restore (docs/durability.md says what each test shows).
package durability
