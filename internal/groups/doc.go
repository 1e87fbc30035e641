// Package groups is the node's NIP-29 relay-based groups: what a group is
// (State), who may do what in it (Decide, Roles), the events the node signs to
// describe it (Render), and how its state is recomputed from the stored events
// (Project, Rebuild). The store (internal/store) calls it while it decides a
// batch, so that a group event, the state it changes and the node's events
// that describe the change commit in one transaction.
//
// # Groups are scopes
//
// An event sent to a group (an `h` tag; protocol.IsGroupEvent) belongs to that
// group only: its scope, the topic_id of its outbox rows and its scope row in
// cn_relay.event_topics, is Scope(id) = "GROUP:" + id. No `t` topic can equal
// it (normalised topics have no upper-case ASCII letter, as for
// protocol.NodeTopic), so the indexer, the moderator, trust and the bridge
// see a group like any community, with no path of their own. A group event's
// `t` tags are content (matched by #t), never a topic; an event that only
// references a group event (a reply without `h`) does not inherit the group.
//
// # State is a projection of the stored moderation events
//
// A group's State is a set of last-writer-wins registers, one per thing an
// event can set: the metadata (the newest 9002: it replaces every field, as
// the current NIP-29 text says), each user's membership and roles (the newest
// 9000 or 9001 naming them), each user's newest join request (9021), each
// invite code (the newest 9009 naming it), the group's creation (the first
// 9007) and deletion (the first 9008), the pins (the newest 9010), and the
// stamp and parent of every accepted 9002 (so that when a group was adopted
// by its parent is a function of its events). "Newest" is the later
// created_at, then the later arrival (Stamp), then the lower id. Apply folds
// one event into a State and is commutative: the same set of events gives the
// same State whatever the order they are applied in, so Project, which folds
// every accepted moderation event the node holds, gives exactly the State the
// relay kept live (TestGroupRebuildEqualsLive checks it after every batch of
// random histories with equal timestamps and late arrivals).
//
// # Subgroups: a tree derived from the states
//
// A group's parent is its newest 9002's `parent` while that group exists; its
// children, in order, are the groups whose parent it is: first those its own
// newest 9002 listed as `child` tags (if they were its children already
// then), then the others in the order they were adopted. State.Tree holds
// this, derived from every group's state (Forest.Settle), never from the
// order events arrived in, so Project, which settles the whole forest, equals
// what the store settled batch by batch (TestGroupForestCommutes,
// TestGroupRebuildEqualsLive). Decide applies NIP-29's Rules to a 9002 (one
// parent, existing, not a cycle, the author an admin of it, every child
// listed) from the Forest the store loaded; the store re-signs the 39000 of
// every group whose place changed (the child, its old and new parents, the
// children of a deleted group) in the batch's transaction, holding the tree
// lock (schema.GroupTreeLock) exclusively.
//
// # Timeline references and late publication
//
// Decide refuses a group event whose `previous` tags name events the relay
// does not have in the group (Facts.Known), one with fewer references than
// Policy.MinPrevious, and one older than Policy.LateWindow, except the node's;
// Policy.History (cnctl import --group-history, a moved or forked group)
// checks neither and dates the node's moderation events at their cause.
//
// Decide refuses an event that would not take effect (an edit older than the
// register it sets: "invalid: ... older ..."), so an accepted moderation event
// always changes what it names. The node's own moderation events (the 9000 that
// admits a join, the 9001 that answers a leave, the 9000 that makes a creator
// admin) are stamped later than the register they set (NodeEvents), so they
// always win.
//
// Accepted moderation events stay stored even when hidden (9005, NIP-09,
// moderation): they are the group's history, and Project reads them whatever
// their visibility. Events are never removed from cn_relay.events.
//
// # Who signs what
//
// The node key (NIP-11 `self`) signs: 39000 (metadata, with parent and child
// tags), 39001 (admins with their roles), 39002 (members), 39003 (the roles
// this relay supports), 39005 (pinned events), one
// version per group and batch that changed it, with a created_at above the
// previous version's (a group changed more than once a second sees its state
// events run ahead of the clock by that much); the 9000 that admits a join or
// makes a creator admin, and the 9001 that answers a leave; and, when a group
// is deleted, a kind 5 that deletes its state events by address. The relay
// refuses kinds 39000-39005 from everyone else, the node key included over the
// wire: only the store's group path makes them.
//
// # Private and hidden groups
//
// A `private` group's events but its state, and a `hidden` group's state
// (39000-39005, and the node's kind 5 that deletes it), are read by its
// members only (protocol.GroupKeepsFrom; relay admins, the node key and
// operator tools read everything). The rule is read at each read, never
// stamped on events: Access gives a group's row of cn_relay.group_access
// (members as readers), which QueueSave writes in the transaction of every
// batch that changes the group, so a removal, a leave or a group turned
// private takes effect for every read committed after it, old messages
// included. The SQL engine (schema.GroupReadableSQL) and the relay's copy
// of the rule (live fan-out, event cache, handoff) apply it; see
// docs/groups.md for every read path. A private group is written by its
// members only (ReasonPrivate), restricted or not.
//
// A deleted group (9008) is read by no one but relay admins, the node key and
// operator tools: Access derives its row as private and hidden with no
// readers (GroupRule.Deleted), whatever its metadata said, so its events,
// old ones included, are kept from its members and former members as from
// outsiders on every read path, with no rule of its own. Its events stay
// stored (Project still reads them: a rebuild gives the same state and row).
//
// # Secrets
//
// Invite codes are secrets. A 9009 (create-invite) and a 9021 that carries a
// `code` tag are withheld: kept in cn_relay.group_withheld (which Project
// reads), never in cn_relay.events, the outbox or the index. The relay adds
// them to the REQs of the readers WithheldReader allows (ReadWithheld; live,
// the relay that took one delivers it); no other path returns them.
//
// # Metrics
//
// CountLive counts the live groups in the database (by FlagsOf, their
// members, their pending join requests) exactly as CountsOf counts States;
// Collector reports it as the relay's cn_relay_groups* gauges, and
// ResultLabel names an answer to a group event for the relay's
// cn_relay_group_events_total by the answer's code (reasons.go declares one
// per refusal), never by its message.
// # Joins by rank
//
// With Policy.AdmitMinRank (relay --group-admit-min-rank), Decide honours a
// join request to an open group at once only when Facts.Admission says the
// author is ranked (AdmitRanked, and the OK message says so) or the ranks are
// not known yet (AdmitOpen); an unranked author's request is kept for the
// admins (AdmitReview: "restricted: pending review: ..."). Closed groups are
// not changed. The store asks its Groups.Admission, an in-memory rank gate.
//
// # Limits
//
// Policy.Limits (relay --group-max-*) bound what one key makes of the
// groups: groups created per key a day and in all (Facts.Created, which the
// store counts from cn_relay.groups holding the creator's lock,
// schema.GroupCreatorLockSQL, so the bound holds across restarts and relay
// processes), members per group (a 9000 is refused whole, and so is a join
// that would be honoured at once; the node's own 9000s answer causes already
// checked and are never refused), subgroup depth (the new parent's depth, one,
// and the height of the group's own subtree, Facts.Height, which the store
// reads with QueueHeights under the exclusive tree lock and raises as the
// batch's 9002s attach groups), codes per 9009 and valid codes per group.
// Each refusal is "restricted: ..." and keeps nothing; Policy.History is bound
// by none.
//
// # Not supported yet (refused, never half done)
//
// `livekit`, moderation kinds other than 9000, 9001, 9002, 9005, 9007, 9008,
// 9009 and 9010.
package groups
