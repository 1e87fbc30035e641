package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Groups is how the store hosts NIP-29 groups (package groups). Without it
// (the zero Groups, or a store that was never given one: cnctl import and
// sync, the consumers' publishers) every group event is refused with
// groups.ReasonNoGroups.
type Groups struct {
	// Policy decides; Policy.Node is the node's pubkey.
	Policy groups.Policy
	// Sign signs an event with the node key (whose pubkey is Policy.Node):
	// the state events and the node's own moderation events.
	Sign func(*nostr.Event) error
	// Admission says what the web of trust says of a join request's author
	// when Policy.AdmitMinRank > 0 (the relay's second rank gate, gate.Gate
	// at --group-admit-min-rank, read in memory); nil: groups.AdmitOpen.
	Admission func(pubkey string) groups.Admission
}

// Validate reports a configuration that cannot work.
func (g Groups) Validate() error {
	switch {
	case !protocol.IsHex64(g.Policy.Node):
		return errors.New("groups: the node's pubkey is missing")
	case g.Sign == nil:
		return errors.New("groups: no signer")
	case g.Policy.AdmitMinRank < 0 || g.Policy.AdmitMinRank > 100:
		return fmt.Errorf("groups: admission rank must be 0-100, got %d", g.Policy.AdmitMinRank)
	}
	_, err := groups.ParseCreators(string(g.Policy.Creators))
	return err
}

// RenderDueLists signs, in one transaction, the member lists (39002) that
// groups.MemberLists deferred and that are due at at, for up to limit groups,
// the longest waiting first; it returns how many groups it looked at. A
// store without groups does nothing. Run it every so often (the relay does,
// at --group-member-list-every / 2): a list is late by at most that much
// more, and one deferred before a restart is signed after it.
func (s *Store) RenderDueLists(ctx context.Context, at time.Time, limit int) (int, error) {
	if s.pub.groups.Load() == nil {
		return 0, nil
	}
	ids, err := groups.ListsDue(ctx, s.pool, at, limit)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	p := s.pub.newPlan(nil, s.Rules())
	partOf[*groupPart](p).gx.renderLists = ids
	if err := s.write(ctx, p, false); err != nil {
		return 0, fmt.Errorf("sign the member lists due: %w", err)
	}
	return len(ids), nil
}

// SetGroups makes the store host NIP-29 groups; call it before the store is
// used. Called again (a relay configuration reload), it replaces the policy
// for the batches that start from then on.
func (s *Store) SetGroups(g Groups) error {
	if err := g.Validate(); err != nil {
		return err
	}
	s.pub.groups.Store(&g)
	return nil
}

// The plan's group part. How a batch treats group events
// (protocol.IsGroupEvent), in the order of the batch:
//
//   - load takes the lock of every group the batch names (schema.GroupLockSQL,
//     sorted) and the effective-key locks of its four state events, and reads
//     the groups' states, the stored versions of their state events, the
//     targets of 9005s and which withheld events are here already;
//   - decideEvent asks groups.Policy.Decide; a refused event is answered and
//     goes no further; a kept one is stored in its group's scope (or withheld),
//     then applied to the state (State.Apply), then the node's moderation
//     events it causes are signed, stored and applied the same way, then the
//     events a 9005 names are queued for hiding;
//   - finishGroups, before moderation and the effective versions are
//     settled, signs and stores the state events (39000-39003) of every group
//     the batch changed, those whose content changed, or a kind 5 that deletes
//     them when the batch deleted the group;
//   - queueWrites saves the changed states and the withheld events.
//
// So the event, the state, the node's events and the outbox rows of all of
// them commit together, or not at all.

// groupPart is the plan's NIP-29 room (see part): the groups the batch
// names, their states as loaded and as changed, the tree and timeline
// references, the node events it makes and the withheld events.
type groupPart struct {
	p      *plan
	groups *Groups // nil: group events are refused

	groupIDs       map[string]bool          // groups the batch names (locked and loaded)
	gstate         map[string]*groups.State // group id -> its state, as loaded and then changed
	gbefore        map[string]*groups.State // group id -> its state as loaded
	withheldLookup []string                 // ids to look up among the withheld
	withheldSeen   map[string]bool          // ids withheld already, or by this batch
	gx             groupExtra               // the tree, timeline references, limits, member lists
	groupsTouched  map[string]bool          // groups whose state this batch changed
	generated      map[string]string        // id of a state event or its deletion made by this plan -> its group
	withheld       []*nostr.Event           // group events this batch withholds
	groupErr       error                    // the group path failed (the batch fails)
}

