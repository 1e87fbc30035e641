package consumer

import _ "embed" // Schema

// Schema is the DDL of the tables this package reads and writes (schema.sql):
// cn_relay.consumer_offsets, consumer_dead_letters, consumer_offset_resets
// and the fenced commit cn_relay.consumer_advance, as they are after every
// migration of the node.
//
// The node's migrations (the schema package, applied only by `cnctl
// migrate`) create the same objects and are never changed once released, so
// this package does not apply Schema itself; a test keeps the two identical.
// A service that runs consumers in a database of its own applies
// pkg/outbox's Schema and then this one, once, with its migration tool.
//
//go:embed schema.sql
var Schema string
