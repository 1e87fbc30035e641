package store

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/nbd-wtf/go-nostr"
)

// plan is one batch of the store (Ingest, PublishTx, ModerateTx, AdmitTx,
// DryRunTx) in three phases: plan_load.go fills in what is stored, the
// functions of this file decide (pure: no database), and plan_write.go queues
// what they decided. newPlan and the loaded fields below are the whole input
// of the decisions, so a test can set them and decide without a database.
type plan struct {
	// The batch and how to decide it.
	evs        []*nostr.Event
	ingestedAt time.Time
	rules      protocol.TopicRules
	trusted    bool              // the node's own events (PublishTx): identity events need no membership
	hideIDs    []string          // events to hide (reason moderation)
	unhideIDs  []string          // events to show again
	admitting  []string          // keys to make members (AdmitTx)
	gate       func(string) bool // admits non-members as members (Store.SetMemberGate); may be nil
	limits     PendingLimits
	pendingN   int64           // pending rows in all (Publisher.pendingRows) when the plan began
	cache      *memberCache    // members known before the batch (load skips them); may be nil
	own        map[string]bool // further keys of the node's own state (Publisher.SetOwnState); read only

	// Loaded (plan_load.go), then changed by the decisions.
	byID      map[string]*stored         // stored rows for incoming ids and deletion targets
	versions  map[string][]*stored       // effective key -> every stored version
	tombIDs   map[string]map[string]bool // deleted id -> authors who asked
	tombAddr  map[string]int64           // address -> newest deletion created_at
	oldWinner map[string]string          // effective key -> id effective before the batch
	topicSeen map[eventTopic]bool        // scope rows loaded
	refTopics map[string][]string        // referenced stored id or effective key -> its topics
	members   map[string]bool            // authors known to be members (cached, loaded or new)
	waiting   map[string]*waiting        // effective key -> newest pending version
	waitKeys  map[string]map[string]bool // pubkey -> its pending effective keys
	locked    map[string]bool            // effective keys whose locks this transaction holds
	tagCache  map[string][]string        // event id -> its normalised t tags, computed once per batch

	// Decided.
	results          []protocol.Verdict // one per event of evs
	touched          map[string]bool    // effective keys whose versions changed
	newTombs         []tombstone        // NIP-09 targets this batch remembers
	newMembers       []newMember        // authors this batch makes members
	deletedIDs       []string           // stored or new events deleted by this batch
	unhidden         []string           // events this plan shows again
	outcomes         map[string]Outcome // what hiding or unhiding did, by id
	kept             int64              // pending rows this plan adds
	promoted         []*nostr.Event     // pending versions this plan publishes
	promotedVerdicts []protocol.Verdict // what publishing each promoted event decided
	unpend           []string           // ids of pending rows to delete (published)
	records          []outbox.Record    // the outbox rows, in order

	// The rooms (parts.go): NIP-29 groups and NIP-43 membership, each with
	// what it loaded and decided.
	parts []part
}

// tombstone is one NIP-09 target (an event id or an 'a' address) that a
// deletion by pubkey names (cn_relay.deletion_targets).
type tombstone struct {
	target     string
	pubkey     string
	deletionID string
	createdAt  int64 // the deletion's created_at: an address deletion covers versions up to it
}

// newMember is an author this batch makes a member (cn_relay.members).
type newMember struct {
	pubkey  string
	firstID string // the event that made them one; "" for an operator's decision
}

// eventTopic is one scope row of cn_relay.event_topics.
type eventTopic struct{ eventID, topic string }

