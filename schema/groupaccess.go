package schema

// GroupReadableSQL is protocol.Viewer.MayReadGroup for event e as SQL, for a
// reader authenticated as the pubkeys of readers (a text[] expression; an
// empty array for an anonymous reader): false only when e's scope row
// (ScopeSQL) is a group of cn_relay.group_access (migration 0025) that does
// not list one of them as a reader, and that keeps e's kind from non-members
// (protocol.GroupKeepsFrom).
//
// Cost: the first part is uncorrelated (Postgres evaluates it once per
// statement, an InitPlan) and the OR stops there while no group is private
// or hidden, so an ordinary read pays one scan of an empty table. Otherwise
// each candidate row costs one probe of event_topics' primary key (event_id,
// topic_id) joined with the small group_access table.
func GroupReadableSQL(readers string) string {
	return "(NOT EXISTS (SELECT 1 FROM cn_relay.group_access) OR NOT EXISTS (SELECT 1 FROM cn_relay.event_topics gt" +
		" JOIN cn_relay.group_access ga ON ga.scope = gt.topic_id WHERE gt.event_id = e.id AND gt.scope" +
		" AND NOT (ga.readers && " + readers + ") AND " + groupKeepsFromSQL("e.kind") + "))"
}

// GroupReadableDocSQL is GroupReadableSQL for an anonymous reader of a row
// that carries its event's scope topics (a text[] expression) and kind, as
// the search index's documents do.
func GroupReadableDocSQL(topics, kind string) string {
	return "(NOT EXISTS (SELECT 1 FROM cn_relay.group_access) OR NOT EXISTS (SELECT 1 FROM cn_relay.group_access ga" +
		" WHERE ga.scope = ANY(" + topics + ") AND " + groupKeepsFromSQL(kind) + "))"
}

// groupKeepsFromSQL is protocol.GroupKeepsFrom for the group ga.
func groupKeepsFromSQL(kind string) string {
	state := kind + " BETWEEN 39000 AND 39005"
	return "(ga.private AND NOT " + state + " OR ga.hidden AND (" + state + " OR " + kind + " = 5))"
}