func newGroupPart(p *plan) *groupPart {
	return &groupPart{p: p, groupIDs: map[string]bool{}, gstate: map[string]*groups.State{}, gbefore: map[string]*groups.State{},
		withheldSeen: map[string]bool{}, groupsTouched: map[string]bool{}, generated: map[string]string{}}
}

func (g *groupPart) need(ev *nostr.Event, n *needs) { g.groupsLoad(ev, n.ids, n.targetIDs, n.keys) }
func (g *groupPart) needBatch(n *needs)             { g.listsLoad(n.keys) }
func (g *groupPart) queueLocks(b *pgx.Batch)        { g.queueGroupLocks(b) }
func (g *groupPart) queueLoad(b *pgx.Batch, _ *needs) {
	g.queueGroupsLoad(b)
}
func (g *groupPart) loadMore(ctx context.Context, tx outbox.Batcher) error {
	return g.loadTree(ctx, tx)
}
func (g *groupPart) loaded()                                            { g.noteGroups() }
func (g *groupPart) begin()                                             {}
func (g *groupPart) duplicate(ev *nostr.Event) (protocol.Verdict, bool) { return g.groupDuplicate(ev) }
func (g *groupPart) refuse(*nostr.Event) (protocol.Verdict, bool)       { return protocol.Verdict{}, false }
func (g *groupPart) scope(ev *nostr.Event) string                       { return g.groupScope(ev) }
func (g *groupPart) made(*nostr.Event) bool                             { return false }
func (g *groupPart) queueWrites(b *pgx.Batch)                           { g.queueGroupWrites(b) }

func (g *groupPart) decide(ev *nostr.Event) (protocol.Verdict, func(), bool, bool) {
	if !protocol.IsGroupEvent(ev) {
		return protocol.Verdict{}, nil, false, false
	}
	d, v, stop := g.decideGroup(ev)
	if stop || d == nil {
		return v, nil, true, stop
	}
	return v, func() { g.applyGroup(ev, d) }, true, false
}

func (g *groupPart) signer() string {
	if g.groups == nil {
		return ""
	}
	return g.groups.Policy.Node
}

func (g *groupPart) finish() error {
	if g.groups != nil {
		g.finishGroups()
	}
	return g.groupErr
}

// groupsLoad adds to a load what the batch's group events need: the group
// ids to lock and read, the state-event keys to lock and read, the 9005
// targets to read (with their topics), the ids to look up among the withheld.
func (g *groupPart) groupsLoad(ev *nostr.Event, ids, targetIDs, keys map[string]bool) {
	if g.groups == nil || !protocol.IsGroupEvent(ev) {
		return
	}
	id, n := protocol.GroupTag(ev)
	if n != 1 || !groups.ValidID(id) {
		return
	}
	g.groupIDs[id] = true
	g.gx.lock = max(g.gx.lock, treeShared)
	for _, k := range groups.StateKinds {
		keys[groups.Address(k, g.groups.Policy.Node, id)] = true
	}
	for _, ref := range groups.Previous(ev) {
		g.gx.prevScopes = append(g.gx.prevScopes, groups.Scope(id))
		g.gx.prevRefs = append(g.gx.prevRefs, ref)
	}
	switch ev.Kind {
	case groups.KindCreateGroup:
		if !slices.Contains(g.gx.creators, ev.PubKey) {
			g.gx.creators = append(g.gx.creators, ev.PubKey)
		}
	case groups.KindEditMetadata:
		g.gx.lock = treeExclusive
		g.gx.edited = append(g.gx.edited, id)
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "parent" && groups.ValidID(t[1]) {
				g.groupIDs[t[1]] = true
				for _, k := range groups.StateKinds {
					keys[groups.Address(k, g.groups.Policy.Node, t[1])] = true
				}
			}
		}
	case groups.KindDeleteGroup:
		g.gx.lock = treeExclusive
	case groups.KindPins:
		for _, pin := range groups.Pins(ev) {
			if pin[0] == "e" {
				ids[pin[1]], targetIDs[pin[1]] = true, true
			} else if k, _, _, ok := keyOfAddress(pin[1]); ok {
				keys[k] = true
			}
		}
	case groups.KindDeleteEvent:
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "e" && protocol.IsHex64(t[1]) {
				ids[t[1]], targetIDs[t[1]] = true, true
			}
		}
	case groups.KindCreateInvite, groups.KindJoinRequest:
		g.withheldLookup = append(g.withheldLookup, ev.ID)
	}
}

