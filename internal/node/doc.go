// Package node is the node's composition root: the only package that opens
// database pools, builds metrics registries and wires the domain packages into
// daemons. Each daemon has one entry point that takes an options struct and
// runs until its context ends or a part fails:
//
//   - Relay: one relay process (internal/relay) on the event store
//     (internal/store), the outbox writer, the management state
//     (internal/relayadmin), the --min-rank gate (internal/trust/gate) and the
//     ephemeral bus, plus the store's maintenance loops (NIP-40 sweep, pending
//     identity sweep, query-table statistics).
//   - Indexer: the index-v1 consumer (internal/indexer) and the search API.
//   - Moderator: the moderation-v1 consumer (internal/moderation).
//   - Trust: the trust-v1 consumer, the recompute schedule and the NIP-85
//     publisher (internal/trust).
//   - Bridge: the bridge-v1 consumer publishing the outbox to NATS JetStream.
//
// and cnctl's two commands that store events as the relay does, each a
// function of an open pool and the store's rules (internal/storerules):
//
//   - Import: a JSON Lines file through the relay's checks and store path
//     (internal/bulk), an outbox writer alongside.
//   - Sync: a NIP-77 session with another relay (internal/relaysync), its
//     downloads stored through Import's path.
//
// The dev node (all of the above, embedded Postgres and nats-server, the
// status page) is internal/devnode: it builds each daemon through these entry
// points, and lives apart so that the daemons' binaries do not link the
// embedded servers.
//
// Every default lives in defaults.go, once: the cmd/* flags, the dev node and
// docs/configuration.md take them from there. The cmd/* packages only map flags (and their
// environment variables) onto these options; the domain packages take an open
// pool and never parse flags.
package node
