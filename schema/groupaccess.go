package schema

import "strconv"

// GroupScopePrefix starts the scope topic of every NIP-29 group:
// 'GROUP:' || id (groups.ScopePrefix, groups.Scope).
const GroupScopePrefix = "GROUP:"

// GroupOfSQL is protocol.GroupOf for the stored event whose id is the SQL
// expression id: the id of the group in whose scope the store placed it
// (its scope row, ScopeSQL, that starts with GroupScopePrefix), or the
// empty string when it is in none. protocol.GroupOf is the rule's one home:
// the store writes the scope rows from it, and SQL reads those rows instead
// of repeating the rule over the tags (store's TestGroupOfSQLIsGroupOf walks
// both over the same events).
func GroupOfSQL(id string) string {
	return "coalesce((SELECT substr(t.topic_id, " + strconv.Itoa(len(GroupScopePrefix)+1) + ") FROM cn_relay.event_topics t" +
		" WHERE t.event_id = " + id + " AND " + ScopeSQL + " AND t.topic_id LIKE '" + GroupScopePrefix + "%' LIMIT 1), '')"
}

// GroupReadableSQL is protocol.Viewer.MayReadGroup for event e as SQL, for a
// reader authenticated as the pubkeys of readers (a text[] expression; an
// empty array for an anonymous reader): false only when e's scope row
// (ScopeSQL) is a group of cn_relay.group_access (migrations 0026, 0032: a
// private, hidden or deleted group; a deleted one has no reader) that does
// not list one of them as a reader and keeps e's kind from non-members
// (protocol.GroupKeepsFrom; cn_relay.group_keeps). The Go rule is the home;
// internal/store's TestReadRuleSQLIsGo walks both.
//
// Cost: the first part is uncorrelated (Postgres evaluates it once per
// statement, an InitPlan) and the OR stops there while no group is private
// or hidden, so an ordinary read pays one scan of an empty table. Otherwise
// a row that cannot be a group event (NotGroupEventSQL: its kind and tags,
// which the read fetches anyway) stops there too, and only the others cost
// one call of cn_relay.group_keeps (a primary-key probe of event_topics).
func GroupReadableSQL(readers string) string {
	return estimatedTrue("NOT EXISTS (SELECT 1 FROM cn_relay.group_access) OR " + NotGroupEventSQL +
		" OR NOT cn_relay.group_keeps(e.id, e.kind, " + readers + ")")
}

// GroupReadableIndexSQL is GroupReadableSQL without NotGroupEventSQL: it
// reads only e.id and e.kind, which an index-only scan of events_sync_idx
// holds (NIP-77), at the price of a call per row while a group is private or
// hidden.
func GroupReadableIndexSQL(readers string) string {
	return estimatedTrue("NOT EXISTS (SELECT 1 FROM cn_relay.group_access) OR NOT cn_relay.group_keeps(e.id, e.kind, " + readers + ")")
}

// NotGroupEventSQL is true for an event e that cannot be in a group's scope
// (protocol.GroupOf): of no NIP-29 kind (9000-9022, 39000-39005), no kind 5
// (the node deletes a group's state by address), and without a tag holding
// the value "h" (an `h` tag is one; jsonb containment, one pass over the
// tags). False says nothing: the scope rows decide.
const NotGroupEventSQL = "(e.kind NOT BETWEEN 9000 AND 9022 AND e.kind NOT BETWEEN 39000 AND 39005 AND e.kind <> 5" +
	" AND NOT e.tags @> '[[\"h\"]]')"

// GroupReadableDocSQL is GroupReadableSQL for an anonymous reader of a row
// that carries its event's scope topics (a text[] expression) and kind, as
// the search index's documents do.
func GroupReadableDocSQL(topics, kind string) string {
	return estimatedTrue("NOT EXISTS (SELECT 1 FROM cn_relay.group_access) OR NOT cn_relay.group_keeps_doc(" + topics + ", " + kind + ")")
}

// estimatedTrue is cond written so that the planner expects it to keep
// nearly every row: the NullTest (CASE WHEN cond THEN 1 END) IS NOT NULL,
// which Postgres estimates at 99.5% without statistics, where it takes an
// OR of an InitPlan, kind ranges and a function call to keep about half.
// Written plainly, the check changed the plans of ordinary REQs over a
// never-analysed table (a nested loop instead of a hash join for one #t
// value: BenchmarkStoreQuery); so written, the planner picks the plans it
// picks without it. It evaluates as cond, whose OR stops at its first true
// part.
func estimatedTrue(cond string) string {
	return "((CASE WHEN " + cond + " THEN 1 END) IS NOT NULL)"
}