// queueGroupsLoad queues the group locks (before any effective-key lock) ...
func (g *groupPart) queueGroupLocks(b *pgx.Batch) {
	if len(g.groupIDs) > 0 {
		groups.QueueTreeLock(b, g.gx.lock == treeExclusive)
		groups.QueueLocks(b, setSlice(g.groupIDs))
		groups.QueueCreatorLocks(b, g.gx.creators)
	}
}

// ... and the reads of the groups' states and of the withheld ids.
func (g *groupPart) queueGroupsLoad(b *pgx.Batch) {
	if len(g.groupIDs) > 0 {
		groups.QueueLoad(b, setSlice(g.groupIDs), g.gstate)
	}
	if len(g.withheldLookup) > 0 {
		groups.QueueWithheldIDs(b, g.withheldLookup, g.withheldSeen)
	}
	g.gx.known = map[string]bool{}
	groups.QueueKnown(b, g.gx.prevScopes, g.gx.prevRefs, g.gx.known)
	g.gx.created = map[string]groups.Created{}
	if len(g.gx.creators) > 0 {
		groups.QueueCreated(b, g.gx.creators, g.p.ingestedAt.UnixMicro()-groups.DayMicros, g.gx.created)
	}
}

// Tree lock modes of a batch (schema.GroupTreeLock).
const (
	treeNone = iota
	treeShared
	treeExclusive
)

// groupExtra is what the plan knows of the subgroup tree and of timeline
// references.
type groupExtra struct {
	lock       int             // treeNone, treeShared or treeExclusive
	prevScopes []string        // timeline references to look up: scope ...
	prevRefs   []string        // ... and prefix
	known      map[string]bool // references found: scope + " " + prefix
	// Under the exclusive tree lock: the groups whose Tree the batch settles
	// whole (full: the groups it names, their parents), and those whose
	// parent only (the subgroups of those).
	full, parentOnly []string
	// The limits' counts (groups.Limits): the authors of the batch's 9007s
	// (creator-locked) and how many groups each has created, counting the
	// batch's; the groups of its 9002s and how many levels of subgroups each
	// has below it, raised as the batch's 9002s attach groups below them.
	creators []string
	created  map[string]groups.Created
	edited   []string
	heights  map[string]int
	// Member lists (groups.MemberLists): the groups whose deferred list this
	// plan signs (Store.RenderDueLists), those whose list it defers (until
	// when), and those whose list it signs.
	renderLists []string
	listDue     map[string]time.Time
	listSigned  []string
}

// listsLoad adds to a load the groups whose deferred member list the plan
// signs (Store.RenderDueLists): locked and read as if the batch named them.
func (g *groupPart) listsLoad(keys map[string]bool) {
	if g.groups == nil {
		return
	}
	for _, id := range g.gx.renderLists {
		g.groupIDs[id] = true
		g.gx.lock = max(g.gx.lock, treeShared)
		for _, k := range groups.StateKinds {
			keys[groups.Address(k, g.groups.Policy.Node, id)] = true
		}
	}
}

