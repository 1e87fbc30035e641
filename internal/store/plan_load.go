package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
	"github.com/nbd-wtf/go-nostr"
)

// load reads what the decisions need, after taking the effective-key locks, in
// one pipelined round trip; a second one only when deletion targets turn out to
// belong to keys not locked yet.
func (p *plan) load(ctx context.Context, tx outbox.Batcher) error {
	ids := map[string]bool{}
	targetIDs := map[string]bool{} // 'e' targets: their topics are needed for delete rows
	keys := map[string]bool{}
	addrs := map[string]bool{}
	refIDs, refKeys := map[string]bool{}, map[string]bool{} // topic sources (inheritance)
	authors := map[string]bool{}
	people := map[string]bool{} // whose membership the decisions ask: authors, and the p tags of person kinds
	n := &needs{ids: ids, targetIDs: targetIDs, keys: keys, addrs: addrs, people: people}
	for _, id := range slices.Concat(p.hideIDs, p.unhideIDs) {
		ids[id] = true
		targetIDs[id] = true
	}
	for _, pk := range p.admitting {
		authors[pk], people[pk] = true, true
	}
	for _, ev := range p.evs {
		ids[ev.ID] = true
		authors[ev.PubKey], people[ev.PubKey] = true, true
		if p.inherits(ev) {
			refs := protocol.TopicRefs(ev)
			for _, id := range refs.IDs {
				refIDs[id] = true
			}
			for _, a := range refs.Addresses {
				if k, _, _, ok := keyOfAddress(a); ok {
					refKeys[k] = true
				}
			}
			if protocol.IsPersonKind(ev.Kind) {
				for _, pk := range protocol.PersonRefs(ev) {
					people[pk] = true
				}
			}
		}
		if k := protocol.EffectiveKey(ev); k != "" {
			keys[k] = true
			addrs[eventAddress(ev)] = true
		}
		for _, pt := range p.parts {
			pt.need(ev, n)
		}
		if ev.Kind == nostr.KindDeletion {
			eids, as := deletionTargets(ev)
			for _, id := range eids {
				ids[id] = true
				targetIDs[id] = true
			}
			for _, a := range as {
				k, _, _, _ := keyOfAddress(a)
				keys[k] = true
			}
		}
	}
	for _, pt := range p.parts {
		pt.needBatch(n)
	}
	var b pgx.Batch
	queueGenericPlans(&b)
	for _, pt := range p.parts {
		pt.queueLocks(&b)
	}
	queueLocks(&b, keys)
	maps.Copy(p.locked, keys)
	for _, pt := range p.parts {
		pt.queueLoad(&b, n)
	}
	b.Queue(`SELECT id, pubkey, kind, created_at, coalesce(effective_key, ''), is_effective, coalesce(deleted_reason, '')
		FROM cn_relay.events WHERE id = ANY($1)`, setSlice(ids)).
		Query(func(rows pgx.Rows) error { return p.scanStored(rows, nil) })
	p.queueVersions(&b, keys, targetIDs)
	targets := append(setSlice(ids), setSlice(addrs)...)
	b.Queue(`SELECT target, pubkey, max(created_at) FROM cn_relay.deletion_targets
		WHERE target = ANY($1) GROUP BY target, pubkey`, targets).Query(p.scanTombstones)
	if len(refIDs) > 0 {
		b.Queue(scopeByIDSQL, setSlice(refIDs)).
			Query(p.scanRefTopics)
	}
	if len(refKeys) > 0 {
		b.Queue(`SELECT DISTINCT e.effective_key, t.topic_id FROM cn_relay.events e
			JOIN cn_relay.event_topics t ON t.event_id = e.id WHERE e.effective_key = ANY($1) AND `+schema.ScopeSQL, setSlice(refKeys)).
			Query(p.scanRefTopics)
	}
	p.queueCommunity(&b, people, authors)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := p.loadMoreKeys(ctx, tx, keys); err != nil {
		return err
	}
	for _, pt := range p.parts {
		if err := pt.loadMore(ctx, tx); err != nil {
			return err
		}
	}
	p.noteWinners()
	for _, pt := range p.parts {
		pt.loaded()
	}
	return nil
}

