package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Store is the relay's event store. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	writer  *outbox.Writer
	rules   protocol.TopicRules
	now     func() time.Time
	members memberCache
}

// memberCache remembers authors known to be members, so that a batch of
// regulars does not look them up again. Membership is never revoked, so a
// cached entry never goes stale; the cache is cleared when it reaches
// maxCachedMembers entries (about 15 MB).
type memberCache struct {
	mu    sync.Mutex
	known map[string]struct{}
}

const maxCachedMembers = 100_000

// unknown returns the authors not known to be members.
func (c *memberCache) unknown(authors map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for a := range authors {
		if _, ok := c.known[a]; !ok {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// add remembers members (call after the commit that made them members).
func (c *memberCache) add(members map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil || len(c.known)+len(members) > maxCachedMembers {
		c.known = make(map[string]struct{}, len(members))
	}
	for m := range members {
		c.known[m] = struct{}{}
	}
}

// New returns a Store that writes through writer (whose Run the caller runs) and
// applies the topic rules that depend on stored state (see Ingest).
func New(pool *pgxpool.Pool, writer *outbox.Writer, rules protocol.TopicRules) *Store {
	return &Store{pool: pool, writer: writer, rules: rules, now: time.Now}
}

const (
	msgDuplicate     = "duplicate: already have this event"
	msgDeleted       = "blocked: this event was deleted"
	msgDeletedByAuth = "blocked: this event was deleted by its author"

	reasonNIP09      = "nip09"
	reasonModeration = "moderation"
)

// Ingest stores verified, non-ephemeral events in one transaction ending with the
// outbox append and returns one result per event, in order. An error means nothing
// was stored. A batch that loses a race with another relay (deadlock, unique key)
// is retried a few times.
//
// Each stored event gets its topics here, and they go into event_topics and into
// the outbox (one row per topic): an identity event (protocol.IsIdentityKind) gets
// protocol.NodeTopic, and only from a member when the rules say so; an event with
// `t` tags gets those; any other event inherits the topics of the events it
// references (protocol.TopicRefs) that are stored, or accepted earlier in the
// same batch, keeping the enabled ones. One that ends with no topic is refused
// (protocol.ReasonMissingTopic, or ReasonTopicNotEnabled when everything it
// inherited is disabled) unless its kind is exempt or topics are not required.
// Inheritance follows arrival: a reply that arrives before its parent has
// nothing to inherit from. An author becomes a member (cn_relay.members) with
// the first stored event in a community topic.
func (s *Store) Ingest(ctx context.Context, evs []*nostr.Event) ([]protocol.Verdict, error) {
	var results []protocol.Verdict
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		results, err = s.ingestOnce(ctx, evs)
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ingest %d events: %w", len(evs), err)
	}
	return results, nil
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001" || pgErr.Code == "23505")
}

// IngestTx stores events as Ingest does, but inside the caller's transaction,
// which the caller commits and then announces (outbox.Notifier): a consumer
// publishes the node's own events (labels, assertions) in the transaction that
// moves its offset, so they are written exactly once with its other effects.
// The events are trusted (no ValidateEvent: the node made and signed them); the
// topic rules apply. The outbox append is the last statement: it holds the
// outbox lock until the caller's commit, so commit soon after.
func (s *Store) IngestTx(ctx context.Context, tx outbox.Batcher, evs []*nostr.Event) ([]protocol.Verdict, outbox.Range, error) {
	p := s.newPlan(evs)
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return nil, outbox.Range{}, fmt.Errorf("ingest %d events: %w", len(evs), err)
	}
	return p.results, r, nil
}

// runTx loads, decides, writes and appends the outbox rows in tx.
func (p *plan) runTx(ctx context.Context, tx outbox.Batcher) (outbox.Range, error) {
	if err := p.load(ctx, tx); err != nil {
		return outbox.Range{}, err
	}
	p.decide()
	var b pgx.Batch
	p.queueWrites(&b)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return outbox.Range{}, fmt.Errorf("write events: %w", err)
		}
	}
	r, err := outbox.Append(ctx, tx, p.records)
	if err != nil {
		return outbox.Range{}, err
	}
	var restore pgx.Batch
	queueRestorePlans(&restore)
	if err := tx.SendBatch(ctx, &restore).Close(); err != nil {
		return outbox.Range{}, fmt.Errorf("restore plan mode: %w", err)
	}
	return r, nil
}