// loadTree, for a batch holding the tree lock exclusively (it has a 9002 or
// a 9008), reads what its decisions and the tree need besides the groups it
// names (which load locked and read): their parents' and named parents'
// ancestors up to the roots (the cycle check), the subgroups of the groups
// it names and of their parents (the child-tag check, the parents' child
// lists, the roots a deletion makes); and it locks and reads the state
// events of those whose 39000 it may re-sign (parents and subgroups). No
// other batch holds a group's lock meanwhile (schema.GroupTreeLock), so
// taking more of them now cannot deadlock.
func (g *groupPart) loadTree(ctx context.Context, tx outbox.Batcher) error {
	if g.groups == nil || g.gx.lock != treeExclusive {
		return nil
	}
	full := map[string]bool{}
	for id := range g.groupIDs {
		full[id] = true
		if s := g.gstate[id]; s != nil && s.Meta.Parent != "" {
			full[s.Meta.Parent] = true
		}
	}
	kids := map[string]bool{}
	var b pgx.Batch
	groups.QueueAncestors(&b, setSlice(full), g.gstate)
	groups.QueueChildren(&b, setSlice(full), g.gstate, kids)
	g.gx.heights = map[string]int{}
	if len(g.gx.edited) > 0 {
		groups.QueueHeights(&b, g.gx.edited, g.groups.Policy.Limits.WithDefaults().Depth+1, g.gx.heights)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load the group tree: %w", err)
	}
	more, keys := map[string]bool{}, map[string]bool{}
	for id := range full {
		if !g.groupIDs[id] {
			more[id] = true
		}
	}
	for id := range kids {
		if !g.groupIDs[id] {
			more[id] = true
		}
	}
	for id := range more {
		for _, k := range groups.StateKinds {
			if addr := groups.Address(k, g.groups.Policy.Node, id); !g.p.locked[addr] {
				keys[addr] = true
			}
		}
	}
	if len(more) > 0 {
		var b pgx.Batch
		groups.QueueLocks(&b, setSlice(more))
		queueLocks(&b, keys)
		maps.Copy(g.p.locked, keys)
		g.p.queueVersions(&b, keys, nil)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("load the group tree's state events: %w", err)
		}
	}
	g.gx.full, g.gx.parentOnly = setSlice(full), setSlice(kids)
	return nil
}

// knownRef reports whether an event of group id whose id starts with prefix
// is stored (loaded) or earlier in the batch.
func (g *groupPart) knownRef(id, prefix string) bool {
	scope := groups.Scope(id)
	if g.gx.known[scope+" "+prefix] {
		return true
	}
	for eid, st := range g.p.byID {
		if st.isNew && strings.HasPrefix(eid, prefix) && slices.Contains(st.topics, scope) {
			return true
		}
	}
	return false
}

// noteGroups remembers the loaded states, to tell later which state events changed.
func (g *groupPart) noteGroups() {
	for id, s := range g.gstate {
		g.gbefore[id] = s.Clone()
	}
}

// groupDuplicate answers a join request sent again (its id is stored): as a
// member's, or as still pending.
func (g *groupPart) groupDuplicate(ev *nostr.Event) (protocol.Verdict, bool) {
	if g.groups == nil || ev.Kind != groups.KindJoinRequest {
		return protocol.Verdict{}, false
	}
	id, _ := protocol.GroupTag(ev)
	s := g.gstate[id]
	switch {
	case s.IsMember(ev.PubKey):
		return groups.RefuseMember.Verdict(), true
	case s != nil && s.Pending(ev.PubKey) && !s.Meta.Closed && g.groups.Policy.AdmitMinRank > 0:
		return groups.CodePendingRank.With(groups.ReasonPendingRank(g.groups.Policy.AdmitMinRank)).Verdict(), true
	case s != nil && s.Pending(ev.PubKey):
		return groups.RefusePending.Verdict(), true
	}
	return protocol.Verdict{}, false
}