func newPlan(evs []*nostr.Event, now time.Time, rules protocol.TopicRules) *plan {
	p := &plan{
		evs: evs, ingestedAt: now, results: make([]protocol.Verdict, len(evs)),
		byID: map[string]*stored{}, versions: map[string][]*stored{},
		tombIDs: map[string]map[string]bool{}, tombAddr: map[string]int64{},
		oldWinner: map[string]string{}, touched: map[string]bool{}, topicSeen: map[eventTopic]bool{},
		rules: rules, refTopics: map[string][]string{}, members: map[string]bool{}, outcomes: map[string]Outcome{},
		tagCache: make(map[string][]string, len(evs)),
		locked:   map[string]bool{}, waiting: map[string]*waiting{}, waitKeys: map[string]map[string]bool{},
		limits: DefaultPendingLimits(),
	}
	p.parts = []part{newGroupPart(p), newMembershipPart(p)}
	return p
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
	reason       outbox.Reason // why it is deleted
	topics       []string      // its scope: community topics or NodeTopic, as in the outbox (schema.ScopeSQL)
	isNew        bool
	// topicsAreTags: topics are the event's own `t` tags (which #t REQs match)
	// rather than inherited ones or NodeTopic (which only consumers see); an
	// event has either kind, never both (see topicsOf). New events only.
	topicsAreTags bool
	hashtags      []string     // an identity event's own normalised t tags, for #t only (new events only)
	ev            *nostr.Event // new events only
}

// waiting is the newest pending version of one effective key of a non-member.
type waiting struct {
	ev    *nostr.Event
	idx   int    // its index in the batch; -1 when it was loaded
	rowID string // the id of the cn_relay.pending_events row of the key, "" if none
}

// decide walks the batch in order and settles each event against the stored state
// and the events before it.
func (p *plan) decide() {
	for _, pt := range p.parts {
		pt.begin()
	}
	for _, pk := range p.admitting {
		p.admit(pk, "")
	}
	for i, ev := range p.evs {
		p.results[i] = p.decideEvent(i, ev)
	}
}

// decideEvent settles one event (the i-th of the batch, or -1 for a pending
// event being published) and returns its verdict.
func (p *plan) decideEvent(i int, ev *nostr.Event) protocol.Verdict {
	if prev := p.byID[ev.ID]; prev != nil {
		if prev.deleted {
			return protocol.Verdict{OK: false, Message: msgDeleted}
		}
		for _, pt := range p.parts {
			if v, ok := pt.duplicate(ev); ok {
				return v
			}
		}
		return protocol.Verdict{OK: true, Message: msgDuplicate}
	}
	if p.tombIDs[ev.ID][ev.PubKey] {
		return protocol.Verdict{OK: false, Message: msgDeletedByAuth}
	}
	key := protocol.EffectiveKey(ev)
	if key != "" {
		if at, ok := p.tombAddr[eventAddress(ev)]; ok && int64(ev.CreatedAt) <= at {
			return protocol.Verdict{OK: false, Message: msgDeletedByAuth}
		}
	}
	for _, pt := range p.parts {
		if v, refused := pt.refuse(ev); refused {
			return v
		}
	}
	verdict := protocol.Verdict{OK: true, Message: ""}
	var applies []func()
	for _, pt := range p.parts {
		v, apply, decided, stop := pt.decide(ev)
		if stop {
			return v
		}
		if decided {
			verdict = v
		}
		if apply != nil {
			applies = append(applies, apply)
		}
	}
	identity := protocol.IsIdentityKind(ev.Kind)
	if identity && !p.made(ev) && !p.isMember(ev.PubKey, ev.ID) { // (the node's 13534 never waits)
		return p.keep(i, ev, key)
	}
	topics, reason := p.topicsOf(ev)
	if reason != "" {
		return protocol.Verdict{OK: false, Message: reason}
	}
	if verdict.OK { // (not for a join request kept pending)
		p.join(ev, topics)
	}
	// An identity event's and a group event's t tags are content (#t), not topics.
	content := identity || p.scope(ev) != ""
	st := &stored{id: ev.ID, pubkey: ev.PubKey, kind: ev.Kind, createdAt: int64(ev.CreatedAt),
		effectiveKey: key, effective: key == "", topics: topics, isNew: true, ev: ev,
		topicsAreTags: !content && len(p.tagTopics(ev)) > 0}
	if content {
		st.hashtags = p.tagTopics(ev)
	}
	p.byID[ev.ID] = st
	if key != "" {
		p.versions[key] = append(p.versions[key], st)
		p.touched[key] = true
	} else {
		p.upserts(st)
	}
	if ev.Kind == nostr.KindDeletion {
		p.applyDeletion(ev)
	}
	for _, apply := range applies {
		apply()
	}
	return verdict
}

