package groups

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/schema"
)

// The tables (migration 0024): cn_relay.groups holds each group's State (its
// Dump) as the relay keeps it live; cn_relay.group_withheld holds the group
// events kept off the shared read paths (Decision.Withhold; only a REQ by
// the readers WithheldReader allows returns them, ReadWithheld). internal/store writes both in
// the transaction of the batch that decided them (QueueSave, QueueWithhold);
// Replace (cnctl groups rebuild --write) is their only other writer. Every
// writer holds the group's lock (schema.GroupLockSQL) first.

// Querier runs queries: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// QueueTreeLock queues the tree lock (schema.GroupTreeLock): exclusive for a
// batch that may change the tree (a 9002 or a 9008), shared for any other
// batch with a group event. It goes before the group locks.
func QueueTreeLock(b *pgx.Batch, exclusive bool) {
	if exclusive {
		b.Queue("SELECT pg_advisory_xact_lock($1)", schema.GroupTreeLock)
		return
	}
	b.Queue("SELECT pg_advisory_xact_lock_shared($1)", schema.GroupTreeLock)
}

// QueueAncestors queues the read, into into, of the states of ids and of all
// their ancestors (parents by meta.parent, up to the roots). Run it holding
// the tree lock exclusively: nobody changes a parent meanwhile.
func QueueAncestors(b *pgx.Batch, ids []string, into map[string]*State) {
	b.Queue(`WITH RECURSIVE up(id, state) AS (
			SELECT id, state FROM cn_relay.groups WHERE id = ANY($1)
			UNION
			SELECT g.id, g.state FROM up JOIN cn_relay.groups g ON g.id = up.state -> 'meta' ->> 'parent')
		SELECT cn_relay.group_state(g) FROM up JOIN cn_relay.groups g USING (id)`, ids).Query(scanStates(into, "load group ancestors"))
}

