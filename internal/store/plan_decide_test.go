package store

import (
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// These tests drive the decisions (plan_decide.go) from a loaded state written
// out by hand: no database. The Postgres tests (store_test.go, pending_test.go)
// check the same rules end to end, through the loads and the writes.

// TestDecideIsPure: the decisions import no database package.
func TestDecideIsPure(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "plan_decide.go", nil, parser.ImportsOnly)
	require.NoError(t, err)
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		require.NotContains(t, path, "pgx", "plan_decide.go must not import %s", path)
		require.NotContains(t, path, "database", "plan_decide.go must not import %s", path)
	}
}

var (
	alice = strings.Repeat("a", 64) // a member
	bob   = strings.Repeat("b", 64) // not a member
	carol = strings.Repeat("c", 64) // not a member
)

// hexID makes a well-formed event id that sorts by n.
func hexID(n int) string { return fmt.Sprintf("%064x", n) }

// ev is an unsigned event (the decisions never check signatures).
func ev(id int, pubkey string, kind int, at int64, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{ID: hexID(id), PubKey: pubkey, Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags}
}

func tTag(topic string) nostr.Tag { return nostr.Tag{"t", topic} }
func eTag(id int) nostr.Tag       { return nostr.Tag{"e", hexID(id)} }
func pTag(pk string) nostr.Tag    { return nostr.Tag{"p", pk} }

// world is the loaded state a plan decides against.
type world struct {
	rules     protocol.TopicRules
	trusted   bool
	members   []string
	gate      func(string) bool
	limits    *PendingLimits
	pendingN  int64
	rows      []stored            // stored events (by id, and by key when effective-keyed)
	refTopics map[string][]string // referenced id or key -> its topics, besides the rows'

	tombIDs  map[string][]string // deleted id -> authors who asked
	tombAddr map[string]int64    // address -> newest deletion's created_at
	waiting  []*nostr.Event      // loaded pending versions (rows of cn_relay.pending_events)
	hide     []string
	unhide   []string
	admit    []string
}

var decideNow = time.Unix(1_700_000_000, 0)

// decide runs the decisions of a batch against w, as prepare does after load.
func (w world) decide(evs ...*nostr.Event) *plan {
	rules := w.rules
	if rules.IdentityWriters == "" {
		rules = protocol.DefaultTopicRules()
	}
	p := newPlan(evs, decideNow, rules)
	p.trusted, p.gate, p.pendingN = w.trusted, w.gate, w.pendingN
	p.hideIDs, p.unhideIDs, p.admitting = w.hide, w.unhide, w.admit
	if w.limits != nil {
		p.limits = *w.limits
	}
	for _, m := range w.members {
		p.members[m] = true
	}
	for i := range w.rows {
		st := w.rows[i]
		st.deleted = st.reason != ""
		row := &st
		p.byID[row.id] = row
		if row.effectiveKey != "" {
			p.versions[row.effectiveKey] = append(p.versions[row.effectiveKey], row)
		}
	}
	// What load reads for the references of events that inherit: the scope
	// of every stored event by id, and of every version by key.
	for _, st := range w.rows {
		p.refTopics[st.id] = append(p.refTopics[st.id], st.topics...)
		if k := st.effectiveKey; k != "" {
			for _, t := range st.topics {
				if !slices.Contains(p.refTopics[k], t) {
					p.refTopics[k] = append(p.refTopics[k], t)
				}
			}
		}
	}
	for ref, topics := range w.refTopics {
		p.refTopics[ref] = topics
	}
	for id, authors := range w.tombIDs {
		for _, a := range authors {
			p.addTombID(id, a)
		}
	}
	for a, at := range w.tombAddr {
		p.tombAddr[a] = at
	}
	for _, e := range w.waiting {
		key := protocol.EffectiveKey(e)
		p.waiting[key] = &waiting{ev: e, idx: -1, rowID: e.ID}
		p.waitFor(e.PubKey)[key] = true
	}
	p.noteWinners()
	p.decide()
	if due := p.due(); len(due) > 0 {
		p.promote(due)
	}
	if err := p.finish(); err != nil {
		panic(err) // the generic cases make no node events
	}
	return p
}