// decideGroup decides a group event that is not stored yet. stop: the
// answer is v and nothing more is done here (refused, or withheld and
// applied already); otherwise d (nil for the node's state events and their
// deletion, which need no decision) is applied after the event is stored.
func (g *groupPart) decideGroup(ev *nostr.Event) (d *groups.Decision, v protocol.Verdict, stop bool) {
	if g.groups == nil {
		return nil, groups.RefuseNoGroups.Verdict(), true
	}
	if _, ok := g.generated[ev.ID]; ok {
		return nil, protocol.Verdict{OK: true}, false
	}
	id, _ := protocol.GroupTag(ev)
	s := g.gstate[id]
	if g.withheldSeen[ev.ID] {
		switch {
		case ev.Kind == groups.KindCreateInvite:
			return nil, protocol.Verdict{OK: true, Message: msgDuplicate}, true
		case s.IsMember(ev.PubKey):
			return nil, groups.RefuseMember.Verdict(), true
		}
		return nil, groups.RefusePendingCode.Verdict(), true
	}
	dec := g.groups.Policy.Decide(s, ev, groups.Facts{
		Now:             g.p.ingestedAt.Unix(),
		Seq:             g.p.ingestedAt.UnixMicro(),
		CommunityMember: g.p.members[ev.PubKey] || (g.p.gate != nil && g.p.gate(ev.PubKey)),
		Target: func(id string) (groups.Target, bool) {
			st := g.p.byID[id]
			if st == nil {
				return groups.Target{}, false
			}
			return groups.Target{Kind: st.kind, Scope: st.topics}, true
		},
		Admission: g.groups.Admission,
		Address: func(addr string) (groups.Target, bool) {
			k, _, _, ok := keyOfAddress(addr)
			if !ok {
				return groups.Target{}, false
			}
			for _, v := range g.p.versions[k] {
				if v.effective && !v.deleted {
					return groups.Target{Kind: v.kind, Scope: v.topics}, true
				}
			}
			return groups.Target{}, false
		},
		Known:   func(prefix string) bool { return g.knownRef(id, prefix) },
		Forest:  groups.Forest(g.gstate),
		Created: g.gx.created[ev.PubKey],
		Height:  func(id string) int { return g.gx.heights[id] },
	})
	v = protocol.Verdict{OK: dec.OK, Message: dec.Message, Code: dec.Code}
	if dec.Keep {
		g.countLimits(ev)
	}
	switch {
	case !dec.Keep:
		return nil, v, true
	case dec.Withhold:
		v.Withheld = true
		g.withheld = append(g.withheld, ev)
		g.withheldSeen[ev.ID] = true
		g.applyGroup(ev, &dec)
		return nil, v, true
	}
	return &dec, v, false
}

// countLimits counts a kept group event in the limits' counts of the rest
// of the batch: a 9007 in its author's groups, a 9002's parent and that
// parent's ancestors as high as the group and its subgroups make them.
func (g *groupPart) countLimits(ev *nostr.Event) {
	id, _ := protocol.GroupTag(ev)
	switch ev.Kind {
	case groups.KindCreateGroup:
		if g.gx.created != nil {
			c := g.gx.created[ev.PubKey]
			c.Day, c.All = c.Day+1, c.All+1
			g.gx.created[ev.PubKey] = c
		}
	case groups.KindEditMetadata:
		m, _ := groups.ParseMetadata(ev)
		if g.gx.heights == nil || m.Parent == "" {
			return
		}
		f := groups.Forest(g.gstate)
		h := g.gx.heights[id] + 1
		for cur, n := m.Parent, 0; cur != "" && n <= len(f); cur, n = f.Parent(cur), n+1 {
			g.gx.heights[cur] = max(g.gx.heights[cur], h)
			h++
		}
	}
}

// applyGroup applies a kept group event to its group's state, then stores
// and applies the node's events it causes, then queues the hides of a 9005.
func (g *groupPart) applyGroup(ev *nostr.Event, d *groups.Decision) {
	id, _ := protocol.GroupTag(ev)
	s := g.gstate[id]
	if s == nil {
		s = groups.New(id)
		g.gstate[id] = s
	}
	if s.Apply(ev, g.p.ingestedAt.UnixMicro()) {
		g.groupsTouched[id] = true
	}
	for _, e := range d.Emit {
		if err := g.groups.Sign(e); err != nil {
			g.groupErr = errors.Join(g.groupErr, fmt.Errorf("sign the node's group event: %w", err))
			return
		}
		if v := g.p.decideEvent(-1, e); !v.OK {
			// The node's own events are decided to pass; one that does not
			// is a bug, and the batch fails rather than leave a state its
			// events do not explain.
			g.groupErr = errors.Join(g.groupErr, fmt.Errorf("the node's kind %d for group %s was refused: %s", e.Kind, id, v.Message))
			return
		}
	}
	g.p.hideIDs = append(g.p.hideIDs, d.Hide...)
}

