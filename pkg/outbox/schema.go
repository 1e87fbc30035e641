package outbox

import _ "embed" // Schema

// Schema is the DDL of the tables this package reads and writes (schema.sql):
// cn_relay.events_outbox with its sequence, default and range partitions,
// outbox_partitioning, the outbox_partitions view, outbox_ensure_partitions
// outbox_retention and outbox_head, as they are after every migration of the node.
//
// The node's migrations (the schema package, applied only by `cnctl
// migrate`) create the same objects and are never changed once released, so
// this package does not apply Schema itself; a test keeps the two identical.
// A service that uses the outbox in a database of its own applies Schema once
// with its migration tool, before pkg/consumer's.
//
//go:embed schema.sql
var Schema string