// finish settles what the events decided: moderation, then the effective
// version of every touched key.
// It returns what failed in a part (the batch fails).
func (p *plan) finish() error {
	var err error
	for _, pt := range p.parts {
		err = errors.Join(err, pt.finish())
	}
	p.applyModeration()
	p.settleKeys()
	return err
}

// isMember reports whether pubkey's identity events are published now: the
// node's own (trusted), any author's under IdentityWritersAny, a member's, or
// one the member gate admits (who then becomes a member with event id).
func (p *plan) isMember(pubkey, id string) bool {
	switch {
	case !p.keepsPending() || p.members[pubkey]:
		return true
	case p.gate != nil && p.gate(pubkey):
		p.admit(pubkey, id)
		return true
	}
	return false
}

// keepsPending reports whether identity events of non-members wait for
// membership (IdentityWritersMembers) rather than being published at once.
func (p *plan) keepsPending() bool {
	return !p.trusted && p.rules.IdentityWriters != protocol.IdentityWritersAny
}

// keep records ev (the i-th of the batch), an identity event of a non-member, as
// the pending version of its key when it is newer than the one waiting, within
// the limits. A duplicate or older version is answered the same and dropped.
func (p *plan) keep(i int, ev *nostr.Event, key string) protocol.Verdict {
	cur := p.waiting[key]
	if cur != nil && cur.ev.ID == ev.ID {
		if cur.idx < 0 {
			cur.idx = i // answered as published should this batch publish it
		}
		return protocol.Verdict{OK: true, Message: MsgPending}
	}
	if cur != nil && !newer(ev, cur.ev) {
		return protocol.Verdict{OK: true, Message: MsgPending}
	}
	if cur == nil {
		switch {
		case len(p.waitKeys[ev.PubKey]) >= p.limits.PerKey:
			return protocol.Verdict{OK: false, Message: protocol.ReasonPendingKeyFull}
		case p.pendingN+p.kept >= p.limits.Max:
			return protocol.Verdict{OK: false, Message: protocol.ReasonPendingFull}
		}
		p.kept++
		cur = &waiting{}
		p.waiting[key] = cur
		p.waitFor(ev.PubKey)[key] = true
	}
	cur.ev, cur.idx = ev, i
	return protocol.Verdict{OK: true, Message: MsgPending}
}

func (p *plan) waitFor(pubkey string) map[string]bool {
	m := p.waitKeys[pubkey]
	if m == nil {
		m = map[string]bool{}
		p.waitKeys[pubkey] = m
	}
	return m
}

// newer reports whether a is a newer version than b (NIP-01: later created_at,
// ties to the lowest id).
func newer(a, b *nostr.Event) bool {
	return a.CreatedAt > b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID < b.ID)
}

// admit makes pubkey a member (first is the event that did it, "" for an
// operator's decision).
func (p *plan) admit(pubkey, first string) {
	if p.members[pubkey] {
		return
	}
	p.members[pubkey] = true
	p.newMembers = append(p.newMembers, newMember{pubkey: pubkey, firstID: first})
}

// due returns, after decide, the pending versions of the keys whose authors
// are members now, in key order: loaded ones and ones kept earlier in this batch.
func (p *plan) due() []*waiting {
	var due []*waiting
	for _, key := range slices.Sorted(maps.Keys(p.waiting)) {
		if w := p.waiting[key]; p.members[w.ev.PubKey] {
			due = append(due, w)
		}
	}
	return due
}

