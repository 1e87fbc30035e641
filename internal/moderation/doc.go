// Package moderation is the node's moderation: the moderation-v1 consumer of
// the outbox (Moderator), the rules it applies, the NIP-56 report tallies, the
// optional content classifier, and the operator's decisions and queue behind
// `cnctl moderation`. internal/node runs it as the moderator daemon.
//
// Promises:
//
//   - Rules are versioned (cn_moderation.rules, ApplyRules): a content rule runs
//     on every stored event an upsert row names, a report rule (min_reports) on
//     an event whenever a report about it arrives. A rule fires at most once per
//     (rule version, event), however often the outbox row is replayed.
//   - What the node says is a NIP-32 label (kind 1985) signed by the node key in
//     the DefaultNamespace, with the labelled event's created_at, so a replayed
//     label has the same id and is a duplicate; labels are stored through the
//     store's own path (store.PublishTx), so they inherit the target's topics,
//     reach the outbox and are read with a plain REQ. A label is taken back
//     (NIP-09, signed by the node) when its target is deleted or expires.
//   - NIP-29 groups are scopes (GROUP:<id>): a rule's `groups` match the
//     events sent to those groups, and GroupQueue (`cnctl moderation queue
//     --group`) lists the reported or held events of one group, whatever the
//     scope of the reports (tallied by the reported event).
//   - `hide` rules hide an event from every reader at once (store.PublishTx, a
//     `delete` outbox row with reason moderation), `hold` rules queue it for the
//     operator (Queue); an operator's decision (Decide: hide, unhide or dismiss)
//     is final, and no rule hides an event an operator decided about.
//   - Every effect of a batch commits in the consumer's transaction together
//     with its offset (pkg/consumer), so a replay or a crash mid-batch ends in
//     the same state; the outbox rows the batch appended are announced (NOTIFY)
//     only after that commit.
//   - The classifier (ClassifierConfig) never stalls the consumer: requests are
//     bounded per request, per batch, per day (shared by every moderator) and by
//     a circuit breaker; an event without an answer is recorded as unclassified
//     and its classifier conditions do not fire.
package moderation