// queueCommunity queues the reads of community membership (the first-post
// rule every event is decided by): which of people are members (those the
// member cache does not already know), and the pending identity events of
// authors not known to be members and of the keys being admitted, which this
// batch may publish (it makes them members) or add to.
func (p *plan) queueCommunity(b *pgx.Batch, people, authors map[string]bool) {
	lookup := setSlice(people)
	if p.cache != nil {
		lookup = p.cache.unknown(people)
		for a := range people {
			if !slices.Contains(lookup, a) {
				p.members[a] = true
			}
		}
	}
	if len(lookup) > 0 {
		b.Queue("SELECT pubkey FROM cn_relay.members WHERE pubkey = ANY($1)", lookup).Query(p.scanMembers)
	}
	waitFor := slices.DeleteFunc(slices.Clone(lookup), func(pk string) bool { return !authors[pk] })
	for _, pk := range p.admitting {
		if !slices.Contains(waitFor, pk) {
			waitFor = append(waitFor, pk)
		}
	}
	if len(waitFor) > 0 && p.keepsPending() {
		b.Queue(`SELECT event, id FROM cn_relay.pending_events WHERE pubkey = ANY($1)`, waitFor).Query(p.scanPending)
	}
}

// loadMoreKeys is the second round trip, only when deletion targets turned
// out to belong to effective keys the first did not lock: it locks them and
// reads their versions and their NIP-09 'a' tombstones (for unhiding).
func (p *plan) loadMoreKeys(ctx context.Context, tx outbox.Batcher, locked map[string]bool) error {
	more := map[string]bool{}
	for _, st := range p.byID {
		if st.effectiveKey != "" && !locked[st.effectiveKey] {
			more[st.effectiveKey] = true
		}
	}
	if len(more) == 0 {
		return nil
	}
	var b pgx.Batch
	queueLocks(&b, more)
	maps.Copy(p.locked, more)
	p.queueVersions(&b, more, nil)
	var moreAddrs []string
	for k := range more {
		moreAddrs = append(moreAddrs, addressOfKey(k))
	}
	b.Queue(`SELECT target, pubkey, max(created_at) FROM cn_relay.deletion_targets
		WHERE target = ANY($1) GROUP BY target, pubkey`, moreAddrs).Query(p.scanTombstones)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load more versions: %w", err)
	}
	return nil
}

// noteWinners remembers the effective version of every loaded key before the
// plan changes anything.
func (p *plan) noteWinners() {
	for k, vs := range p.versions {
		for _, v := range vs {
			if v.effective {
				p.oldWinner[k] = v.id
			}
		}
	}
}

// scanPending reads pending identity events (the newest version per key).
func (p *plan) scanPending(rows pgx.Rows) error {
	for rows.Next() {
		var raw, id string
		if err := rows.Scan(&raw, &id); err != nil {
			return fmt.Errorf("load pending events: %w", err)
		}
		ev := &nostr.Event{}
		if err := json.Unmarshal([]byte(raw), ev); err != nil || ev.ID != id {
			return fmt.Errorf("load pending event %s: unreadable (%v)", id, err)
		}
		key := protocol.EffectiveKey(ev)
		p.waiting[key] = &waiting{ev: ev, idx: -1, rowID: id}
		p.waitFor(ev.PubKey)[key] = true
	}
	return rows.Err()
}