func (s *Store) ingestOnce(ctx context.Context, evs []*nostr.Event) ([]protocol.Verdict, error) {
	p := s.newPlan(evs)
	_, err := s.writer.WriteBatch(ctx, func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) ([]outbox.Record, error) {
		if err := p.load(ctx, tx); err != nil {
			return nil, err
		}
		p.decide()
		p.queueWrites(b) // they travel with the outbox append and the commit
		return p.records, nil
	})
	if err != nil {
		return nil, err
	}
	s.members.add(p.members) // committed
	return p.results, nil
}

// stored is what the plan knows about a stored (or newly inserted) event.
type stored struct {
	id           string
	pubkey       string
	kind         int
	createdAt    int64
	effectiveKey string
	effective    bool
	deleted      bool
	reason       string // why it is deleted: nip09, expiration or moderation
	topics       []string
	isNew        bool
	own          bool         // topics are the event's own t tags (new events only)
	ev           *nostr.Event // new events only
}

// ownTopics reports whether a new event's topics are its own `t` tags (which
// #t REQs match) rather than inherited ones or NodeTopic (which only consumers
// see). An event has either kind, never both (see topicsOf).
func (st *stored) ownTopics() bool { return st.own }

// plan is one Ingest batch: what it loaded, what it decided, what it will write.
type plan struct {
	evs        []*nostr.Event
	ingestedAt time.Time
	results    []protocol.Verdict

	byID       map[string]*stored         // stored rows for incoming ids and deletion targets
	versions   map[string][]*stored       // effective key -> every stored version
	tombIDs    map[string]map[string]bool // deleted id -> authors who asked
	tombAddr   map[string]int64           // address -> newest deletion created_at
	oldWinner  map[string]string          // effective key -> id effective before the batch
	touched    map[string]bool            // effective keys whose versions changed
	topicSeen  map[[2]string]bool         // (event id, topic) pairs loaded
	newTombs   [][4]string                // target, pubkey, deletion id, created_at
	deletedIDs []string                   // stored or new events deleted by this batch
	hideIDs    []string                   // events to hide (reason moderation)
	unhideIDs  []string                   // events to show again
	unhidden   []string                   // events this plan shows again
	outcomes   map[string]Outcome         // what hiding or unhiding did, by id
	records    []outbox.Record

	rules      protocol.TopicRules
	refTopics  map[string][]string // referenced stored id or effective key -> its topics
	members    map[string]bool     // authors known to be members (cached, loaded or new)
	ownTopics  map[string][]string // event id -> its normalised t tags, computed once per batch
	trusted    bool                // the node's own events (PublishTx): identity events need no membership
	cache      *memberCache
	newMembers [][2]string // pubkey, first event id
}

func (s *Store) newPlan(evs []*nostr.Event) *plan {
	p := newPlan(evs, s.now(), s.rules)
	p.cache = &s.members
	return p
}

func newPlan(evs []*nostr.Event, now time.Time, rules protocol.TopicRules) *plan {
	return &plan{
		evs: evs, ingestedAt: now, results: make([]protocol.Verdict, len(evs)),
		byID: map[string]*stored{}, versions: map[string][]*stored{},
		tombIDs: map[string]map[string]bool{}, tombAddr: map[string]int64{},
		oldWinner: map[string]string{}, touched: map[string]bool{}, topicSeen: map[[2]string]bool{},
		rules: rules, refTopics: map[string][]string{}, members: map[string]bool{}, outcomes: map[string]Outcome{},
		ownTopics: make(map[string][]string, len(evs)),
	}
}

// address is the NIP-09 'a' address of a replaceable or addressable event.
func address(kind int, pubkey, d string) string {
	return strconv.Itoa(kind) + ":" + pubkey + ":" + d
}