// QueueChildren queues the read, into into, of the states of every group
// whose meta.parent is one of ids (index groups_parent, migration 0025); it
// reports their ids in kids.
func QueueChildren(b *pgx.Batch, ids []string, into map[string]*State, kids map[string]bool) {
	b.Queue(`SELECT cn_relay.group_state(g) FROM cn_relay.groups g WHERE state -> 'meta' ->> 'parent' = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		seen := map[string]*State{}
		if err := scanStates(seen, "load subgroups")(rows); err != nil {
			return err
		}
		for id, s := range seen {
			kids[id] = true
			if into[id] == nil {
				into[id] = s
			}
		}
		return nil
	})
}

// scanStates reads rows of states into into (a state already there is kept:
// it may have changed in the batch).
func scanStates(into map[string]*State, what string) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			s, err := Load(raw)
			if err != nil {
				return fmt.Errorf("%s: unreadable state: %w", what, err)
			}
			if into[s.ID] == nil {
				into[s.ID] = s
			}
		}
		return rows.Err()
	}
}

// QueueKnown queues the lookup of timeline references: for each i, whether
// an event whose id starts with prefixes[i] is in scope scopes[i]; the found
// pairs go to found as scope + " " + prefix. It probes the primary key of
// cn_relay.event_topics (event_id, topic_id) by the id range of the prefix
// (every lowercase hex id starting with p sorts in [p, p || 'g') in any
// collation), so it reads about one index entry per reference, whatever the
// table's size and statistics.
func QueueKnown(b *pgx.Batch, scopes, prefixes []string, found map[string]bool) {
	if len(prefixes) == 0 {
		return
	}
	b.Queue(`SELECT u.g, u.p FROM unnest($1::text[], $2::text[]) AS u(g, p)
		WHERE EXISTS (SELECT 1 FROM cn_relay.event_topics t
			WHERE t.event_id >= u.p AND t.event_id < u.p || 'g' AND starts_with(t.event_id, u.p) AND t.topic_id = u.g)`,
		scopes, prefixes).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var g, p string
			if err := rows.Scan(&g, &p); err != nil {
				return fmt.Errorf("load timeline references: %w", err)
			}
			found[g+" "+p] = true
		}
		return rows.Err()
	})
}

// QueueLocks queues the group lock of each id, in sorted order.
func QueueLocks(b *pgx.Batch, ids []string) {
	for _, id := range slices.Sorted(slices.Values(ids)) {
		b.Queue("SELECT pg_advisory_xact_lock("+schema.GroupLockSQL+")", id)
	}
}

// QueueCreatorLocks queues the creator lock (schema.GroupCreatorLockSQL) of
// each of pubkeys, in sorted order: after the group locks, before any
// effective-key lock.
func QueueCreatorLocks(b *pgx.Batch, pubkeys []string) {
	for _, pk := range slices.Sorted(slices.Values(pubkeys)) {
		b.Queue("SELECT pg_advisory_xact_lock("+schema.GroupCreatorLockSQL+")", pk)
	}
}

// QueueCreated queues the count, into into, of the groups each of pubkeys
// created (their state's creator): in all, deleted ones included, and those
// the relay took at or after since (unix microseconds, Stamp.Seq). It probes
// the index groups_creator (migration 0034). Run it holding the creators'
// locks (QueueCreatorLocks), so that no other batch creates one meanwhile.
func QueueCreated(b *pgx.Batch, pubkeys []string, since int64, into map[string]Created) {
	b.Queue(`SELECT state ->> 'creator', count(*),
			count(*) FILTER (WHERE ((state -> 'created') ->> 'seq')::bigint >= $2)
		FROM cn_relay.groups WHERE state ->> 'creator' = ANY($1) GROUP BY 1`, pubkeys, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var pk string
			var all, day int
			if err := rows.Scan(&pk, &all, &day); err != nil {
				return fmt.Errorf("count the groups of creators: %w", err)
			}
			into[pk] = Created{Day: day, All: all}
		}
		return rows.Err()
	})
}

// QueueHeights queues the read, into into, of how many levels of existing
// subgroups each of ids has below it (0 for none), counted no further than
// limit levels. Run it holding the tree lock exclusively.
func QueueHeights(b *pgx.Batch, ids []string, limit int, into map[string]int) {
	b.Queue(`WITH RECURSIVE down(root, id, d) AS (
			SELECT id, id, 0 FROM cn_relay.groups WHERE id = ANY($1)
			UNION ALL
			SELECT down.root, g.id, down.d + 1 FROM down JOIN cn_relay.groups g ON g.state -> 'meta' ->> 'parent' = down.id
			WHERE down.d < $2 AND coalesce(g.state -> 'deleted' ->> 'id', '') = '')
		SELECT root, max(d) FROM down GROUP BY root`, ids, limit).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var h int
			if err := rows.Scan(&id, &h); err != nil {
				return fmt.Errorf("load subgroup heights: %w", err)
			}
			into[id] = h
		}
		return rows.Err()
	})
}

// QueueLoad queues the read of the states of ids into into (a group without
// a row is absent).
func QueueLoad(b *pgx.Batch, ids []string, into map[string]*State) {
	b.Queue(`SELECT cn_relay.group_state(g) FROM cn_relay.groups g WHERE id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return fmt.Errorf("load groups: %w", err)
			}
			s, err := Load(raw)
			if err != nil {
				return fmt.Errorf("load groups: unreadable state: %w", err)
			}
			into[s.ID] = s
		}
		return rows.Err()
	})
}