// promote publishes the due pending versions (once the state their keys need
// is loaded: loadPromoted) as if each had just arrived. A batch event
// published this way is answered as stored.
func (p *plan) promote(due []*waiting) {
	for _, w := range due {
		delete(p.waiting, protocol.EffectiveKey(w.ev))
		if w.rowID != "" {
			p.unpend = append(p.unpend, w.rowID)
		}
		if w.idx >= 0 && w.rowID == "" {
			p.kept--
		}
		v := p.decideEvent(-1, w.ev)
		if w.idx >= 0 {
			p.results[w.idx] = v
		}
		p.promoted = append(p.promoted, w.ev)
		p.promotedVerdicts = append(p.promotedVerdicts, v)
	}
}

// topicsOf returns the topics a non-identity event (or a member's identity
// event) is stored under, or the reason it is refused (see Ingest).
func (p *plan) topicsOf(ev *nostr.Event) ([]string, string) {
	if protocol.IsIdentityKind(ev.Kind) || p.made(ev) {
		return []string{protocol.NodeTopic}, ""
	}
	if g := p.scope(ev); g != "" {
		return []string{g}, ""
	}
	if own := p.tagTopics(ev); len(own) > 0 {
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
	if m := p.rules.MaxTopics; m > 0 && len(enabled) > m {
		enabled = enabled[:m] // the first MaxTopics in sort order: one event, a bounded fan-out
	}
	person := protocol.IsPersonKind(ev.Kind)
	switch {
	case len(enabled) > 0:
		return enabled, ""
	case person && slices.ContainsFunc(protocol.PersonRefs(ev), func(pk string) bool { return p.members[pk] }):
		return []string{protocol.NodeTopic}, ""
	case p.rules.TopicExemptKinds[ev.Kind]:
		// The person scope, as events for the whole node: the event then has
		// outbox rows like every other, so live subscribers, consumers and
		// the relay's event cache see it arrive and change.
		return []string{protocol.NodeTopic}, ""
	case len(inherited) > 0:
		return nil, protocol.ReasonTopicNotEnabled
	case p.rules.DefaultTopic != "" && !protocol.IsPrivateKind(ev.Kind):
		return []string{p.rules.DefaultTopic}, ""
	case !p.rules.RequireTopic:
		return nil, ""
	case person:
		return nil, protocol.ReasonPersonNotMember
	}
	return nil, protocol.ReasonMissingTopic
}

// inherits reports whether ev takes its topics from the events it references:
// it is no identity event and has no topic of its own.
func (p *plan) inherits(ev *nostr.Event) bool {
	return !protocol.IsIdentityKind(ev.Kind) && !protocol.IsGroupEvent(ev) && len(p.tagTopics(ev)) == 0
}

// tagTopics returns ev's own normalised t tags (protocol.Topics), normalising
// them once per batch.
func (p *plan) tagTopics(ev *nostr.Event) []string {
	t, ok := p.tagCache[ev.ID]
	if !ok {
		t = protocol.Topics(ev)
		p.tagCache[ev.ID] = t
	}
	return t
}

// inherit returns the sorted union of the topics of the events ev references:
// stored ones, and ones accepted earlier in this batch.
func (p *plan) inherit(ev *nostr.Event) []string {
	set := map[string]bool{}
	add := func(topics []string) {
		for _, t := range topics {
			if p.passesOn(t) {
				set[t] = true
			}
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
	if slices.ContainsFunc(topics, func(t string) bool { return t != protocol.NodeTopic }) {
		p.admit(ev.PubKey, ev.ID)
	}
}

// applyDeletion soft-deletes the author's targets and remembers them.
func (p *plan) applyDeletion(ev *nostr.Event) {
	ids, addrs := deletionTargets(ev)
	at := int64(ev.CreatedAt)
	for _, id := range ids {
		p.newTombs = append(p.newTombs, tombstone{target: id, pubkey: ev.PubKey, deletionID: ev.ID, createdAt: at})
		p.addTombID(id, ev.PubKey)
		if t := p.byID[id]; t != nil && t.pubkey == ev.PubKey && t.kind != nostr.KindDeletion {
			p.delete(t)
		}
	}
	for _, a := range addrs {
		p.newTombs = append(p.newTombs, tombstone{target: a, pubkey: ev.PubKey, deletionID: ev.ID, createdAt: at})
		p.tombAddr[a] = max(p.tombAddr[a], at)
		key, _, _, _ := keyOfAddress(a)
		for _, v := range p.versions[key] {
			if v.createdAt <= at {
				p.delete(v)
			}
		}
	}
}

func (p *plan) addTombID(id, pubkey string) {
	if p.tombIDs[id] == nil {
		p.tombIDs[id] = map[string]bool{}
	}
	p.tombIDs[id][pubkey] = true
}

// delete marks st deleted (reason nip09 unless set); a visible regular event
// gets its delete rows now, effective-keyed events are settled in settleKeys.
func (p *plan) delete(st *stored) {
	if st.deleted {
		return
	}
	st.deleted = true
	if st.reason == "" {
		st.reason = outbox.ReasonNIP09
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

func (p *plan) deletes(st *stored, reason outbox.Reason) {
	for _, t := range st.topics {
		p.records = append(p.records, outbox.Record{Op: outbox.OpDelete, EventID: st.id, TopicID: t, Kind: st.kind,
			CreatedAt: st.createdAt, IngestedAt: p.ingestedAt, EffectiveKey: st.effectiveKey, Reason: reason})
	}
}

// Outcome is what hiding or unhiding did to one event.
type Outcome string

const (
	// Hidden: the event was visible (or a replaced version) and is now hidden.
	Hidden Outcome = "hidden"
	// Unhidden: the event was hidden by moderation and is visible again (if it
	// is its key's effective version and not expired).
	Unhidden Outcome = "unhidden"
	// Unchanged: already hidden, or not hidden by moderation (deleted by its
	// author, expired, or never hidden): nothing to do.
	Unchanged Outcome = "unchanged"
	// NotFound: no such event is stored.
	NotFound Outcome = "not found"
)

// applyModeration settles hideIDs and unhideIDs against the loaded state.
func (p *plan) applyModeration() {
	hiding := map[string]bool{}
	for _, id := range p.hideIDs {
		hiding[id] = true
		st := p.byID[id]
		switch {
		case st == nil:
			p.outcomes[id] = NotFound
		case st.deleted:
			p.outcomes[id] = Unchanged
		default:
			st.reason = outbox.ReasonModeration
			p.delete(st)
			p.outcomes[id] = Hidden
		}
	}
	for _, id := range p.unhideIDs {
		if hiding[id] {
			continue
		}
		st := p.byID[id]
		switch {
		case st == nil:
			p.outcomes[id] = NotFound
		case !st.deleted || st.reason != outbox.ReasonModeration || p.tombIDs[id][st.pubkey] || p.addressDeleted(st):
			p.outcomes[id] = Unchanged
		default:
			st.deleted, st.reason = false, ""
			p.unhidden = append(p.unhidden, id)
			p.outcomes[id] = Unhidden
			if st.effectiveKey == "" {
				p.upserts(st)
			} else {
				p.touched[st.effectiveKey] = true
			}
		}
	}
}

// addressDeleted reports whether a NIP-09 'a' deletion by the author covers st.
func (p *plan) addressDeleted(st *stored) bool {
	if st.effectiveKey == "" {
		return false
	}
	at, ok := p.tombAddr[addressOfKey(st.effectiveKey)]
	return ok && st.createdAt <= at
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

func setSlice(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
