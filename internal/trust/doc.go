// Package trust is the trust-v1 consumer: a web-of-trust graph kept exactly from
// the outbox, deterministic ranks computed from it, and NIP-85 trusted
// assertions (kind 30382) published under a provider key of their own.
//
// # The graph (Graph, the consumer's Handler)
//
// Every edge is keyed by the event that made it. Follow lists (kind 3) and mute
// lists (10000) are replaceable sets: cn_trust.sets holds each author's effective
// version, and a newer version replaces the row (an older one arriving later is
// ignored). Posts and replies (1, 1111), reactions (7), reposts (6, 16), zap
// receipts (9735), reports (1984) and the node's own labels (1985 by the node
// key) are rows of cn_trust.sources keyed by event id. An outbox `delete` row
// (NIP-09, expiration, moderation hide, ban) removes the row it names and
// subtracts exactly the counts it added; an `upsert` of an event already
// applied changes nothing. So a batch applied twice, a replay from any offset
// and a crash mid-batch end in the same tables.
//
// A batch is applied row by row in seq order. Only rows adjacent in seq for the
// same event and op (the rows of one change, one per topic) are collapsed into
// one: the same event named again after other rows is a new change. The outbox
// shape `A upsert, B upsert, B delete, A upsert` (follow list A replaced by B,
// B deleted by NIP-09, A effective again) leaves A in cn_trust.sets whether the
// four rows come in one batch or in four. The counters of
// cn_trust.subjects (NIP-85 names) move with the graph, in the transaction that
// moves the offset.
//
// # Scores (Compute)
//
// A full computation reads a snapshot (REPEATABLE READ: the offset S of trust-v1
// and the tables as of S), renumbers subjects by pubkey, and runs a personalised
// PageRank by Jacobi iteration (each iteration reads only the previous vector;
// every sum runs in a fixed order), so the same stored events give bit-identical
// scores whatever order they arrived in. See Params for the weights and rules;
// every run is recorded in cn_trust.runs with (S, as_of, parameters, algorithm).
//
// # Assertions (Publisher)
//
// One kind 30382 event per subject at or above the rank cutoff, holding every
// claim, signed by the provider key and stored through the store's publish path
// (so clients read them with a plain REQ). Only subjects whose claims changed
// are republished; a subject that falls below the cutoff loses its assertion by
// a NIP-09 deletion of its address. One goroutine publishes, so two claims never
// race for the same address.
package trust