// QueueWithheldIDs queues the read of which of ids are withheld already, into seen.
func QueueWithheldIDs(b *pgx.Batch, ids []string, seen map[string]bool) {
	b.Queue(`SELECT id FROM cn_relay.group_withheld WHERE id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return fmt.Errorf("load withheld group events: %w", err)
			}
			seen[id] = true
		}
		return rows.Err()
	})
}

// QueueSave queues the upsert of states, of the rows of their users whose
// registers differ from before's (the states as loaded; a state missing from
// before has all its users written), and of their rows of
// cn_relay.group_access (Access: one for a private, hidden or deleted group,
// none for any other). A group's row keeps its state but its users'
// registers (State.Members, State.Requests), which cn_relay.group_users
// holds one row per user (migration 0036): a batch that adds one member
// writes one user row, whatever the group's size.
func QueueSave(b *pgx.Batch, states []*State, before map[string]*State, at time.Time) {
	if len(states) == 0 {
		return
	}
	ids, dumps := make([]string, len(states)), make([]string, len(states))
	var uGroups, uKeys []string
	var uMembers, uRequests []*string
	for i, s := range states {
		core := *s // the users' registers go to their own rows
		core.Members, core.Requests = nil, nil
		ids[i], dumps[i] = s.ID, string(core.Dump())
		was := before[s.ID]
		for _, pk := range s.changedUsers(was) {
			uGroups, uKeys = append(uGroups, s.ID), append(uKeys, pk)
			uMembers, uRequests = append(uMembers, s.memberJSON(pk)), append(uRequests, s.requestJSON(pk))
		}
	}
	b.Queue(`INSERT INTO cn_relay.groups (id, state, updated_at)
		SELECT id, state::jsonb - 'members' - 'requests', $3 FROM unnest($1::text[], $2::text[]) AS u(id, state)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`, ids, dumps, at)
	if len(uKeys) > 0 {
		b.Queue(`INSERT INTO cn_relay.group_users (group_id, pubkey, member, request)
			SELECT g, k, m::jsonb, r::jsonb FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(g, k, m, r)
			ON CONFLICT (group_id, pubkey) DO UPDATE SET member = excluded.member, request = excluded.request`,
			uGroups, uKeys, uMembers, uRequests)
	}
	queueAccess(b, states)
}

// changedUsers returns the users whose registers differ between was (nil:
// none) and s, sorted.
func (s *State) changedUsers(was *State) []string {
	var out []string
	seen := map[string]bool{}
	consider := func(pk string) {
		if seen[pk] {
			return
		}
		seen[pk] = true
		if was == nil || !sameMembership(s.Members[pk], was.Members[pk]) || s.Requests[pk] != was.Requests[pk] ||
			hasKey(s.Members, pk) != hasKey(was.Members, pk) || hasKey(s.Requests, pk) != hasKey(was.Requests, pk) {
			out = append(out, pk)
		}
	}
	for pk := range s.Members {
		consider(pk)
	}
	for pk := range s.Requests {
		consider(pk)
	}
	if was != nil { // a register dropped (none are today): its row goes NULL
		for pk := range was.Members {
			consider(pk)
		}
		for pk := range was.Requests {
			consider(pk)
		}
	}
	slices.Sort(out)
	return out
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func sameMembership(a, b Membership) bool {
	return a.In == b.In && a.Stamp == b.Stamp && slices.Equal(a.Roles, b.Roles)
}

// memberJSON and requestJSON are a user's registers as stored (nil: none).
func (s *State) memberJSON(pk string) *string {
	m, ok := s.Members[pk]
	if !ok {
		return nil
	}
	return jsonString(m)
}

func (s *State) requestJSON(pk string) *string {
	r, ok := s.Requests[pk]
	if !ok {
		return nil
	}
	return jsonString(r)
}

func jsonString(v any) *string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("groups: register does not encode: " + err.Error()) // plain strings and ints only
	}
	out := string(b)
	return &out
}

// QueueWithhold queues the insert of withheld events (a re-sent one is kept once).
func QueueWithhold(b *pgx.Batch, evs []*nostr.Event, at time.Time) {
	if len(evs) == 0 {
		return
	}
	n := len(evs)
	ids, groups, pubkeys, raws := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	kinds, ats := make([]int32, n), make([]int64, n)
	for i, ev := range evs {
		raw, _ := json.Marshal(ev) // a verified event always encodes
		id, _ := protocol.GroupOf(ev)
		ids[i], groups[i], pubkeys[i], raws[i] = ev.ID, id, ev.PubKey, string(raw)
		kinds[i], ats[i] = int32(ev.Kind), int64(ev.CreatedAt)
	}
	b.Queue(`INSERT INTO cn_relay.group_withheld (id, group_id, pubkey, kind, created_at, event, received_at)
		SELECT *, $7::timestamptz FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::text[])
		ON CONFLICT (id) DO NOTHING`, ids, groups, pubkeys, kinds, ats, raws, at)
}

// ProjectedKinds are the kinds Apply uses: what Stored reads.
var ProjectedKinds = []int{KindPutUser, KindRemoveUser, KindEditMetadata, KindCreateGroup, KindDeleteGroup, KindCreateInvite, KindJoinRequest, KindPins}

// Accepted is a group event the relay accepted, with when it was ingested
// (unix microseconds: Stamp.Seq).
type Accepted struct {
	Event *nostr.Event
	Seq   int64
}

// Project folds evs, group events the relay accepted, into the states of
// their groups (State.Apply; the order of evs does not matter), then settles
// every group's place in the tree (Forest.SettleAll).
func Project(evs []Accepted) map[string]*State {
	sorted := slices.Clone(evs)
	slices.SortFunc(sorted, func(a, b Accepted) int {
		if a.Event.CreatedAt != b.Event.CreatedAt {
			return int(a.Event.CreatedAt - b.Event.CreatedAt)
		}
		return strings.Compare(a.Event.ID, b.Event.ID)
	})
	out := map[string]*State{}
	for _, a := range sorted {
		ev := a.Event
		id, ok := protocol.GroupOf(ev)
		if !ok {
			continue
		}
		s := out[id]
		if s == nil {
			s = New(id)
			out[id] = s
		}
		s.Apply(ev, a.Seq)
	}
	Forest(out).SettleAll()
	return out
}

// Stored reads every accepted group event Project needs: the events of
// ProjectedKinds stored in a group's scope, whatever became of them since
// (hidden, deleted or expired: they are the group's history), and the
// withheld ones.
func Stored(ctx context.Context, q Querier) ([]Accepted, error) {
	rows, err := q.Query(ctx, `SELECT `+schema.EventColumns+`, e.ingested_at FROM cn_relay.events e
		WHERE e.kind = ANY($1) AND EXISTS (SELECT 1 FROM cn_relay.event_topics t
			WHERE t.event_id = e.id AND `+schema.ScopeSQL+` AND starts_with(t.topic_id, $2))
		ORDER BY e.created_at, e.id`, ProjectedKinds, ScopePrefix)
	if err != nil {
		return nil, fmt.Errorf("read group events: %w", err)
	}
	var out []Accepted
	for rows.Next() {
		ev := &nostr.Event{}
		var tags []byte
		var at int64
		var ingested time.Time
		if err := rows.Scan(&ev.ID, &ev.PubKey, &at, &ev.Kind, &tags, &ev.Content, &ev.Sig, &ingested); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read group events: %w", err)
		}
		ev.CreatedAt = nostr.Timestamp(at)
		if err := json.Unmarshal(tags, &ev.Tags); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read group event %s: tags: %w", ev.ID, err)
		}
		out = append(out, Accepted{Event: ev, Seq: ingested.UnixMicro()})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read group events: %w", err)
	}
	rows, err = q.Query(ctx, `SELECT event, received_at FROM cn_relay.group_withheld ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read withheld group events: %w", err)
	}
	for rows.Next() {
		var raw string
		var received time.Time
		if err := rows.Scan(&raw, &received); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read withheld group events: %w", err)
		}
		ev := &nostr.Event{}
		if err := json.Unmarshal([]byte(raw), ev); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read withheld group event: %w", err)
		}
		out = append(out, Accepted{Event: ev, Seq: received.UnixMicro()})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read withheld group events: %w", err)
	}
	return out, nil
}