// loadPromoted takes the locks and reads the state that deciding the due
// pending versions loaded from cn_relay.pending_events needs, for those of
// their keys the first load did not cover.
func (p *plan) loadPromoted(ctx context.Context, tx outbox.Batcher, due []*waiting) error {
	ids, keys, targets := map[string]bool{}, map[string]bool{}, []string{}
	for _, w := range due {
		if w.idx >= 0 {
			continue // kept by this batch: loaded with it
		}
		ev := w.ev
		if _, known := p.byID[ev.ID]; !known {
			ids[ev.ID] = true
		}
		if k := protocol.EffectiveKey(ev); !p.locked[k] {
			keys[k] = true
		}
		targets = append(targets, ev.ID, eventAddress(ev))
	}
	if len(ids) == 0 && len(keys) == 0 {
		return nil
	}
	var b pgx.Batch
	queueLocks(&b, keys)
	maps.Copy(p.locked, keys)
	b.Queue(`SELECT id, pubkey, kind, created_at, coalesce(effective_key, ''), is_effective, coalesce(deleted_reason, '')
		FROM cn_relay.events WHERE id = ANY($1)`, setSlice(ids)).
		Query(func(rows pgx.Rows) error { return p.scanStored(rows, nil) })
	p.queueVersions(&b, keys, nil)
	b.Queue(`SELECT target, pubkey, max(created_at) FROM cn_relay.deletion_targets
		WHERE target = ANY($1) GROUP BY target, pubkey`, targets).Query(p.scanTombstones)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load pending keys: %w", err)
	}
	for k := range keys {
		for _, v := range p.versions[k] {
			if v.effective {
				p.oldWinner[k] = v.id
			}
		}
	}
	return nil
}

// queueGenericPlans makes the rest of the transaction plan its statements once
// per connection (prepared, generic) instead of on every batch (the pool's
// force_custom_plan), with sequential scans, hash and merge joins off,
// remembering the session's settings for queueRestorePlans. Every statement of
// an ingest is a key lookup: it reads by primary key or by a unique or partial
// index the values it is given (= ANY of an array no longer than the batch), or
// reads nothing but its parameters (the inserts, the outbox append). So its best
// plan is index probes and nested loops whatever the tables' sizes and
// statistics, and the settings make it that plan even when it is built on empty
// tables (the first batch of a fresh node), where a generic plan would
// otherwise scan them sequentially and keep doing so as they grow (measured:
// an import of 100,000 events at half speed). Planning was the largest single
// cost of a small batch (perf: about a sixth of the server's CPU at 16
// connections).
func queueGenericPlans(b *pgx.Batch) { b.Queue(genericPlansSQL) }

// queueRestorePlans puts the session's settings back in a transaction that goes
// on after the plan (PublishTx, ModerateTx, AdmitTx, DryRunTx); a transaction that ends with the
// ingest needs nothing (the settings are local to it).
func queueRestorePlans(b *pgx.Batch) { b.Queue(restorePlansSQL) }

// genericPlansSQL saves each setting (as cn.ingest_<name>) and sets it, for the
// transaction only; restorePlansSQL sets the saved values back.
var genericPlansSQL, restorePlansSQL = func() (string, string) {
	var saves, sets, restores []string
	for _, kv := range [][2]string{
		{"plan_cache_mode", "force_generic_plan"},
		{"enable_seqscan", "off"},
		{"enable_hashjoin", "off"},
		{"enable_mergejoin", "off"},
	} {
		saved := "cn.ingest_" + kv[0]
		saves = append(saves, fmt.Sprintf("set_config('%s', current_setting('%s'), true)", saved, kv[0]))
		sets = append(sets, fmt.Sprintf("set_config('%s', '%s', true)", kv[0], kv[1]))
		restores = append(restores, fmt.Sprintf("set_config('%s', current_setting('%s'), true)", kv[0], saved))
	}
	return "SELECT " + strings.Join(append(saves, sets...), ", "), "SELECT " + strings.Join(restores, ", ")
}()

