// Package protocol holds the relay's Nostr protocol rules as pure functions: no I/O,
// no clock (callers pass `now`), no global state. Everything here is safe for
// concurrent use, and no function panics on any input, including inputs read straight
// off a WebSocket (ParseClientMessage and ValidateFilter are fuzzed for that).
//
// What the package promises:
//
//   - ParseClientMessage turns one client WebSocket text message into a ClientMessage
//     (EVENT, REQ, CLOSE, COUNT, AUTH; NIP-01, NIP-42, NIP-45) or a *ParseError whose
//     text is a NIP-01 reason ("invalid: ...") fit for a NOTICE. Parsed events carry
//     only the seven NIP-01 fields: unknown fields a client sent are dropped, so what
//     the relay stores and forwards is exactly what was signed.
//   - ValidateEvent checks an event against every rule that does not need storage
//     (format, then id hash and signature, then size limits, NIP-40 expiration,
//     topics: a rule never judges what its author did not sign) and returns
//     "" or a NIP-01 OK reason with its machine-readable prefix. The reasons are the
//     exported Reason* constants, so callers can compare and count them.
//   - ValidateFilter checks a REQ/COUNT filter and returns the filter to run: #t values
//     normalised, limit defaulted and capped. Match is the reference NIP-01 matcher;
//     the SQL query engine and the live fan-out must agree with it for every filter
//     that ValidateFilter accepted.
//   - Topics, DTag, EffectiveKey, Expiration, Protected and ClassOf are the single
//     definitions of those notions for the whole node: the store, the outbox rows and
//     the downstream services use them instead of re-deriving them.
//
// # Topics
//
// A topic is the normalised value of a `t` tag (NormalizeTopic): NFKC, then
// strings.ToLower, then NFKC again, then surrounding white space trimmed. This is
// the shape of Unicode's NFKC_Casefold but with the simple lower-case mapping instead
// of full case folding, so "STRASSE" and "straße" stay different topics, as do
// Turkish dotless ı and i. Invisible characters (zero-width space, joiners) are kept:
// removing them would break emoji sequences. Normalisation depends on the Unicode
// tables of the Go release and golang.org/x/text in use; stored topic ids are never
// re-normalised, so a Unicode upgrade can only affect newly assigned characters.
//
// Every stored event belongs to community topics (TopicRules): its own, or those
// it inherits from the stored events it references (TopicRefs), or NodeTopic for
// identity events (IsIdentityKind). Consumers see all of them (event_topics and
// the outbox); #t in a filter matches only an event's own `t` tags (Match), as
// NIP-01 says and as clients such as nostr-tools check on what they receive.
//
// # Reason prefixes
//
// OK and CLOSED reasons use the NIP-01 prefixes. "invalid:" means the message, event
// or filter is malformed or breaks a published limit (NIP-11 `limitation`).
// "restricted:" means it is well formed but this relay's policy refuses it: a REQ
// without #t, a topic that is not enabled (NIP-42 uses the same prefix for "not
// allowed", which is what a topic policy is). "unsupported:" (the prefix NIP-01 uses
// in its own CLOSED example) marks filter features this relay does not implement:
// NIP-50 search and multi-letter tag filters; ignoring them instead would return
// events the client did not ask for.
//
// # Storage-driven rules
//
// Some checks exist because Postgres stores the events: text (content and every tag
// element) must be valid UTF-8 without NUL characters, which Postgres `text` and
// `jsonb` cannot hold; the first value of single-letter tags (the indexed ones) and
// normalised topics are capped at MaxTagValueBytes so they fit a B-tree index entry.
// Rejecting such an event at validation time keeps one bad event from failing a
// whole ingest batch.
package protocol