// row is a stored event as the load reads it.
func row(e *nostr.Event, effective bool, reason outbox.Reason, topics ...string) stored {
	return stored{id: e.ID, pubkey: e.PubKey, kind: e.Kind, createdAt: int64(e.CreatedAt),
		effectiveKey: protocol.EffectiveKey(e), effective: effective, reason: reason, topics: topics}
}

// outboxRows renders p's records as "op id topic [key] [reason]", ids as their
// number.
func outboxRows(p *plan) []string {
	var out []string
	for _, r := range p.records {
		n, _ := strconv.ParseInt(r.EventID, 16, 64)
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %d %s %s %s", r.Op, n, r.TopicID, shortKey(r.EffectiveKey), r.Reason)))
	}
	return out
}

// shortKey shows an effective key with its pubkey cut to one letter.
func shortKey(k string) string {
	parts := strings.SplitN(k, ":", 3)
	if len(parts) < 2 {
		return k
	}
	parts[1] = parts[1][:1]
	return strings.Join(parts, ":")
}

func messages(p *plan) []string {
	out := make([]string, len(p.results))
	for i, v := range p.results {
		out[i] = strconv.FormatBool(v.OK) + " " + v.Message
	}
	return out
}

const stored_ = "true " // OK true, no message: stored

func TestDecideTopics(t *testing.T) {
	allowed := protocol.DefaultTopicRules()
	allowed.AllowedTopics = map[string]bool{"go": true}
	single := protocol.DefaultTopicRules()
	single.DefaultTopic = "town"
	loose := protocol.DefaultTopicRules()
	loose.RequireTopic = false
	capped := protocol.DefaultTopicRules()
	capped.MaxTopics = 1

	parent := ev(1, alice, 1, 100, tTag("go"), tTag("rust"))
	cases := []struct {
		name    string
		w       world
		evs     []*nostr.Event
		results []string
		rows    []string
	}{
		{name: "own t tags, one row per topic",
			w:   world{members: []string{alice}},
			evs: []*nostr.Event{ev(2, alice, 1, 100, tTag("go"), tTag("rust"))}, results: []string{stored_},
			rows: []string{"upsert 2 go", "upsert 2 rust"}},
		{name: "a reply inherits the stored parent's topics",
			w:   world{refTopics: map[string][]string{parent.ID: {"go", "rust"}}},
			evs: []*nostr.Event{ev(3, bob, 1, 101, eTag(1))}, results: []string{stored_},
			rows: []string{"upsert 3 go", "upsert 3 rust"}},
		{name: "inheritance keeps the enabled topics only",
			w:   world{rules: allowed, refTopics: map[string][]string{parent.ID: {"go", "rust"}}},
			evs: []*nostr.Event{ev(3, bob, 1, 101, eTag(1))}, results: []string{stored_},
			rows: []string{"upsert 3 go"}},
		{name: "everything inherited is disabled",
			w:   world{rules: allowed, refTopics: map[string][]string{parent.ID: {"rust"}}},
			evs: []*nostr.Event{ev(3, bob, 1, 101, eTag(1))}, results: []string{"false " + protocol.ReasonTopicNotEnabled}},
		{name: "an inherited fan-out is cut to MaxTopics in sort order",
			w:   world{rules: capped, refTopics: map[string][]string{parent.ID: {"go", "rust"}}},
			evs: []*nostr.Event{ev(3, bob, 1, 101, eTag(1))}, results: []string{stored_},
			rows: []string{"upsert 3 go"}},
		{name: "a parent earlier in the batch is inherited from; a later one is not",
			evs:     []*nostr.Event{ev(4, alice, 1, 100, tTag("go")), ev(5, bob, 1, 101, eTag(4)), ev(6, bob, 1, 101, eTag(7)), ev(7, alice, 1, 99, tTag("go"))},
			results: []string{stored_, stored_, "false " + protocol.ReasonMissingTopic, stored_},
			rows:    []string{"upsert 4 go", "upsert 5 go", "upsert 7 go"}},
		{name: "nothing to inherit",
			evs: []*nostr.Event{ev(8, bob, 1, 100)}, results: []string{"false " + protocol.ReasonMissingTopic}},
		{name: "nothing to inherit, single-community mode",
			w:   world{rules: single},
			evs: []*nostr.Event{ev(8, bob, 1, 100)}, results: []string{stored_}, rows: []string{"upsert 8 town"}},
		{name: "nothing to inherit, topics not required: stored without outbox rows",
			w:   world{rules: loose},
			evs: []*nostr.Event{ev(8, bob, 1, 100)}, results: []string{stored_}},
		{name: "the default topic never takes a private kind",
			w:   world{rules: single},
			evs: []*nostr.Event{ev(8, bob, protocol.KindEncryptedDM, 100, pTag(carol))}, results: []string{"false " + protocol.ReasonPersonNotMember}},
		{name: "a deletion of nothing stored is exempt: the person scope, with outbox rows",
			evs: []*nostr.Event{ev(9, bob, nostr.KindDeletion, 100, eTag(42))}, results: []string{stored_},
			rows: []string{"upsert 9 " + protocol.NodeTopic}},
		{name: "person scope: a report about a member",
			w:   world{members: []string{alice}},
			evs: []*nostr.Event{ev(10, bob, protocol.KindReport, 100, pTag(alice))}, results: []string{stored_},
			rows: []string{"upsert 10 " + protocol.NodeTopic}},
		{name: "person scope: a report about a stranger",
			w:   world{members: []string{alice}},
			evs: []*nostr.Event{ev(10, bob, protocol.KindReport, 100, pTag(carol))}, results: []string{"false " + protocol.ReasonPersonNotMember}},
		{name: "person scope: inherited topics come first",
			w:   world{members: []string{alice}, refTopics: map[string][]string{parent.ID: {"go"}}},
			evs: []*nostr.Event{ev(10, bob, protocol.KindReport, 100, eTag(1), pTag(alice))}, results: []string{stored_},
			rows: []string{"upsert 10 go"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.w.decide(c.evs...)
			require.Equal(t, c.results, messages(p))
			require.Equal(t, c.rows, outboxRows(p))
		})
	}
}

