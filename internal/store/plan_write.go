package store

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
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// queueWrites queues the decisions: the updates of stored rows first (effective
// flags off before flags on and before the new rows: the unique effective-key
// index), then the new rows, members and tombstones.
func (p *plan) queueWrites(b *pgx.Batch) {
	p.queueUpdates(b)
	if ins := p.newRows(); len(ins) > 0 {
		queueInsert(b, insertRows(ins, p.ingestedAt))
	}
	p.queueAfterInsert(b)
}

// copyWrites writes the same decisions as queueWrites, in the same order, but
// the new rows of events, event_topics and event_tags go in with COPY: the
// updates are sent first (their own round trip), then one COPY per table, and
// what follows the new rows is queued in b, to travel with the outbox append
// and the commit. COPY inserts exactly the rows queueInsert would (insertRows
// builds both) and, like it, has no ON CONFLICT: an event another transaction
// stored meanwhile fails the batch with a unique violation, which Ingest and
// Import retry. It costs three more round trips per batch and saves the
// server the arrays and their unnest: for large batches (an import).
func (p *plan) copyWrites(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	var pre pgx.Batch
	p.queueUpdates(&pre)
	if pre.Len() > 0 {
		if err := tx.SendBatch(ctx, &pre).Close(); err != nil {
			return fmt.Errorf("update stored events: %w", err)
		}
	}
	if ins := p.newRows(); len(ins) > 0 {
		if err := copyInsert(ctx, tx, insertRows(ins, p.ingestedAt)); err != nil {
			return err
		}
	}
	p.queueAfterInsert(b)
	return nil
}

// newRows returns the events whose rows the plan inserts, by id.
func (p *plan) newRows() []*stored {
	var ins []*stored
	for _, st := range p.byID {
		if st.isNew && !(st.effectiveKey != "" && !st.effective && !st.deleted && p.ownState(st)) {
			ins = append(ins, st) // (a new version of the node's state superseded already is not kept)
		}
	}
	slices.SortFunc(ins, func(x, y *stored) int { return strings.Compare(x.id, y.id) })
	return ins
}