// queueVersions queues the read of every version of keys, and of the topics of
// those versions and of the events ids (deletion targets).
func (p *plan) queueVersions(b *pgx.Batch, keys, ids map[string]bool) {
	if len(keys) > 0 {
		b.Queue(`SELECT id, pubkey, kind, created_at, effective_key, is_effective, coalesce(deleted_reason, '')
			FROM cn_relay.events WHERE effective_key = ANY($1)`, setSlice(keys)).
			Query(func(rows pgx.Rows) error { return p.scanStored(rows, p.versions) })
	}
	if len(ids) > 0 {
		b.Queue(scopeByIDSQL+" ORDER BY t.event_id, t.topic_id",
			setSlice(ids)).Query(p.scanTopics)
	}
	if len(keys) > 0 {
		b.Queue(`SELECT t.event_id, t.topic_id FROM cn_relay.events e JOIN cn_relay.event_topics t ON t.event_id = e.id
			WHERE e.effective_key = ANY($1) AND `+schema.ScopeSQL+" ORDER BY t.event_id, t.topic_id", setSlice(keys)).Query(p.scanTopics)
	}
}

// scanTopics attaches topics to the stored rows the plan knows.
func (p *plan) scanTopics(rows pgx.Rows) error {
	index := map[string]*stored{}
	for id, st := range p.byID {
		index[id] = st
	}
	for _, vs := range p.versions {
		for _, v := range vs {
			index[v.id] = v
		}
	}
	for rows.Next() {
		var id, topic string
		if err := rows.Scan(&id, &topic); err != nil {
			return fmt.Errorf("load topics: %w", err)
		}
		if st := index[id]; st != nil && !p.topicSeen[eventTopic{id, topic}] {
			p.topicSeen[eventTopic{id, topic}] = true
			st.topics = append(st.topics, topic)
		}
	}
	return rows.Err()
}

// scanRefTopics reads (event id or effective key, topic) pairs of topic sources.
func (p *plan) scanRefTopics(rows pgx.Rows) error {
	for rows.Next() {
		var ref, topic string
		if err := rows.Scan(&ref, &topic); err != nil {
			return fmt.Errorf("load referenced topics: %w", err)
		}
		p.refTopics[ref] = append(p.refTopics[ref], topic)
	}
	return rows.Err()
}

func (p *plan) scanMembers(rows pgx.Rows) error {
	for rows.Next() {
		var pubkey string
		if err := rows.Scan(&pubkey); err != nil {
			return fmt.Errorf("load members: %w", err)
		}
		p.members[pubkey] = true
	}
	return rows.Err()
}

func (p *plan) scanTombstones(rows pgx.Rows) error {
	for rows.Next() {
		var target, pubkey string
		var at int64
		if err := rows.Scan(&target, &pubkey, &at); err != nil {
			return fmt.Errorf("load deletions: %w", err)
		}
		if len(target) == 64 && !strings.Contains(target, ":") {
			p.addTombID(target, pubkey)
		} else {
			p.tombAddr[target] = max(p.tombAddr[target], at)
		}
	}
	return rows.Err()
}

func (p *plan) scanStored(rows pgx.Rows, into map[string][]*stored) error {
	defer rows.Close()
	for rows.Next() {
		st := &stored{}
		if err := rows.Scan(&st.id, &st.pubkey, &st.kind, &st.createdAt, &st.effectiveKey, &st.effective, &st.reason); err != nil {
			return fmt.Errorf("scan event: %w", err)
		}
		st.deleted = st.reason != ""
		if into == nil {
			p.byID[st.id] = st
			continue
		}
		if prev := p.byID[st.id]; prev != nil {
			st = prev // one struct per id
		}
		into[st.effectiveKey] = append(into[st.effectiveKey], st)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan events: %w", err)
	}
	return nil
}

// queueLocks queues the transaction-level advisory lock of each key in sorted
// order, so that concurrent batches cannot deadlock on them.
func queueLocks(b *pgx.Batch, keys map[string]bool) {
	for _, k := range setSlice(keys) {
		b.Queue("SELECT pg_advisory_xact_lock("+schema.EffectiveKeyLockSQL+")", k)
	}
}