func TestDecideMembership(t *testing.T) {
	profile := func(id int, pk string, at int64) *nostr.Event { return ev(id, pk, 0, at) }
	cases := []struct {
		name    string
		w       world
		evs     []*nostr.Event
		results []string
		rows    []string
		members []string // new members, in order
		kept    int64
	}{
		{name: "a first post in a community topic makes a member",
			evs:     []*nostr.Event{ev(1, bob, 1, 100, tTag("go"))},
			results: []string{stored_}, rows: []string{"upsert 1 go"}, members: []string{bob}},
		{name: "a post in the person scope makes no member",
			w:       world{members: []string{alice}},
			evs:     []*nostr.Event{ev(1, bob, protocol.KindReport, 100, pTag(alice))},
			results: []string{stored_}, rows: []string{"upsert 1 " + protocol.NodeTopic}},
		{name: "a member's profile is published in the person scope",
			w:       world{members: []string{alice}},
			evs:     []*nostr.Event{profile(2, alice, 100)},
			results: []string{stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:a"}},
		{name: "a stranger's profile waits",
			evs:     []*nostr.Event{profile(2, bob, 100)},
			results: []string{"true " + MsgPending}, kept: 1},
		{name: "under IdentityWritersAny it does not",
			w:       world{rules: protocol.TopicRules{RequireTopic: true, IdentityWriters: protocol.IdentityWritersAny}},
			evs:     []*nostr.Event{profile(2, bob, 100)},
			results: []string{stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:b"}},
		{name: "the node's own events need no membership",
			w:       world{trusted: true},
			evs:     []*nostr.Event{profile(2, bob, 100)},
			results: []string{stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:b"}},
		{name: "the member gate admits",
			w:       world{gate: func(pk string) bool { return pk == bob }},
			evs:     []*nostr.Event{profile(2, bob, 100)},
			results: []string{stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:b"}, members: []string{bob}},
		{name: "the post that makes a member publishes the profile kept earlier in the batch",
			evs:     []*nostr.Event{profile(2, bob, 100), ev(3, bob, 1, 101, tTag("go"))},
			results: []string{stored_, stored_}, rows: []string{"upsert 3 go", "upsert 2 " + protocol.NodeTopic + " 0:b"},
			members: []string{bob}},
		{name: "and the newest loaded pending version of each key",
			w:       world{waiting: []*nostr.Event{profile(4, bob, 90), ev(5, bob, 3, 90)}},
			evs:     []*nostr.Event{ev(3, bob, 1, 101, tTag("go"))},
			results: []string{stored_}, rows: []string{"upsert 3 go", "upsert 4 " + protocol.NodeTopic + " 0:b", "upsert 5 " + protocol.NodeTopic + " 3:b"},
			members: []string{bob}},
		{name: "a newer pending version replaces the waiting one; an older one is dropped",
			w:       world{waiting: []*nostr.Event{profile(4, bob, 90)}},
			evs:     []*nostr.Event{profile(6, bob, 95), profile(7, bob, 80)},
			results: []string{"true " + MsgPending, "true " + MsgPending}},
		{name: "an operator admits",
			w:       world{admit: []string{bob}, waiting: []*nostr.Event{profile(4, bob, 90)}},
			rows:    []string{"upsert 4 " + protocol.NodeTopic + " 0:b"},
			members: []string{bob}},
		{name: "too many keys waiting for one pubkey",
			w:       world{limits: &PendingLimits{PerKey: 1, Max: 10, MaxAge: time.Hour}, waiting: []*nostr.Event{profile(4, bob, 90)}},
			evs:     []*nostr.Event{ev(8, bob, 3, 95)},
			results: []string{"false " + protocol.ReasonPendingKeyFull}},
		{name: "too many waiting in all",
			w:       world{limits: &PendingLimits{PerKey: 4, Max: 10, MaxAge: time.Hour}, pendingN: 10},
			evs:     []*nostr.Event{profile(2, carol, 100)},
			results: []string{"false " + protocol.ReasonPendingFull}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.w.decide(c.evs...)
			if c.results == nil {
				c.results = []string{}
			}
			require.Equal(t, c.results, messages(p))
			require.Equal(t, c.rows, outboxRows(p))
			var members []string
			for _, m := range p.newMembers {
				members = append(members, m.pubkey)
			}
			require.Equal(t, c.members, members)
			require.Equal(t, c.kept, p.kept)
		})
	}
}

func TestDecideEffectiveVersions(t *testing.T) {
	member := world{members: []string{alice}}
	old := ev(1, alice, 0, 100)
	tie := ev(0, alice, 0, 100) // same created_at, lower id
	newer := ev(2, alice, 0, 200)
	cases := []struct {
		name      string
		w         world
		evs       []*nostr.Event
		results   []string
		rows      []string
		effective []int // ids effective after the batch
	}{
		{name: "a newer version takes over",
			w: world{members: member.members, rows: []stored{row(old, true, "", protocol.NodeTopic)}}, evs: []*nostr.Event{newer},
			results: []string{stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:a"}, effective: []int{2}},
		{name: "an older version is stored, not effective",
			w: world{members: member.members, rows: []stored{row(newer, true, "", protocol.NodeTopic)}}, evs: []*nostr.Event{old},
			results: []string{stored_}, effective: []int{2}},
		{name: "a tie goes to the lowest id",
			w: world{members: member.members, rows: []stored{row(old, true, "", protocol.NodeTopic)}}, evs: []*nostr.Event{tie},
			results: []string{stored_}, rows: []string{"upsert 0 " + protocol.NodeTopic + " 0:a"}, effective: []int{0}},
		{name: "within a batch the newest wins and only it is announced",
			w: member, evs: []*nostr.Event{newer, old},
			results: []string{stored_, stored_}, rows: []string{"upsert 2 " + protocol.NodeTopic + " 0:a"}, effective: []int{2}},
		{name: "a duplicate",
			w: world{members: member.members, rows: []stored{row(old, true, "", protocol.NodeTopic)}}, evs: []*nostr.Event{old},
			results: []string{"true " + msgDuplicate}, effective: []int{1}},
		{name: "a deleted event never comes back",
			w: world{members: member.members, rows: []stored{row(old, false, outbox.ReasonNIP09, protocol.NodeTopic)}}, evs: []*nostr.Event{old},
			results: []string{"false " + msgDeleted}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.w.decide(c.evs...)
			require.Equal(t, c.results, messages(p))
			require.Equal(t, c.rows, outboxRows(p))
			var effective []int
			for _, vs := range p.versions {
				for _, v := range vs {
					if v.effective {
						n, _ := strconv.ParseInt(v.id, 16, 64)
						effective = append(effective, int(n))
					}
				}
			}
			slices.Sort(effective)
			require.Equal(t, c.effective, effective)
		})
	}
}

func TestDecideDeletions(t *testing.T) {
	note := ev(1, alice, 1, 100, tTag("go"))
	v1, v2 := ev(2, alice, 0, 100), ev(3, alice, 0, 200)
	members := []string{alice}
	addr := "0:" + alice + ":"
	cases := []struct {
		name    string
		w       world
		evs     []*nostr.Event
		results []string
		rows    []string
		tombs   []string // "target-prefix pubkey-letter created_at"
	}{
		{name: "an author deletes a stored note: one delete row per topic",
			w:   world{members: members, rows: []stored{row(note, true, "", "go")}},
			evs: []*nostr.Event{ev(9, alice, 5, 150, eTag(1))}, results: []string{stored_},
			rows: []string{"upsert 9 go", "delete 1 go  nip09"}, tombs: []string{hexID(1)[:8] + " a 150"}},
		{name: "someone else's deletion is remembered but deletes nothing",
			w:   world{members: members, rows: []stored{row(note, true, "", "go")}},
			evs: []*nostr.Event{ev(9, bob, 5, 150, eTag(1))}, results: []string{stored_},
			rows: []string{"upsert 9 go"}, tombs: []string{hexID(1)[:8] + " b 150"}},
		{name: "a deletion that came first wins when its target arrives",
			w:   world{members: members, tombIDs: map[string][]string{note.ID: {alice}}},
			evs: []*nostr.Event{note}, results: []string{"false " + msgDeletedByAuth}},
		{name: "a deletion in the same batch, before its target",
			w:   world{members: members},
			evs: []*nostr.Event{ev(9, alice, 5, 150, eTag(1)), note}, results: []string{stored_, "false " + msgDeletedByAuth},
			rows:  []string{"upsert 9 " + protocol.NodeTopic}, // (exempt, nothing to inherit: the person scope)
			tombs: []string{hexID(1)[:8] + " a 150"}},
		{name: "deleting the effective version promotes the newest remaining one",
			w:   world{members: members, rows: []stored{row(v1, false, "", protocol.NodeTopic), row(v2, true, "", protocol.NodeTopic)}},
			evs: []*nostr.Event{ev(9, alice, 5, 250, eTag(3))}, results: []string{stored_},
			rows: []string{"upsert 9 " + protocol.NodeTopic, "delete 3 " + protocol.NodeTopic + " 0:a nip09",
				"upsert 2 " + protocol.NodeTopic + " 0:a"},
			tombs: []string{hexID(3)[:8] + " a 250"}},
		{name: "an address deletion covers the versions up to its created_at",
			w:   world{members: members, rows: []stored{row(v1, false, "", protocol.NodeTopic), row(v2, true, "", protocol.NodeTopic)}},
			evs: []*nostr.Event{ev(9, alice, 5, 150, nostr.Tag{"a", addr})}, results: []string{stored_},
			rows: []string{"upsert 9 " + protocol.NodeTopic}, tombs: []string{"0:aaaaaa a 150"}},
		{name: "a version older than an address deletion is refused",
			w:   world{members: members, tombAddr: map[string]int64{addr: 150}},
			evs: []*nostr.Event{v1, v2}, results: []string{"false " + msgDeletedByAuth, stored_},
			rows: []string{"upsert 3 " + protocol.NodeTopic + " 0:a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.w.decide(c.evs...)
			require.Equal(t, c.results, messages(p))
			require.Equal(t, c.rows, outboxRows(p))
			var tombs []string
			for _, tb := range p.newTombs {
				tombs = append(tombs, fmt.Sprintf("%s %s %d", tb.target[:8], tb.pubkey[:1], tb.createdAt))
			}
			require.Equal(t, c.tombs, tombs)
		})
	}
}

func TestDecideModeration(t *testing.T) {
	note := ev(1, alice, 1, 100, tTag("go"), tTag("rust"))
	gone := ev(2, alice, 1, 100, tTag("go"))
	v1, v2 := ev(3, alice, 0, 100), ev(4, alice, 0, 200)
	cases := []struct {
		name     string
		w        world
		outcomes map[string]Outcome
		rows     []string
	}{
		{name: "hiding a visible event: delete rows with reason moderation",
			w:        world{rows: []stored{row(note, true, "", "go", "rust")}, hide: []string{note.ID}},
			outcomes: map[string]Outcome{note.ID: Hidden}, rows: []string{"delete 1 go  moderation", "delete 1 rust  moderation"}},
		{name: "hiding what is gone already, or not stored",
			w:        world{rows: []stored{row(gone, true, outbox.ReasonNIP09, "go")}, hide: []string{gone.ID, hexID(99)}},
			outcomes: map[string]Outcome{gone.ID: Unchanged, hexID(99): NotFound}},
		{name: "unhiding what moderation hid: upsert rows",
			w:        world{rows: []stored{row(note, true, outbox.ReasonModeration, "go", "rust")}, unhide: []string{note.ID}},
			outcomes: map[string]Outcome{note.ID: Unhidden}, rows: []string{"upsert 1 go", "upsert 1 rust"}},
		{name: "unhiding undoes moderation only",
			w:        world{rows: []stored{row(gone, true, outbox.ReasonNIP09, "go")}, unhide: []string{gone.ID}},
			outcomes: map[string]Outcome{gone.ID: Unchanged}},
		{name: "unhiding what its author deleted as well",
			w: world{rows: []stored{row(gone, true, outbox.ReasonModeration, "go")}, unhide: []string{gone.ID},
				tombIDs: map[string][]string{gone.ID: {alice}}},
			outcomes: map[string]Outcome{gone.ID: Unchanged}},
		{name: "an id in both lists is hidden",
			w:        world{rows: []stored{row(note, true, "", "go")}, hide: []string{note.ID}, unhide: []string{note.ID}},
			outcomes: map[string]Outcome{note.ID: Hidden}, rows: []string{"delete 1 go  moderation"}},
		{name: "hiding the effective version promotes the newest remaining one",
			w: world{rows: []stored{row(v1, false, "", protocol.NodeTopic), row(v2, true, "", protocol.NodeTopic)},
				hide: []string{v2.ID}},
			outcomes: map[string]Outcome{v2.ID: Hidden},
			rows:     []string{"delete 4 " + protocol.NodeTopic + " 0:a moderation", "upsert 3 " + protocol.NodeTopic + " 0:a"}},
		{name: "unhiding a replaced version that is newest again makes it effective",
			w: world{rows: []stored{row(v1, true, "", protocol.NodeTopic), row(v2, false, outbox.ReasonModeration, protocol.NodeTopic)},
				unhide: []string{v2.ID}},
			outcomes: map[string]Outcome{v2.ID: Unhidden},
			rows:     []string{"upsert 4 " + protocol.NodeTopic + " 0:a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.w.decide()
			require.Equal(t, c.outcomes, p.outcomes)
			require.Equal(t, c.rows, outboxRows(p))
		})
	}
}