// queueUpdates queues the updates of stored rows that must come before the
// new rows (see queueWrites).
func (p *plan) queueUpdates(b *pgx.Batch) {
	var off, on, prune []string
	for _, vs := range p.versions {
		for _, v := range vs {
			if v.isNew {
				continue
			}
			was := v.id == p.oldWinner[v.effectiveKey]
			switch {
			case was && !v.effective && !v.deleted && p.ownState(v):
				prune = append(prune, v.id)
			case was && !v.effective:
				off = append(off, v.id)
			case !was && v.effective:
				on = append(on, v.id)
			}
		}
	}
	if len(off) > 0 {
		b.Queue("UPDATE cn_relay.events SET is_effective = false WHERE id = ANY($1)", off)
		b.Queue(dropTagsSQL, off)
	}
	if len(prune) > 0 {
		slices.Sort(prune)
		b.Queue(dropTagsSQL, prune)
		b.Queue("DELETE FROM cn_relay.events WHERE id = ANY($1)", prune)
	}
	if len(on) > 0 {
		b.Queue("UPDATE cn_relay.events SET is_effective = true WHERE id = ANY($1)", on)
		b.Queue(restoreTagsSQL, on)
	}
	// A stored version deleted by address was loaded by its key, not by id:
	// look for it there too.
	storedByID := p.byID
	if len(p.deletedIDs) > 0 {
		storedByID = maps.Clone(p.byID)
		for _, vs := range p.versions {
			for _, v := range vs {
				if storedByID[v.id] == nil {
					storedByID[v.id] = v
				}
			}
		}
	}
	oldDeleted := map[outbox.Reason][]string{}
	for _, id := range p.deletedIDs {
		if st := storedByID[id]; st != nil && !st.isNew {
			oldDeleted[st.reason] = append(oldDeleted[st.reason], id)
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(oldDeleted)) {
		b.Queue(`UPDATE cn_relay.events SET deleted_at = now(), deleted_reason = $2
			WHERE id = ANY($1) AND deleted_at IS NULL`, oldDeleted[reason], reason)
	}
	if len(p.unhidden) > 0 {
		b.Queue(`UPDATE cn_relay.events e SET deleted_at = NULL, deleted_reason = NULL
			WHERE id = ANY($1) AND `+schema.HiddenSQL, p.unhidden)
	}
}

// queueAfterInsert queues what follows the new rows: the parts' writes,
// members, pending identity events and tombstones.
func (p *plan) queueAfterInsert(b *pgx.Batch) {
	for _, pt := range p.parts {
		pt.queueWrites(b)
	}
	if len(p.newMembers) > 0 {
		slices.SortFunc(p.newMembers, func(x, y newMember) int { return strings.Compare(x.pubkey, y.pubkey) })
		pubkeys, firsts := make([]string, len(p.newMembers)), make([]string, len(p.newMembers))
		for i, m := range p.newMembers {
			pubkeys[i], firsts[i] = m.pubkey, m.firstID
		}
		b.Queue(`INSERT INTO cn_relay.members (pubkey, first_event_id, joined_at)
			SELECT pk, id, $3 FROM unnest($1::text[], $2::text[]) AS u(pk, id) ON CONFLICT DO NOTHING`,
			pubkeys, firsts, p.ingestedAt)
	}
	p.queuePending(b)
	if len(p.newTombs) > 0 {
		n := len(p.newTombs)
		targets, pubkeys, deletions, ats := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
		for i, t := range p.newTombs {
			targets[i], pubkeys[i], deletions[i], ats[i] = t.target, t.pubkey, t.deletionID, t.createdAt
		}
		b.Queue(`INSERT INTO cn_relay.deletion_targets (target, pubkey, deletion_id, created_at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
			ON CONFLICT DO NOTHING`, targets, pubkeys, deletions, ats)
	}
}

// queuePending queues the writes of pending identity events: the versions this
// batch keeps (one row per effective key, a newer version replacing an older
// one, also against a concurrent batch), and the deletion of those it published.
func (p *plan) queuePending(b *pgx.Batch) {
	if len(p.unpend) > 0 {
		b.Queue("DELETE FROM cn_relay.pending_events WHERE id = ANY($1)", p.unpend)
	}
	var ids, pubkeys, keys, events []string
	var createdAts []int64
	for _, key := range slices.Sorted(maps.Keys(p.waiting)) {
		w := p.waiting[key]
		if w.idx < 0 {
			continue
		}
		raw, _ := json.Marshal(w.ev) // a verified event always encodes
		ids, pubkeys, keys, events = append(ids, w.ev.ID), append(pubkeys, w.ev.PubKey), append(keys, key), append(events, string(raw))
		createdAts = append(createdAts, int64(w.ev.CreatedAt))
	}
	if len(ids) == 0 {
		return
	}
	b.Queue(`INSERT INTO cn_relay.pending_events AS p (id, pubkey, effective_key, created_at, event, received_at)
		SELECT * , $6::timestamptz FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
		ON CONFLICT (effective_key) DO UPDATE SET id = excluded.id, created_at = excluded.created_at,
			event = excluded.event, received_at = excluded.received_at
		WHERE excluded.created_at > p.created_at OR (excluded.created_at = p.created_at AND excluded.id < p.id)`,
		ids, pubkeys, keys, createdAts, events, p.ingestedAt)
}

// ownState reports whether v is a version of the node's own state: a
// replaceable or addressable event signed by the node key (the groups' or
// NIP-43 membership's node pubkey, or a key of Publisher.SetOwnState): the
// group state events 39000-39003 and 39005, the membership lists 13534 and
// role definitions 33534, trust's NIP-85 assertions 30382. Such a
// version is not kept once a newer one of its key is effective: its events
// and event_tags rows are deleted in the transaction that supersedes it, and
// one that arrives superseded already is not stored (issue 47: a member list
// re-signed for each added member would otherwise keep every earlier list,
// ~130 KB each for 1,900 members). Its event_topics rows stay (one small row
// per scope): NIP-29 timeline references (previous tags) name events by id
// prefix in a group's scope (groups.QueueKnown), and a client may name a state
// version it saw; a topic row whose event is gone matches no query (every
// read joins cn_relay.events), as a superseded version's never did.
// The node's state is rebuilt from the moderation events (9000-9022,
// 8000/8001 ...), never from old versions; an outbox row that names a removed
// version is "nothing to apply" for its consumers (see doc.go). A version a
// NIP-09 deletion removes stays (deleted), as client events do.
func (p *plan) ownState(v *stored) bool {
	if v.effectiveKey == "" {
		return false
	}
	for _, pt := range p.parts {
		if s := pt.signer(); s != "" && v.pubkey == s {
			return true
		}
	}
	return p.own[v.pubkey]
}

// A replaceable or addressable version has tag rows (cn_relay.event_tags) only
// while it is its key's effective version: a #x filter only ever matches
// visible events, and a superseded version is never one, so its rows would
// only cost space. A node-signed member list (kind 39002) re-signed for each
// added member would otherwise keep every earlier list's p tags: storage
// quadratic in the group's size (issue 47). Regular events keep theirs.
//
// dropTagsSQL deletes the tag rows of the events $1 (versions that stop being
// effective), one probe of the primary key per tag of the stored JSON. The
// tags are read first (MATERIALIZED): joined directly, Postgres scanned the
// key's index by (created_at, event_id) and matched every tag against every
// row (measured: 3 million comparisons, seconds, for a member list of 1,700
// tags; 31 ms for 1,500 this way, one primary-key probe each).
// restoreTagsSQL inserts them again from the stored JSON (versions that become
// effective again: a promotion after a deletion or an unhide), with
// queueInsert's rules (single-letter names but t, values of at most 1024
// bytes, one row per name and value); DO NOTHING for rows that were never
// dropped (versions superseded before this rule).
const (
	dropTagsSQL = `WITH t AS MATERIALIZED (
			SELECT e.id, e.created_at, t->>0 AS name, t->>1 AS value
			FROM cn_relay.events e, jsonb_array_elements(e.tags) t WHERE e.id = ANY($1))
		DELETE FROM cn_relay.event_tags g USING t
		WHERE g.name = t.name AND g.value = t.value AND g.created_at = t.created_at AND g.event_id = t.id`
	restoreTagsSQL = `INSERT INTO cn_relay.event_tags (event_id, name, value, created_at)
		SELECT DISTINCT e.id, t->>0, t->>1, e.created_at FROM cn_relay.events e, jsonb_array_elements(e.tags) t
		WHERE e.id = ANY($1) AND t->>1 IS NOT NULL AND octet_length(t->>0) = 1 AND t->>0 <> 't'
		  AND octet_length(t->>1) <= 1024
		ON CONFLICT DO NOTHING`
)

// insertedRows are the new rows of a batch's new events, by column: what
// queueInsert and copyInsert write, so that both write the same rows.
type insertedRows struct {
	ingestedAt time.Time

	// cn_relay.events, one per new event (ids sorted).
	ids, pubkeys, contents, sigs, keys, tags []string
	kinds                                    []int32
	createdAts                               []int64
	expires                                  []*int64
	effective, deleted                       []bool

	// cn_relay.event_topics.
	tIDs, tTopics, tPubkeys []string
	tAts                    []int64
	tKinds                  []int32
	tOwn, tScope            []bool

	// cn_relay.event_tags.
	gIDs, gNames, gValues []string
	gAts                  []int64
}

// insertRows builds the rows, topics and single-letter tags of the new events
// ins.
func insertRows(ins []*stored, ingestedAt time.Time) *insertedRows {
	n := len(ins)
	r := &insertedRows{ingestedAt: ingestedAt,
		ids: make([]string, n), pubkeys: make([]string, n), contents: make([]string, n), sigs: make([]string, n),
		keys: make([]string, n), tags: make([]string, n), kinds: make([]int32, n), createdAts: make([]int64, n),
		expires: make([]*int64, n), effective: make([]bool, n), deleted: make([]bool, n)}
	for i, st := range ins {
		ev := st.ev
		r.ids[i], r.pubkeys[i], r.contents[i], r.sigs[i], r.keys[i] = ev.ID, ev.PubKey, ev.Content, ev.Sig, st.effectiveKey
		r.kinds[i], r.createdAts[i] = int32(ev.Kind), int64(ev.CreatedAt)
		r.effective[i], r.deleted[i] = st.effective && !st.deleted, st.deleted
		if exp, ok := protocol.Expiration(ev); ok {
			r.expires[i] = &exp
		}
		tagsJSON, _ := json.Marshal(ev.Tags)
		if ev.Tags == nil {
			tagsJSON = []byte("[]")
		}
		r.tags[i] = string(tagsJSON)
		own := st.topicsAreTags
		for _, t := range st.topics {
			r.topic(ev, t, own, true)
		}
		for _, t := range st.hashtags { // (never NodeTopic: normalised values are lower case)
			r.topic(ev, t, true, false)
		}
		if r.keys[i] != "" && !r.effective[i] {
			continue // a version that is not effective has no tag rows (dropTagsSQL)
		}
		seen := map[[2]string]bool{}
		for _, t := range ev.Tags {
			if len(t) < 2 || len(t[0]) != 1 || t[0] == "t" || len(t[1]) > 1024 {
				continue
			}
			k := [2]string{t[0], t[1]}
			if seen[k] {
				continue
			}
			seen[k] = true
			r.gIDs, r.gNames, r.gValues, r.gAts = append(r.gIDs, ev.ID), append(r.gNames, t[0]), append(r.gValues, t[1]), append(r.gAts, int64(ev.CreatedAt))
		}
	}
	return r
}

func (r *insertedRows) topic(ev *nostr.Event, topic string, own, scope bool) {
	r.tIDs, r.tTopics, r.tAts = append(r.tIDs, ev.ID), append(r.tTopics, topic), append(r.tAts, int64(ev.CreatedAt))
	r.tPubkeys, r.tKinds = append(r.tPubkeys, ev.PubKey), append(r.tKinds, int32(ev.Kind))
	r.tOwn, r.tScope = append(r.tOwn, own), append(r.tScope, scope)
}

// queueInsert queues the rows, topics and single-letter tags of new events,
// as one statement: the inserts into event_topics and event_tags ride along as
// data-modifying CTEs of the insert into events (no trigger or foreign key on
// these tables, so the order within the statement does not matter), one
// statement's bind, executor start and end and reply instead of three
// (insertSQL). Plain INSERTs, no ON CONFLICT: the events are new as the plan's
// load saw them (ids are unique within a batch, topics and tags deduplicated),
// and an event that another transaction stored meanwhile makes the insert fail
// with a unique violation, which Ingest retries (the retry's load then answers
// "duplicate:"). DO NOTHING would instead report the event as stored by this
// batch and append its outbox rows a second time; and it probes every unique
// index once more before inserting (perf: ~5% of the server's CPU per event).
func queueInsert(b *pgx.Batch, r *insertedRows) {
	args := []any{r.ids, r.pubkeys, r.kinds, r.createdAts, r.tags, r.contents, r.sigs, r.keys, r.effective, r.deleted, r.expires, r.ingestedAt}
	topics, tags := len(r.tIDs) > 0, len(r.gIDs) > 0
	if topics {
		args = append(args, r.tIDs, r.tTopics, r.tAts, r.tPubkeys, r.tKinds, r.tOwn, r.tScope)
	}
	if tags {
		args = append(args, r.gIDs, r.gNames, r.gValues, r.gAts)
	}
	b.Queue(insertSQL(topics, tags), args...)
}

// insertEventsSQL inserts the events ($1-$12); insertTopicsSQL the topics
// ($13-$19), insertTagsSQL the tags (the four parameters after the topics'),
// as CTEs of it (insertSQL).
const (
	insertEventsSQL = `
		INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig, ingested_at,
		                             effective_key, is_effective, deleted_at, deleted_reason, expires_at)
		SELECT id, pubkey, kind, created_at, tags::jsonb, content, sig, $12,
		       nullif(key, ''), effective, CASE WHEN deleted THEN $12::timestamptz END,
		       CASE WHEN deleted THEN '` + string(outbox.ReasonNIP09) + `' END, expires
		FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[],
		            $8::text[], $9::bool[], $10::bool[], $11::bigint[])
		     AS u(id, pubkey, kind, created_at, tags, content, sig, key, effective, deleted, expires)`
	insertTopicsSQL = `INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at, pubkey, kind, own, scope)
			SELECT * FROM unnest($13::text[], $14::text[], $15::bigint[], $16::text[], $17::int[], $18::bool[], $19::bool[])`
	insertTagsSQL = `INSERT INTO cn_relay.event_tags (event_id, name, value, created_at)
			SELECT * FROM unnest($%d::text[], $%d::text[], $%d::text[], $%d::bigint[])`
)

// insertSQL is the one statement of queueInsert: the events' insert, with the
// topics' and the tags' inserts as CTEs when there are any.
func insertSQL(topics, tags bool) string {
	var ctes []string
	if topics {
		ctes = append(ctes, "topics AS ("+insertTopicsSQL+")")
	}
	if tags {
		n := 13
		if topics {
			n = 20
		}
		ctes = append(ctes, "tags AS ("+fmt.Sprintf(insertTagsSQL, n, n+1, n+2, n+3)+")")
	}
	if len(ctes) == 0 {
		return insertEventsSQL
	}
	return "WITH " + strings.Join(ctes, ", ") + insertEventsSQL
}

// copyInsert writes the rows queueInsert would queue, with one COPY per table
// (copyWrites).
func copyInsert(ctx context.Context, tx pgx.Tx, r *insertedRows) error {
	reason := string(outbox.ReasonNIP09)
	deletedAt := r.ingestedAt
	events := &columnSource{n: len(r.ids), row: make([]any, 13)}
	events.fill = func(i int, row []any) {
		var key, at, why any
		if r.keys[i] != "" {
			key = r.keys[i]
		}
		if r.deleted[i] {
			at, why = deletedAt, reason
		}
		var exp any
		if r.expires[i] != nil {
			exp = *r.expires[i]
		}
		row[0], row[1], row[2], row[3], row[4], row[5], row[6] = r.ids[i], r.pubkeys[i], r.kinds[i], r.createdAts[i], r.tags[i], r.contents[i], r.sigs[i]
		row[7], row[8], row[9], row[10], row[11], row[12] = r.ingestedAt, key, r.effective[i], at, why, exp
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cn_relay", "events"},
		[]string{"id", "pubkey", "kind", "created_at", "tags", "content", "sig", "ingested_at",
			"effective_key", "is_effective", "deleted_at", "deleted_reason", "expires_at"}, events); err != nil {
		return fmt.Errorf("copy events: %w", err)
	}
	if len(r.tIDs) > 0 {
		topics := &columnSource{n: len(r.tIDs), row: make([]any, 7)}
		topics.fill = func(i int, row []any) {
			row[0], row[1], row[2], row[3], row[4], row[5], row[6] = r.tIDs[i], r.tTopics[i], r.tAts[i], r.tPubkeys[i], r.tKinds[i], r.tOwn[i], r.tScope[i]
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cn_relay", "event_topics"},
			[]string{"event_id", "topic_id", "created_at", "pubkey", "kind", "own", "scope"}, topics); err != nil {
			return fmt.Errorf("copy event topics: %w", err)
		}
	}
	if len(r.gIDs) > 0 {
		tags := &columnSource{n: len(r.gIDs), row: make([]any, 4)}
		tags.fill = func(i int, row []any) {
			row[0], row[1], row[2], row[3] = r.gIDs[i], r.gNames[i], r.gValues[i], r.gAts[i]
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cn_relay", "event_tags"},
			[]string{"event_id", "name", "value", "created_at"}, tags); err != nil {
			return fmt.Errorf("copy event tags: %w", err)
		}
	}
	return nil
}

// columnSource is a pgx.CopyFromSource over rows held by column: fill sets
// row i's values into one reused slice (pgx encodes a row before asking for
// the next).
type columnSource struct {
	n, i int
	row  []any
	fill func(i int, row []any)
}

func (c *columnSource) Next() bool {
	if c.i >= c.n {
		return false
	}
	c.i++
	return true
}

func (c *columnSource) Values() ([]any, error) {
	c.fill(c.i-1, c.row)
	return c.row, nil
}

func (c *columnSource) Err() error { return nil }
