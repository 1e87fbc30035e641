package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// GroupAccessStore reads the rule of the private and hidden NIP-29 groups
// (store.Reader.GroupAccess: cn_relay.group_access; ids nil: all of them). The
// relay (Deps.Store, always) has private and hidden groups
// enforced on the paths it answers from memory (live fan-out, the event
// cache, a replica's handoff) as the database enforces them on every query.
type GroupAccessStore interface {
	GroupAccess(ctx context.Context, ids []string) (map[string]protocol.GroupRule, error)
}

// groupGate is the relay's copy of cn_relay.group_access
// (protocol.GroupGate), kept by the outbox follower: loaded whole when it
// starts, then, for every read of outbox rows, the groups whose membership
// or metadata those rows change (accessKinds) are read again from the
// primary before any of the rows is applied to the event cache or fanned
// out. A group's row of group_access commits with the outbox rows of the
// events that changed it, so when the follower has handled the rows up to
// seq (seq), the gate is at least as new as the database at seq: a reader
// that lost access (removed, left, the group turned private) gets no event
// of the group from the cache or live after that, old or new.
type groupGate struct {
	mu    sync.RWMutex
	rules map[string]protocol.GroupRule // by group id: only private, hidden or deleted groups
	any   atomic.Bool

	seqMu sync.Mutex
	seq   int64         // the follower has handled the outbox rows up to here
	moved chan struct{} // closed (and replaced) when seq moves
}

func newGroupGate() *groupGate {
	return &groupGate{rules: map[string]protocol.GroupRule{}, moved: make(chan struct{})}
}

// Any implements protocol.GroupGate.
func (g *groupGate) Any() bool { return g.any.Load() }

// Rule implements protocol.GroupGate.
func (g *groupGate) Rule(id string, pubkeys []string) (private, hidden, member bool) {
	g.mu.RLock()
	r, ok := g.rules[id]
	g.mu.RUnlock()
	if !ok {
		return false, false, false
	}
	return r.Private, r.Hidden, r.ReadBy(pubkeys)
}

// deleted reports whether group id was deleted (protocol.GroupRule.Deleted):
// Rule says it is private and hidden with no member.
func (g *groupGate) deleted(id string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.rules[id].Deleted
}

// set replaces the rules of ids (nil: of every group) with rules.
func (g *groupGate) set(ids []string, rules map[string]protocol.GroupRule) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ids == nil {
		g.rules = rules
	} else {
		for _, id := range ids {
			if r, ok := rules[id]; ok {
				g.rules[id] = r
			} else {
				delete(g.rules, id)
			}
		}
	}
	g.any.Store(len(g.rules) > 0)
}

// advance records that the follower has handled the rows up to seq.
func (g *groupGate) advance(seq int64) {
	g.seqMu.Lock()
	defer g.seqMu.Unlock()
	if seq > g.seq {
		g.seq = seq
		close(g.moved)
		g.moved = make(chan struct{})
	}
}

// waitFor waits until the gate is at least as new as outbox seq, at most d
// or until done; it reports whether it is.
func (g *groupGate) waitFor(seq int64, d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		g.seqMu.Lock()
		at, moved := g.seq, g.moved
		g.seqMu.Unlock()
		if at >= seq {
			return true
		}
		select {
		case <-moved:
		case <-t.C:
			return false
		case <-done:
			return false
		}
	}
}

// accessKinds are the kinds whose outbox rows may change who reads a group:
// membership (9000, 9001: the node answers joins and leaves with them),
// metadata (9002: private, hidden), creation and deletion.
var accessKinds = map[int]bool{
	groups.KindPutUser: true, groups.KindRemoveUser: true, groups.KindEditMetadata: true,
	groups.KindCreateGroup: true, groups.KindDeleteGroup: true,
}

// accessChanged returns the groups whose rule rows may change (sorted, nil
// for none).
func accessChanged(rows []outbox.Row) []string {
	var ids []string
	for _, r := range rows {
		if !accessKinds[r.Kind] {
			continue
		}
		if id, ok := strings.CutPrefix(r.TopicID, groups.ScopePrefix); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// mayWrite is the last check before an event is queued on a client's socket
// (defense in depth: every path that reads events filters them first):
// whether v may read ev, whose JSON is js (ev itself may lack its tags when
// it was read with its JSON only). Only the group rule can have changed
// since the event was read, and only it is checked again; an event whose
// JSON shows no `h` tag and is of no group kind is no group event.
func mayWrite(v protocol.Viewer, ev *nostr.Event, js []byte) bool {
	if v.Operator || v.AllGroups || v.Groups == nil || !v.Groups.Any() {
		return true
	}
	groupKind := (ev.Kind >= 9000 && ev.Kind <= 9022) || protocol.IsGroupStateKind(ev.Kind) || ev.Kind == nostr.KindDeletion
	if !groupKind && !bytes.Contains(js, []byte(`"h"`)) {
		return true
	}
	if ev.Tags == nil && js != nil {
		whole := &nostr.Event{}
		if err := json.Unmarshal(js, whole); err != nil {
			return false
		}
		ev = whole
	}
	return v.MayReadGroup(ev)
}