// Live reads every group's state as the relay keeps it.
func Live(ctx context.Context, q Querier) (map[string]*State, error) {
	rows, err := q.Query(ctx, `SELECT cn_relay.group_state(g) FROM cn_relay.groups g ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	defer rows.Close()
	out := map[string]*State{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("read groups: %w", err)
		}
		s, err := Load(raw)
		if err != nil {
			return nil, fmt.Errorf("read groups: unreadable state: %w", err)
		}
		out[s.ID] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	return out, nil
}

// LiveOne reads one group's state as the relay keeps it, nil when the relay
// has no group id.
func LiveOne(ctx context.Context, q Querier, id string) (*State, error) {
	rows, err := q.Query(ctx, `SELECT cn_relay.group_state(g) FROM cn_relay.groups g WHERE id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("read group %s: %w", id, err)
	}
	defer rows.Close()
	var s *State
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("read group %s: %w", id, err)
		}
		if s, err = Load(raw); err != nil {
			return nil, fmt.Errorf("read group %s: unreadable state: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read group %s: %w", id, err)
	}
	return s, nil
}

// LivePage reads at most limit groups as the relay keeps them live
// (cn_relay.groups), in the order of their ids (the table's primary key: a
// page is an index range scan whatever the number of groups), after the id
// after ("" from the first). like, when not empty, is a LIKE pattern
// (escaped by the caller) that keeps the groups whose id starts with it or
// whose name holds it, in either case.
func LivePage(ctx context.Context, q Querier, after, like string, limit int) ([]*State, error) {
	rows, err := q.Query(ctx, `SELECT cn_relay.group_state(g) FROM cn_relay.groups g
		WHERE id > $1 AND ($2 = '' OR id ILIKE $2 || '%' OR state -> 'meta' ->> 'name' ILIKE '%' || $2 || '%')
		ORDER BY id LIMIT $3`, after, like, limit)
	if err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*State, error) {
		var raw []byte
		if err := row.Scan(&raw); err != nil {
			return nil, err
		}
		return Load(raw)
	})
	if err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	return out, nil
}

