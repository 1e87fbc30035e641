package schema

// The states of a stored event, as SQL conditions on cn_relay.events aliased
// e, and the scope rule of cn_relay.event_topics aliased t. internal/store is
// the only writer of both tables (on a mirror, its package internal/store/mirror)
// and keeps these promises; every reader (the
// store's queries, the indexer, moderation, trust, relay admin) uses these
// definitions instead of its own.
//
// A stored event is, at any time, in the states below; "visible" is the one
// clients see:
//
//	current  its key's effective version (a regular event is its own key's)
//	deleted  by NIP-09, the expiry sweep or moderation (deleted_reason says which)
//	hidden   deleted by moderation, the one deletion that can be undone
//	live     current and not deleted: between its `upsert` and its `delete`
//	         outbox rows
//	visible  live and not expired as of now
const (
	// CurrentSQL: the event is its key's effective version, whatever else
	// happened to it (deleted or not).
	CurrentSQL = "e.is_effective"
	// NotDeletedSQL: not deleted, whether current or a replaced version.
	NotDeletedSQL = "e.deleted_at IS NULL"
	// HiddenSQL: deleted by moderation. The value is outbox.ReasonModeration
	// (the outbox's delete reasons are the events' deleted_reason values;
	// TestHiddenIsModeration checks it).
	HiddenSQL = "e.deleted_reason = 'moderation'"
	// LiveSQL: current and not deleted. It does not look at expiration: an
	// expired event stays live until the sweep deletes it (and writes its
	// `delete` rows). Readers that answer clients use VisibleSQL; the search
	// index keeps expires_at with each document and checks it when it answers.
	LiveSQL = NotDeletedSQL + " AND " + CurrentSQL
)

// VisibleSQL is what a reader may see: live and not expired as of now, an SQL
// expression (usually a placeholder such as "$1") giving unix seconds.
func VisibleSQL(now string) string {
	return LiveSQL + " AND (e.expires_at IS NULL OR e.expires_at > " + now + ")"
}

// ScopeSQL: the cn_relay.event_topics row t places its event in its topic (a
// community topic, or the person scope protocol.NodeTopic), exactly as the
// event's outbox rows do. The other rows of an event (scope false) are an
// identity event's own t tags, kept only so that #t filters match them: they
// are no topic of the event, and nothing inherits them.
const ScopeSQL = "t.scope"

// ScopeTopicsSQL is event e's topics (ScopeSQL), sorted: a text[] column.
const ScopeTopicsSQL = "ARRAY(SELECT t.topic_id FROM cn_relay.event_topics t WHERE t.event_id = e.id AND " + ScopeSQL +
	" ORDER BY t.topic_id)"

// EventColumns are the columns of a signed event, in the order the readers
// scan them: id, pubkey, created_at, kind, tags, content, sig.
const EventColumns = "e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig"