// addressOfKey maps an effective key to its 'a' address: "kind:pubkey:" for a
// replaceable key, the key itself for an addressable one.
func addressOfKey(key string) string {
	if strings.Count(key, ":") == 1 {
		return key + ":"
	}
	return key
}

// keyOfAddress maps an 'a' address to the effective key of the events it names.
func keyOfAddress(a string) (key string, kind int, pubkey string, ok bool) {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 {
		return "", 0, "", false
	}
	k, err := strconv.Atoi(parts[0])
	if err != nil || len(parts[1]) != 64 {
		return "", 0, "", false
	}
	switch protocol.ClassOf(k) {
	case protocol.Replaceable:
		return parts[0] + ":" + parts[1], k, parts[1], true
	case protocol.Addressable:
		return a, k, parts[1], true
	}
	return "", 0, "", false
}

// deletionTargets returns the 'e' ids and the 'a' addresses (own author only) of a kind 5 event.
func deletionTargets(ev *nostr.Event) (ids, addrs []string) {
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			if len(t[1]) == 64 {
				ids = append(ids, t[1])
			}
		case "a":
			if _, _, pk, ok := keyOfAddress(t[1]); ok && pk == ev.PubKey {
				addrs = append(addrs, t[1])
			}
		}
	}
	return ids, addrs
}

func eventAddress(ev *nostr.Event) string {
	d, _ := protocol.DTag(ev)
	if protocol.ClassOf(ev.Kind) == protocol.Replaceable {
		d = ""
	}
	return address(ev.Kind, ev.PubKey, d)
}

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
	for _, id := range slices.Concat(p.hideIDs, p.unhideIDs) {
		ids[id] = true
		targetIDs[id] = true
	}
	for _, ev := range p.evs {
		ids[ev.ID] = true
		authors[ev.PubKey] = true
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
		}
		if k := protocol.EffectiveKey(ev); k != "" {
			keys[k] = true
			addrs[eventAddress(ev)] = true
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
	var b pgx.Batch
	queueGenericPlans(&b)
	queueLocks(&b, keys)
	b.Queue(`SELECT id, pubkey, kind, created_at, coalesce(effective_key, ''), is_effective, coalesce(deleted_reason, '')
		FROM cn_relay.events WHERE id = ANY($1)`, setSlice(ids)).
		Query(func(rows pgx.Rows) error { return p.scanStored(rows, nil) })
	p.queueVersions(&b, keys, targetIDs)
	targets := append(setSlice(ids), setSlice(addrs)...)
	b.Queue(`SELECT target, pubkey, max(created_at) FROM cn_relay.deletion_targets
		WHERE target = ANY($1) GROUP BY target, pubkey`, targets).Query(p.scanTombstones)
	if len(refIDs) > 0 {
		b.Queue("SELECT event_id, topic_id FROM cn_relay.event_topics WHERE event_id = ANY($1)", setSlice(refIDs)).
			Query(p.scanRefTopics)
	}
	if len(refKeys) > 0 {
		b.Queue(`SELECT DISTINCT e.effective_key, t.topic_id FROM cn_relay.events e
			JOIN cn_relay.event_topics t ON t.event_id = e.id WHERE e.effective_key = ANY($1)`, setSlice(refKeys)).
			Query(p.scanRefTopics)
	}
	lookup := setSlice(authors)
	if p.cache != nil {
		lookup = p.cache.unknown(authors)
		for a := range authors {
			if !slices.Contains(lookup, a) {
				p.members[a] = true
			}
		}
	}
	if len(lookup) > 0 {
		b.Queue("SELECT pubkey FROM cn_relay.members WHERE pubkey = ANY($1)", lookup).Query(p.scanMembers)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load: %w", err)
	}

	// Deletion targets may belong to keys not locked yet.
	more := map[string]bool{}
	for _, st := range p.byID {
		if st.effectiveKey != "" && !keys[st.effectiveKey] {
			more[st.effectiveKey] = true
		}
	}
	if len(more) > 0 {
		var b pgx.Batch
		queueLocks(&b, more)
		p.queueVersions(&b, more, nil)
		var moreAddrs []string // for unhiding: NIP-09 'a' deletions of these keys
		for k := range more {
			moreAddrs = append(moreAddrs, addressOfKey(k))
		}
		b.Queue(`SELECT target, pubkey, max(created_at) FROM cn_relay.deletion_targets
			WHERE target = ANY($1) GROUP BY target, pubkey`, moreAddrs).Query(p.scanTombstones)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("load more versions: %w", err)
		}
	}
	for k, vs := range p.versions {
		for _, v := range vs {
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
// on after the ingest (IngestTx, DryRunTx); a transaction that ends with the
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
		b.Queue("SELECT event_id, topic_id FROM cn_relay.event_topics WHERE event_id = ANY($1) ORDER BY event_id, topic_id",
			setSlice(ids)).Query(p.scanTopics)
	}
	if len(keys) > 0 {
		b.Queue(`SELECT t.event_id, t.topic_id FROM cn_relay.events e JOIN cn_relay.event_topics t ON t.event_id = e.id
			WHERE e.effective_key = ANY($1) ORDER BY t.event_id, t.topic_id`, setSlice(keys)).Query(p.scanTopics)
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
		if st := index[id]; st != nil && !p.topicSeen[[2]string{id, topic}] {
			p.topicSeen[[2]string{id, topic}] = true
			st.topics = append(st.topics, topic)
		}
	}
	return rows.Err()
}