// Diff returns the ids of the groups whose states differ between a and b
// (canonical dumps compared; a group missing on one side differs), sorted.
func Diff(a, b map[string]*State) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(a)) {
		if s := b[id]; s == nil || string(s.Dump()) != string(a[id].Dump()) {
			out = append(out, id)
		}
	}
	for id := range b {
		if a[id] == nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Replace writes states over the live ones of their groups in tx, holding
// the tree lock exclusively and each group's lock (taken in sorted order)
// until tx ends. It does not
// republish the groups' state events: they change with the group's next
// accepted event.
func Replace(ctx context.Context, tx pgx.Tx, states map[string]*State) error {
	var b pgx.Batch
	ids := slices.Sorted(maps.Keys(states))
	QueueTreeLock(&b, true)
	QueueLocks(&b, ids)
	list := make([]*State, 0, len(ids))
	for _, id := range ids {
		list = append(list, states[id])
	}
	b.Queue(`DELETE FROM cn_relay.group_users WHERE group_id = ANY($1)`, ids)
	QueueSave(&b, list, nil, time.Now())
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("replace group states: %w", err)
	}
	return nil
}

// Access returns s's row of cn_relay.group_access (migrations 0026, 0032),
// and false when the group has none: everyone may read it (neither private
// nor hidden). A deleted group (9008) is private and hidden with no readers,
// whatever its metadata said: from its deletion on, no member, former
// member or outsider reads any of its events (relay admins, the node key and
// operator tools still do, as for every private group).
func Access(s *State) (protocol.GroupRule, bool) {
	if !s.Deleted.IsZero() {
		return protocol.GroupRule{Private: true, Hidden: true, Deleted: true, Readers: []string{}}, true
	}
	if !s.Meta.Private && !s.Meta.Hidden {
		return protocol.GroupRule{}, false
	}
	return protocol.GroupRule{Private: s.Meta.Private, Hidden: s.Meta.Hidden, Readers: s.MemberList()}, true
}

// queueAccess queues the writes that make cn_relay.group_access say what
// states say (QueueSave).
func queueAccess(b *pgx.Batch, states []*State) {
	var del, scopes []string
	var private, hidden, deleted []bool
	var readers []string // (each a JSON array: unnest cannot take a ragged text[][])
	for _, s := range states {
		rule, ok := Access(s)
		if !ok {
			del = append(del, Scope(s.ID))
			continue
		}
		scopes, private, hidden = append(scopes, Scope(s.ID)), append(private, rule.Private), append(hidden, rule.Hidden)
		deleted = append(deleted, rule.Deleted)
		lit, _ := json.Marshal(append([]string{}, rule.Readers...)) // (never null)
		readers = append(readers, string(lit))
	}
	if len(del) > 0 {
		b.Queue(`DELETE FROM cn_relay.group_access WHERE scope = ANY($1)`, del)
	}
	if len(scopes) > 0 {
		b.Queue(`INSERT INTO cn_relay.group_access (scope, private, hidden, readers, deleted)
			SELECT u.scope, u.private, u.hidden, ARRAY(SELECT jsonb_array_elements_text(u.readers::jsonb)), u.deleted
			FROM unnest($1::text[], $2::bool[], $3::bool[], $4::text[], $5::bool[]) AS u(scope, private, hidden, readers, deleted)
			ON CONFLICT (scope) DO UPDATE SET private = excluded.private, hidden = excluded.hidden, readers = excluded.readers,
				deleted = excluded.deleted`,
			scopes, private, hidden, readers, deleted)
	}
}