// finishGroups stores the state events of every group the batch changed,
// signed by the node (see the plan's group part).
func (g *groupPart) finishGroups() {
	now := g.p.ingestedAt.Unix()
	if g.gx.lock == treeExclusive {
		for _, id := range groups.Forest(g.gstate).Settle(g.gx.full, g.gx.parentOnly) {
			g.groupsTouched[id] = true
		}
	}
	for _, id := range g.gx.renderLists {
		if s := g.gstate[id]; s != nil && s.Exists() {
			g.groupsTouched[id] = true
		} else { // deleted meanwhile: nothing to sign, nothing due
			g.gx.listSigned = append(g.gx.listSigned, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(g.groupsTouched)) {
		before, after := g.gbefore[id], g.gstate[id]
		var evs []*nostr.Event
		switch {
		case !after.Deleted.IsZero() && (before == nil || before.Deleted.IsZero()):
			del := &nostr.Event{Kind: nostr.KindDeletion, Content: "this group was deleted"}
			at := now
			for _, k := range groups.StateKinds {
				addr := groups.Address(k, g.groups.Policy.Node, id)
				del.Tags = append(del.Tags, nostr.Tag{"a", addr})
				for _, v := range g.p.versions[addr] {
					at = max(at, v.createdAt)
				}
			}
			del.CreatedAt = nostr.Timestamp(at)
			evs = append(evs, del)
		case after.Exists():
			for _, ev := range g.memberList(id, groups.Changed(before, after)) {
				at := now
				for _, v := range g.p.versions[groups.Address(ev.Kind, g.groups.Policy.Node, id)] {
					at = max(at, v.createdAt+1)
				}
				ev.CreatedAt = nostr.Timestamp(at)
				evs = append(evs, ev)
			}
		}
		for _, ev := range evs {
			if err := g.groups.Sign(ev); err != nil {
				g.groupErr = errors.Join(g.groupErr, fmt.Errorf("sign group %s state: %w", id, err))
				return
			}
			g.generated[ev.ID] = id
			if v := g.p.decideEvent(-1, ev); !v.OK {
				g.groupErr = errors.Join(g.groupErr, fmt.Errorf("the node's kind %d for group %s was refused: %s", ev.Kind, id, v.Message))
				return
			}
		}
	}
}

// memberList applies groups.MemberLists to the state events of group id
// that the batch changed: it drops a member list that must wait (noting when
// it is due), adds the deferred list this plan was asked to sign, and notes
// the groups whose list it signs.
func (g *groupPart) memberList(id string, changed []*nostr.Event) []*nostr.Event {
	forced := slices.Contains(g.gx.renderLists, id)
	i := slices.IndexFunc(changed, func(ev *nostr.Event) bool { return ev.Kind == groups.KindMembers })
	if i < 0 && forced {
		for _, ev := range groups.Render(g.gstate[id]) {
			if ev.Kind == groups.KindMembers {
				changed = append(changed, ev)
				slices.SortStableFunc(changed, func(a, b *nostr.Event) int { return a.Kind - b.Kind })
				i = slices.Index(changed, ev)
			}
		}
	}
	if i < 0 {
		return changed
	}
	last := int64(-1)
	for _, v := range g.p.versions[groups.Address(groups.KindMembers, g.groups.Policy.Node, id)] {
		last = max(last, v.createdAt)
	}
	if !forced && last >= 0 {
		if due, wait := g.groups.Policy.Lists.Defer(len(g.gstate[id].MemberList()), time.Unix(last, 0), g.p.ingestedAt); wait {
			if g.gx.listDue == nil {
				g.gx.listDue = map[string]time.Time{}
			}
			g.gx.listDue[id] = due
			return slices.Delete(changed, i, i+1)
		}
	}
	g.gx.listSigned = append(g.gx.listSigned, id)
	return changed
}

// groupScope returns the scope of a group event, or "" for any other: the
// node's state events and their deletion (generated by this plan) and events
// decided by the group path.
func (g *groupPart) groupScope(ev *nostr.Event) string {
	if id, ok := g.generated[ev.ID]; ok {
		return groups.Scope(id)
	}
	if g.groups != nil && protocol.IsGroupEvent(ev) {
		id, _ := protocol.GroupTag(ev)
		return groups.Scope(id)
	}
	return ""
}

// queueGroupWrites queues the saves of the changed states and the withheld events.
func (g *groupPart) queueGroupWrites(b *pgx.Batch) {
	var states []*groups.State
	for _, id := range slices.Sorted(maps.Keys(g.groupsTouched)) {
		states = append(states, g.gstate[id])
	}
	groups.QueueSave(b, states, g.gbefore, g.p.ingestedAt)
	groups.QueueListsDue(b, g.gx.listDue, g.gx.listSigned)
	groups.QueueWithhold(b, g.withheld, g.p.ingestedAt)
}

// passesOn: only a group event (h tag) enters a group; a reply without one
// does not inherit the group's scope.
func (g *groupPart) passesOn(t string) bool {
	_, group := groups.IDOfScope(t)
	return !group
}