// inherits reports whether ev takes its topics from the events it references:
// it is no identity event and has no topic of its own.
func (p *plan) inherits(ev *nostr.Event) bool {
	return !protocol.IsIdentityKind(ev.Kind) && len(p.topics(ev)) == 0
}

// topics returns ev's own normalised t tags (protocol.Topics), normalising
// them once per batch.
func (p *plan) topics(ev *nostr.Event) []string {
	t, ok := p.ownTopics[ev.ID]
	if !ok {
		t = protocol.Topics(ev)
		p.ownTopics[ev.ID] = t
	}
	return t
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

func (p *plan) addTombID(id, pubkey string) {
	if p.tombIDs[id] == nil {
		p.tombIDs[id] = map[string]bool{}
	}
	p.tombIDs[id][pubkey] = true
}

// queueLocks queues the transaction-level advisory lock of each key in sorted
// order, so that concurrent batches cannot deadlock on them.
func queueLocks(b *pgx.Batch, keys map[string]bool) {
	for _, k := range setSlice(keys) {
		b.Queue("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", k)
	}
}

func setSlice(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decide walks the batch in order and settles each event against the stored state
// and the events before it.
func (p *plan) decide() {
	for i, ev := range p.evs {
		if prev := p.byID[ev.ID]; prev != nil {
			switch {
			case prev.deleted:
				p.results[i] = protocol.Verdict{OK: false, Message: msgDeleted}
			default:
				p.results[i] = protocol.Verdict{OK: true, Message: msgDuplicate}
			}
			continue
		}
		if p.tombIDs[ev.ID][ev.PubKey] {
			p.results[i] = protocol.Verdict{OK: false, Message: msgDeletedByAuth}
			continue
		}
		key := protocol.EffectiveKey(ev)
		if key != "" {
			if at, ok := p.tombAddr[eventAddress(ev)]; ok && int64(ev.CreatedAt) <= at {
				p.results[i] = protocol.Verdict{OK: false, Message: msgDeletedByAuth}
				continue
			}
		}
		topics, reason := p.topicsOf(ev)
		if reason != "" {
			p.results[i] = protocol.Verdict{OK: false, Message: reason}
			continue
		}
		p.join(ev, topics)
		st := &stored{id: ev.ID, pubkey: ev.PubKey, kind: ev.Kind, createdAt: int64(ev.CreatedAt),
			effectiveKey: key, effective: key == "", topics: topics, isNew: true, ev: ev,
			own: !protocol.IsIdentityKind(ev.Kind) && len(p.topics(ev)) > 0}
		p.byID[ev.ID] = st
		p.results[i] = protocol.Verdict{OK: true, Message: ""}
		if key != "" {
			p.versions[key] = append(p.versions[key], st)
			p.touched[key] = true
		} else {
			p.upserts(st)
		}
		if ev.Kind == nostr.KindDeletion {
			p.applyDeletion(ev)
		}
	}
	p.applyModeration()
	p.settleKeys()
}

// topicsOf returns the topics ev is stored under, or the reason it is refused
// (see Ingest).
func (p *plan) topicsOf(ev *nostr.Event) ([]string, string) {
	if protocol.IsIdentityKind(ev.Kind) {
		if !p.trusted && p.rules.IdentityWriters != protocol.IdentityWritersAny && !p.members[ev.PubKey] {
			return nil, protocol.ReasonIdentityMembers
		}
		return []string{protocol.NodeTopic}, ""
	}
	if own := p.topics(ev); len(own) > 0 {
		for _, t := range own {
			if t == protocol.NodeTopic || !p.rules.Enabled(t) { // (ValidateEvent refused these already)
				return nil, protocol.ReasonTopicNotEnabled
			}
		}
		return own, ""
	}
	inherited := p.inherit(ev)
	var enabled []string
	for _, t := range inherited {
		if p.rules.Enabled(t) {
			enabled = append(enabled, t)
		}
	}
	switch {
	case len(enabled) > 0:
		return enabled, ""
	case p.rules.TopicExemptKinds[ev.Kind]:
		return nil, ""
	case len(inherited) > 0:
		return nil, protocol.ReasonTopicNotEnabled
	case !p.rules.RequireTopic:
		return nil, ""
	}
	return nil, protocol.ReasonMissingTopic
}

// inherit returns the sorted union of the topics of the events ev references:
// stored ones, and ones accepted earlier in this batch.
func (p *plan) inherit(ev *nostr.Event) []string {
	set := map[string]bool{}
	add := func(topics []string) {
		for _, t := range topics {
			set[t] = true
		}
	}
	refs := protocol.TopicRefs(ev)
	for _, id := range refs.IDs {
		add(p.refTopics[id])
		if st := p.byID[id]; st != nil && st.isNew {
			add(st.topics)
		}
	}
	for _, a := range refs.Addresses {
		key, _, _, ok := keyOfAddress(a)
		if !ok {
			continue
		}
		add(p.refTopics[key])
		for _, v := range p.versions[key] {
			if v.isNew {
				add(v.topics)
			}
		}
	}
	return setSlice(set)
}

// join makes ev's author a member when ev is stored in a community topic.
func (p *plan) join(ev *nostr.Event, topics []string) {
	if p.members[ev.PubKey] || !slices.ContainsFunc(topics, func(t string) bool { return t != protocol.NodeTopic }) {
		return
	}
	p.members[ev.PubKey] = true
	p.newMembers = append(p.newMembers, [2]string{ev.PubKey, ev.ID})
}

// applyDeletion soft-deletes the author's targets and remembers them.
func (p *plan) applyDeletion(ev *nostr.Event) {
	ids, addrs := deletionTargets(ev)
	at := int64(ev.CreatedAt)
	for _, id := range ids {
		p.newTombs = append(p.newTombs, [4]string{id, ev.PubKey, ev.ID, strconv.FormatInt(at, 10)})
		p.addTombID(id, ev.PubKey)
		if t := p.byID[id]; t != nil && t.pubkey == ev.PubKey && t.kind != nostr.KindDeletion {
			p.delete(t)
		}
	}
	for _, a := range addrs {
		p.newTombs = append(p.newTombs, [4]string{a, ev.PubKey, ev.ID, strconv.FormatInt(at, 10)})
		p.tombAddr[a] = max(p.tombAddr[a], at)
		key, _, _, _ := keyOfAddress(a)
		for _, v := range p.versions[key] {
			if v.createdAt <= at {
				p.delete(v)
			}
		}
	}
}

// delete marks st deleted (reason nip09 unless set); a visible regular event
// gets its delete rows now, effective-keyed events are settled in settleKeys.
func (p *plan) delete(st *stored) {
	if st.deleted {
		return
	}
	st.deleted = true
	if st.reason == "" {
		st.reason = reasonNIP09
	}
	p.deletedIDs = append(p.deletedIDs, st.id)
	if st.effectiveKey != "" {
		p.touched[st.effectiveKey] = true
		return
	}
	p.deletes(st, st.reason)
}

// settleKeys recomputes the effective version of every touched key: the newest
// non-deleted version, ties by lowest id.
func (p *plan) settleKeys() {
	for _, key := range setSlice(p.touched) {
		var winner *stored
		for _, v := range p.versions[key] {
			if v.deleted {
				continue
			}
			if winner == nil || v.createdAt > winner.createdAt || (v.createdAt == winner.createdAt && v.id < winner.id) {
				winner = v
			}
		}
		oldID := p.oldWinner[key]
		for _, v := range p.versions[key] {
			if v.id == oldID && v.deleted {
				p.deletes(v, v.reason) // the visible version goes away
			}
			v.effective = v == winner
		}
		if winner != nil && winner.id != oldID {
			p.upserts(winner)
		}
	}
}

func (p *plan) upserts(st *stored) {
	for _, t := range st.topics {
		p.records = append(p.records, outbox.Record{Op: outbox.OpUpsert, EventID: st.id, TopicID: t, Kind: st.kind,
			CreatedAt: st.createdAt, IngestedAt: p.ingestedAt, EffectiveKey: st.effectiveKey})
	}
}

func (p *plan) deletes(st *stored, reason string) {
	for _, t := range st.topics {
		p.records = append(p.records, outbox.Record{Op: outbox.OpDelete, EventID: st.id, TopicID: t, Kind: st.kind,
			CreatedAt: st.createdAt, IngestedAt: p.ingestedAt, EffectiveKey: st.effectiveKey, Reason: reason})
	}
}

// queueWrites queues the decisions: the updates of stored rows first (effective
// flags off before flags on and before the new rows: the unique effective-key
// index), then the new rows, members and tombstones.
func (p *plan) queueWrites(b *pgx.Batch) {
	var off, on []string
	var ins []*stored
	for _, st := range p.byID {
		if st.isNew {
			ins = append(ins, st)
		}
	}
	for _, vs := range p.versions {
		for _, v := range vs {
			if v.isNew {
				continue
			}
			was := v.id == p.oldWinner[v.effectiveKey]
			switch {
			case was && !v.effective:
				off = append(off, v.id)
			case !was && v.effective:
				on = append(on, v.id)
			}
		}
	}
	slices.SortFunc(ins, func(x, y *stored) int { return strings.Compare(x.id, y.id) })

	if len(off) > 0 {
		b.Queue("UPDATE cn_relay.events SET is_effective = false WHERE id = ANY($1)", off)
	}
	if len(on) > 0 {
		b.Queue("UPDATE cn_relay.events SET is_effective = true WHERE id = ANY($1)", on)
	}
	oldDeleted := map[string][]string{} // reason -> ids
	for _, id := range p.deletedIDs {
		if st := p.byID[id]; st != nil && !st.isNew {
			oldDeleted[st.reason] = append(oldDeleted[st.reason], id)
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(oldDeleted)) {
		b.Queue(`UPDATE cn_relay.events SET deleted_at = now(), deleted_reason = $2
			WHERE id = ANY($1) AND deleted_at IS NULL`, oldDeleted[reason], reason)
	}
	if len(p.unhidden) > 0 {
		b.Queue(`UPDATE cn_relay.events SET deleted_at = NULL, deleted_reason = NULL
			WHERE id = ANY($1) AND deleted_reason = 'moderation'`, p.unhidden)
	}
	if len(ins) > 0 {
		queueInsert(b, ins, p.ingestedAt)
	}
	if len(p.newMembers) > 0 {
		slices.SortFunc(p.newMembers, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
		pubkeys, firsts := make([]string, len(p.newMembers)), make([]string, len(p.newMembers))
		for i, m := range p.newMembers {
			pubkeys[i], firsts[i] = m[0], m[1]
		}
		b.Queue(`INSERT INTO cn_relay.members (pubkey, first_event_id, joined_at)
			SELECT pk, id, $3 FROM unnest($1::text[], $2::text[]) AS u(pk, id) ON CONFLICT DO NOTHING`,
			pubkeys, firsts, p.ingestedAt)
	}
	if len(p.newTombs) > 0 {
		cols := [4][]string{}
		for _, t := range p.newTombs {
			for i := range cols {
				cols[i] = append(cols[i], t[i])
			}
		}
		b.Queue(`INSERT INTO cn_relay.deletion_targets (target, pubkey, deletion_id, created_at)
			SELECT t, pk, d, at::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(t, pk, d, at)
			ON CONFLICT DO NOTHING`, cols[0], cols[1], cols[2], cols[3])
	}
}

// queueInsert queues the rows, topics and single-letter tags of new events.
// Plain INSERTs, no ON CONFLICT: the events are new as the plan's load saw them
// (ids are unique within a batch, topics and tags deduplicated), and an event
// that another transaction stored meanwhile makes the insert fail with a unique
// violation, which Ingest retries (the retry's load then answers "duplicate:").
// DO NOTHING would instead report the event as stored by this batch and append
// its outbox rows a second time; and it probes every unique index once more
// before inserting (perf: ~5% of the server's CPU per event).
func queueInsert(b *pgx.Batch, ins []*stored, ingestedAt time.Time) {
	n := len(ins)
	ids, pubkeys, contents, sigs, keys, tags := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	kinds, createdAts, expires := make([]int32, n), make([]int64, n), make([]*int64, n)
	effective, deleted := make([]bool, n), make([]bool, n)
	var tIDs, tTopics, tPubkeys []string
	var tAts []int64
	var tKinds []int32
	var tOwn []bool
	var gIDs, gNames, gValues []string
	var gAts []int64
	for i, st := range ins {
		ev := st.ev
		ids[i], pubkeys[i], contents[i], sigs[i], keys[i] = ev.ID, ev.PubKey, ev.Content, ev.Sig, st.effectiveKey
		kinds[i], createdAts[i] = int32(ev.Kind), int64(ev.CreatedAt)
		effective[i], deleted[i] = st.effective && !st.deleted, st.deleted
		if exp, ok := protocol.Expiration(ev); ok {
			expires[i] = &exp
		}
		tagsJSON, _ := json.Marshal(ev.Tags)
		if ev.Tags == nil {
			tagsJSON = []byte("[]")
		}
		tags[i] = string(tagsJSON)
		own := st.ownTopics()
		for _, t := range st.topics {
			tIDs, tTopics, tAts = append(tIDs, ev.ID), append(tTopics, t), append(tAts, int64(ev.CreatedAt))
			tPubkeys, tKinds, tOwn = append(tPubkeys, ev.PubKey), append(tKinds, int32(ev.Kind)), append(tOwn, own)
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
			gIDs, gNames, gValues, gAts = append(gIDs, ev.ID), append(gNames, t[0]), append(gValues, t[1]), append(gAts, int64(ev.CreatedAt))
		}
	}
	b.Queue(`
		INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig, ingested_at,
		                             effective_key, is_effective, deleted_at, deleted_reason, expires_at)
		SELECT id, pubkey, kind, created_at, tags::jsonb, content, sig, $12,
		       nullif(key, ''), effective, CASE WHEN deleted THEN $12::timestamptz END,
		       CASE WHEN deleted THEN 'nip09' END, expires
		FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[],
		            $8::text[], $9::bool[], $10::bool[], $11::bigint[])
		     AS u(id, pubkey, kind, created_at, tags, content, sig, key, effective, deleted, expires)`,
		ids, pubkeys, kinds, createdAts, tags, contents, sigs, keys, effective, deleted, expires, ingestedAt)
	if len(tIDs) > 0 {
		b.Queue(`INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at, pubkey, kind, own)
			SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::int[], $6::bool[])`,
			tIDs, tTopics, tAts, tPubkeys, tKinds, tOwn)
	}
	if len(gIDs) > 0 {
		b.Queue(`INSERT INTO cn_relay.event_tags (event_id, name, value, created_at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])`, gIDs, gNames, gValues, gAts)
	}
}
