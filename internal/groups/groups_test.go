package groups

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

type user struct{ sk, pk string }

func newUser(t *testing.T) user {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	return user{sk, pk}
}

func (u user) ev(t *testing.T, kind int, at int64, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags, Content: fmt.Sprint(rand.Int())}
	require.NoError(t, ev.Sign(u.sk))
	return ev
}

const now = int64(1_800_000_000)

func TestGroupScopeIsNoTopic(t *testing.T) {
	t.Parallel()
	// A client cannot name a group's scope with a t tag or #t: normalising
	// lower-cases it (and TestNodeTopicIsUnreachable checks that no
	// character normalises to an upper-case ASCII letter).
	for _, s := range []string{Scope("pizza"), "GROUP:pizza", "Group:pizza", "ＧＲＯＵＰ:pizza"} {
		_, group := IDOfScope(protocol.NormalizeTopic(s))
		require.False(t, group, s)
	}
	id, ok := IDOfScope(Scope("a-b_C"))
	require.True(t, ok)
	require.Equal(t, "a-b_C", id)
}

// TestGroupDecide is the role model and the refusals, as a table.
func TestGroupDecide(t *testing.T) {
	t.Parallel()
	node, opAdmin := newUser(t), newUser(t)
	admin, mod, member, stranger, other := newUser(t), newUser(t), newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Admins: map[string]bool{opAdmin.pk: true}, Creators: CreatorsMembers, InviteTTL: 3600e9}
	s := New("g")
	apply := func(ev *nostr.Event) { require.True(t, s.Apply(ev, 0)) }
	apply(admin.ev(t, KindCreateGroup, now-100, nostr.Tag{"h", "g"}))
	apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, "admin"}))
	apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", mod.pk, "moderator"}))
	apply(node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", member.pk}))
	apply(admin.ev(t, KindCreateInvite, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"code", "fresh"}))
	apply(admin.ev(t, KindCreateInvite, now-7200, nostr.Tag{"h", "g"}, nostr.Tag{"code", "old"}))
	target := member.ev(t, 9, now-50, nostr.Tag{"h", "g"})
	history := node.ev(t, KindPutUser, now-50, nostr.Tag{"h", "g"}, nostr.Tag{"p", member.pk})
	topicPost := member.ev(t, 1, now-50, nostr.Tag{"t", "go"})
	targets := map[string]Target{target.ID: {Kind: 9, Scope: []string{Scope("g")}},
		history.ID: {Kind: KindPutUser, Scope: []string{Scope("g")}}, topicPost.ID: {Kind: 1, Scope: []string{"go"}}}
	facts := Facts{Now: now, Seq: 1, CommunityMember: true, Target: func(id string) (Target, bool) { tg, ok := targets[id]; return tg, ok }}
	closed := s.Clone()
	closed.Meta.Closed, closed.Meta.Restricted = true, true
	private := s.Clone()
	private.Meta.Private = true
	limited := s.Clone()
	limited.Meta.AllKinds, limited.Meta.Kinds = false, []int{9}
	h := nostr.Tag{"h", "g"}

	for _, tc := range []struct {
		name  string
		state *State
		ev    *nostr.Event
		facts *Facts
		want  string // "" accepted, else the message's start
		emit  int
	}{
		{"admin puts with roles", s, admin.ev(t, KindPutUser, now, h, nostr.Tag{"p", other.pk, "moderator"}), nil, "", 0},
		{"moderator puts plain", s, mod.ev(t, KindPutUser, now, h, nostr.Tag{"p", other.pk}), nil, "", 0},
		{"moderator gives a role", s, mod.ev(t, KindPutUser, now, h, nostr.Tag{"p", other.pk, "admin"}), nil, "restricted: your roles", 0},
		{"moderator strips an admin", s, mod.ev(t, KindPutUser, now, h, nostr.Tag{"p", admin.pk}), nil, "restricted: your roles", 0},
		{"moderator removes plain", s, mod.ev(t, KindRemoveUser, now, h, nostr.Tag{"p", member.pk}), nil, "", 0},
		{"moderator removes admin", s, mod.ev(t, KindRemoveUser, now, h, nostr.Tag{"p", admin.pk}), nil, "restricted: your roles", 0},
		{"member puts", s, member.ev(t, KindPutUser, now, h, nostr.Tag{"p", other.pk}), nil, "restricted: your roles", 0},
		{"unknown role name allows nothing", s, member.ev(t, KindDeleteGroup, now, h), nil, "restricted: your roles", 0},
		{"operator admin puts anywhere", s, opAdmin.ev(t, KindPutUser, now, h, nostr.Tag{"p", other.pk, "admin"}), nil, "", 0},
		{"node puts", s, node.ev(t, KindRemoveUser, now, h, nostr.Tag{"p", admin.pk}), nil, "", 0},
		{"stale put", s, admin.ev(t, KindPutUser, now-200, h, nostr.Tag{"p", member.pk}), nil, "invalid: older", 0},
		{"put without p", s, admin.ev(t, KindPutUser, now, h), nil, "invalid: name the user", 0},
		{"admin edits", s, admin.ev(t, KindEditMetadata, now, h, nostr.Tag{"name", "G"}), nil, "", 0},
		{"moderator edits", s, mod.ev(t, KindEditMetadata, now, h, nostr.Tag{"name", "G"}), nil, "restricted: your roles", 0},
		{"private", s, admin.ev(t, KindEditMetadata, now, h, nostr.Tag{"private"}), nil, "", 0},
		{"hidden", s, admin.ev(t, KindEditMetadata, now, h, nostr.Tag{"hidden"}), nil, "", 0},
		{"parent unknown", s, admin.ev(t, KindEditMetadata, now, h, nostr.Tag{"parent", "x"}), nil, "invalid: parent group \"x\" does not exist", 0},
		{"bad kinds", s, admin.ev(t, KindEditMetadata, now, h, nostr.Tag{"supported_kinds", "nine"}), nil, "invalid: supported_kinds", 0},
		{"moderator deletes", s, mod.ev(t, KindDeleteEvent, now, h, nostr.Tag{"e", target.ID}), nil, "", 0},
		{"delete history", s, admin.ev(t, KindDeleteEvent, now, h, nostr.Tag{"e", history.ID}), nil, "invalid: group moderation", 0},
		{"delete outside", s, admin.ev(t, KindDeleteEvent, now, h, nostr.Tag{"e", topicPost.ID}), nil, "invalid: a delete-event", 0},
		{"delete unknown", s, admin.ev(t, KindDeleteEvent, now, h, nostr.Tag{"e", strings.Repeat("0", 64)}), nil, "invalid: a delete-event", 0},
		{"member deletes", s, member.ev(t, KindDeleteEvent, now, h, nostr.Tag{"e", target.ID}), nil, "restricted: your roles", 0},
		{"moderator invites", s, mod.ev(t, KindCreateInvite, now, h, nostr.Tag{"code", "c"}), nil, "", 0},
		{"invite without code", s, admin.ev(t, KindCreateInvite, now, h), nil, "invalid: a create-invite", 0},
		{"admin deletes group", s, admin.ev(t, KindDeleteGroup, now, h), nil, "", 0},
		{"unsupported 9011", s, admin.ev(t, 9011, now, h), nil, "restricted: moderation kind 9011", 0},
		{"pin", s, mod.ev(t, KindPins, now, h, nostr.Tag{"e", target.ID}), nil, "", 0},
		{"pin history", s, admin.ev(t, KindPins, now, h, nostr.Tag{"e", history.ID}), nil, "invalid: group moderation, join/leave and state events cannot be pinned", 0},
		{"pin outside", s, admin.ev(t, KindPins, now, h, nostr.Tag{"e", topicPost.ID}), nil, "invalid: a pinned event", 0},
		{"member pins", s, member.ev(t, KindPins, now, h, nostr.Tag{"e", target.ID}), nil, "restricted: your roles", 0},
		{"join open", s, other.ev(t, KindJoinRequest, now, h), nil, "", 1},
		{"join as member", s, member.ev(t, KindJoinRequest, now, h), nil, "duplicate: already a member", 0},
		{"join closed", closed, other.ev(t, KindJoinRequest, now, h), nil, "restricted: pending review: this group is closed", 0},
		{"join closed, code", closed, other.ev(t, KindJoinRequest, now, h, nostr.Tag{"code", "fresh"}), nil, "", 1},
		{"join closed, expired code", closed, other.ev(t, KindJoinRequest, now, h, nostr.Tag{"code", "old"}), nil, "restricted: pending review: this invite code", 0},
		{"leave", s, member.ev(t, KindLeaveRequest, now, h), nil, "", 1},
		{"leave as stranger", s, stranger.ev(t, KindLeaveRequest, now, h), nil, "restricted: not a member", 0},
		{"post open", s, stranger.ev(t, 9, now, h), nil, "", 0},
		{"post restricted", closed, stranger.ev(t, 9, now, h), nil, "restricted: only members", 0},
		{"post restricted, member", closed, member.ev(t, 9, now, h), nil, "", 0},
		{"post private", private, stranger.ev(t, 9, now, h), nil, "restricted: only members of this private group", 0},
		{"post private, member", private, member.ev(t, 9, now, h), nil, "", 0},
		{"join private", private, other.ev(t, KindJoinRequest, now, h), nil, "", 1},
		{"kind not supported", limited, member.ev(t, 1, now, h), nil, "restricted: this group does not accept kind 1", 0},
		{"kind supported", limited, member.ev(t, 9, now, h), nil, "", 0},
		{"state kind", s, admin.ev(t, KindMetadata, now, nostr.Tag{"d", "g"}), nil, "restricted: group state", 0},
		{"state kind by node", s, node.ev(t, KindMembers, now, nostr.Tag{"d", "g"}), nil, "restricted: group state", 0},
		{"no h", s, admin.ev(t, KindPutUser, now), nil, "invalid: group moderation, join and leave events need an h tag", 0},
		{"two h", s, admin.ev(t, 9, now, h, nostr.Tag{"h", "x"}), nil, "invalid: an event belongs to one group", 0},
		{"bad id", nil, admin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "a b"}), nil, "invalid: a group id", 0},
		{"unknown group", nil, admin.ev(t, 9, now, nostr.Tag{"h", "x"}), nil, "restricted: unknown group", 0},
		{"create exists", s, admin.ev(t, KindCreateGroup, now, h), nil, "duplicate: this group already exists", 0},
		{"create as member", nil, stranger.ev(t, KindCreateGroup, now, nostr.Tag{"h", "new"}), nil, "", 1},
		{"create as non-member", nil, stranger.ev(t, KindCreateGroup, now, nostr.Tag{"h", "new"}), &Facts{Now: now}, "restricted: only members of this community", 0},
		{"create as operator", nil, opAdmin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "new"}), &Facts{Now: now}, "", 1},
	} {
		f := facts
		if tc.facts != nil {
			f = *tc.facts
		}
		before := ""
		if tc.state != nil {
			before = string(tc.state.Dump())
		}
		d := pol.Decide(tc.state, tc.ev, f)
		if tc.want == "" {
			require.True(t, d.OK && d.Keep, "%s: %s", tc.name, d.Message)
		} else {
			require.False(t, d.OK, tc.name)
			require.True(t, strings.HasPrefix(d.Message, tc.want), "%s: %q", tc.name, d.Message)
		}
		require.Len(t, d.Emit, tc.emit, tc.name)
		if tc.state != nil {
			require.Equal(t, before, string(tc.state.Dump()), "%s: Decide changed the state", tc.name)
		}
	}

	// Admins only: the relay's admins and the node create.
	pol.Creators = CreatorsAdmins
	require.Equal(t, "restricted: only this relay's admins may create groups",
		pol.Decide(nil, admin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "x"}), facts).Message)
	require.True(t, pol.Decide(nil, opAdmin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "x"}), facts).OK)
	pol.Creators = CreatorsAny
	require.True(t, pol.Decide(nil, stranger.ev(t, KindCreateGroup, now, nostr.Tag{"h", "x"}), Facts{Now: now}).OK)
}

// TestGroupNodeEventsWin: the node's 9000 that honours a join is stamped after
// the user's register and the request, so it takes effect and the request is
// no longer pending; a 9009 and a coded 9021 are withheld.
func TestGroupNodeEventsWin(t *testing.T) {
	t.Parallel()
	node, admin, u := newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsAny}
	s := New("g")
	s.Apply(admin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "g"}), 0)
	// The user was removed in the future (clock skew) and asks again with a
	// request dated later still.
	s.Apply(admin.ev(t, KindRemoveUser, now+60, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk}), 0)
	req := u.ev(t, KindJoinRequest, now+90, nostr.Tag{"h", "g"})
	d := pol.Decide(s, req, Facts{Now: now, Seq: 1})
	require.True(t, d.OK, d.Message)
	require.Len(t, d.Emit, 1)
	require.EqualValues(t, now+90, d.Emit[0].CreatedAt)
	s.Apply(req, 1)
	require.True(t, s.Pending(u.pk))
	e := d.Emit[0]
	require.NoError(t, e.Sign(node.sk))
	require.True(t, pol.Decide(s, e, Facts{Now: now, Seq: 1}).OK)
	s.Apply(e, 1)
	require.True(t, s.IsMember(u.pk))
	require.False(t, s.Pending(u.pk))

	inv := pol.Decide(s, node.ev(t, KindCreateInvite, now, nostr.Tag{"h", "g"}, nostr.Tag{"code", "x"}), Facts{Now: now})
	require.True(t, inv.OK && inv.Withhold)
	s.Meta.Closed = true
	coded := pol.Decide(s, newUser(t).ev(t, KindJoinRequest, now, nostr.Tag{"h", "g"}, nostr.Tag{"code", "nope"}), Facts{Now: now})
	require.True(t, !coded.OK && coded.Keep && coded.Withhold)
}

// TestGroupApplyCommutes: applying the same events in any order gives the
// same state (canonical dump), equal timestamps and replays included.
func TestGroupApplyCommutes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	users := []user{newUser(t), newUser(t), newUser(t), newUser(t)}
	var evs []Accepted
	for i := 0; i < 300; i++ {
		u := users[rng.IntN(len(users))]
		p := users[rng.IntN(len(users))].pk
		at := now + int64(rng.IntN(5)) // many equal created_at
		seq := int64(rng.IntN(3))      // and equal arrivals
		h := nostr.Tag{"h", "g"}
		var ev *nostr.Event
		switch rng.IntN(7) {
		case 0:
			ev = u.ev(t, KindCreateGroup, at, h)
		case 1:
			ev = u.ev(t, KindPutUser, at, h, nostr.Tag{"p", p, []string{"admin", "moderator", "x"}[rng.IntN(3)]})
		case 2:
			ev = u.ev(t, KindRemoveUser, at, h, nostr.Tag{"p", p})
		case 3:
			ev = u.ev(t, KindEditMetadata, at, h, nostr.Tag{"name", fmt.Sprint("n", rng.IntN(9))}, nostr.Tag{"closed"})
		case 4:
			ev = u.ev(t, KindJoinRequest, at, h)
		case 5:
			ev = u.ev(t, KindCreateInvite, at, h, nostr.Tag{"code", fmt.Sprint("c", rng.IntN(3))})
		case 6:
			ev = u.ev(t, KindDeleteGroup, at, h)
		}
		evs = append(evs, Accepted{Event: ev, Seq: seq})
	}
	want := string(Project(evs)["g"].Dump())
	for range 20 {
		s := New("g")
		order := rng.Perm(len(evs))
		for _, i := range order {
			s.Apply(evs[i].Event, evs[i].Seq)
		}
		s.Apply(evs[order[0]].Event, evs[order[0]].Seq) // a replay changes nothing
		require.Equal(t, want, string(s.Dump()))
	}
}

// TestGroupRender: what the node signs for a state, read back by go-nostr's
// nip29 (in the relay tests) and here by its tags.
func TestGroupRender(t *testing.T) {
	t.Parallel()
	admin, u := newUser(t), newUser(t)
	s := New("g")
	s.Apply(admin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "g"}), 0)
	s.Apply(admin.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, "admin", "ceo"}), 0)
	s.Apply(admin.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk, "gardener"}), 0)
	s.Apply(admin.ev(t, KindEditMetadata, now, nostr.Tag{"h", "g"}, nostr.Tag{"name", "G"}, nostr.Tag{"closed"}, nostr.Tag{"supported_kinds", "9", "11"}), 0)
	evs := Render(s)
	require.Equal(t, nostr.Tags{{"d", "g"}, {"name", "G"}, {"public"}, {"closed"}, {"supported_kinds", "9", "11"}}, evs[0].Tags)
	require.Equal(t, nostr.Tags{{"d", "g"}, {"p", admin.pk, "admin", "ceo"}}, evs[1].Tags, "a role without privileges is not an admin")
	require.ElementsMatch(t, nostr.Tags{{"d", "g"}, {"p", admin.pk}, {"p", u.pk}}, evs[2].Tags)
	require.Equal(t, nostr.Tag{"role", "admin", Roles[0].Description}, evs[3].Tags[1])
	require.Empty(t, Changed(s, s))
	after := s.Clone()
	after.Apply(u.ev(t, KindJoinRequest, now, nostr.Tag{"h", "g"}), 0)
	require.Empty(t, Changed(s, after), "a pending request changes no state event")
	after.Apply(admin.ev(t, KindRemoveUser, now+1, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk}), 0)
	ch := Changed(s, after)
	require.Len(t, ch, 1)
	require.Equal(t, KindMembers, ch[0].Kind)
}

// TestGroupSameSecondArrivalWins: two changes of one member in the same
// second both take effect in the order they arrive (Stamp.Seq), whatever
// their ids.
func TestGroupSameSecondArrivalWins(t *testing.T) {
	t.Parallel()
	node, admin, u := newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk}
	s := New("g")
	s.Apply(admin.ev(t, KindCreateGroup, now, nostr.Tag{"h", "g"}), 1)
	s.Apply(node.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, "admin"}), 1)
	first := admin.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk})
	second := admin.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk, "moderator"})
	for second.ID < first.ID { // the later one has the higher id: NIP-01's tie rule alone would refuse it
		second = admin.ev(t, KindPutUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk, "moderator"})
	}
	require.True(t, pol.Decide(s, first, Facts{Now: now, Seq: 2}).OK)
	s.Apply(first, 2)
	d := pol.Decide(s, second, Facts{Now: now, Seq: 3})
	require.True(t, d.OK, d.Message)
	s.Apply(second, 3)
	require.Equal(t, []string{"moderator"}, s.RolesOf(u.pk))
	// In the same batch (same Seq) the lower id wins, as NIP-01 says.
	third := admin.ev(t, KindRemoveUser, now, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk})
	want := third.ID < second.ID
	require.Equal(t, want, pol.Decide(s, third, Facts{Now: now, Seq: 3}).OK)
}

// TestGroupForestCommutes: the tree (parents, ordered children) that Project
// derives from random 9002s with parent and child tags, creations, deletions,
// equal timestamps and arrivals, is the same whatever order the events are
// applied in, and whatever order the groups are settled in.
func TestGroupForestCommutes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	u := newUser(t)
	ids := []string{"a", "b", "c", "d", "e", "f"}
	var evs []Accepted
	for _, id := range ids {
		evs = append(evs, Accepted{Event: u.ev(t, KindCreateGroup, now, nostr.Tag{"h", id}), Seq: 0})
	}
	for i := 0; i < 200; i++ {
		id := ids[rng.IntN(len(ids))]
		at := now + int64(rng.IntN(8))
		seq := int64(rng.IntN(3))
		tags := nostr.Tags{{"h", id}}
		if rng.IntN(20) == 0 && id >= "d" { // a, b and c live
			evs = append(evs, Accepted{Event: u.ev(t, KindDeleteGroup, at, tags...), Seq: seq})
			continue
		}
		if r := rng.IntN(5); r < 4 {
			tags = append(tags, nostr.Tag{"parent", ids[r]}) // d may be deleted: a parent deleted
		}
		for _, k := range rng.Perm(len(ids))[:rng.IntN(4)] {
			tags = append(tags, nostr.Tag{"child", ids[k]})
		}
		evs = append(evs, Accepted{Event: u.ev(t, KindEditMetadata, at, tags...), Seq: seq})
	}
	canon := func(f map[string]*State) string {
		var b strings.Builder
		for _, id := range ids {
			if s := f[id]; s != nil {
				b.Write(s.Dump())
			}
		}
		return b.String()
	}
	projected := Project(evs)
	want := canon(projected)
	withKids := 0
	for _, s := range projected {
		if len(s.Tree.Children) > 1 {
			withKids++
		}
	}
	require.Positive(t, withKids, "no group has two children: the test orders nothing")
	for range 20 {
		f := Forest{}
		for _, i := range rng.Perm(len(evs)) {
			id := evs[i].Event.Tags.GetFirst([]string{"h"}).Value()
			if f[id] == nil {
				f[id] = New(id)
			}
			f[id].Apply(evs[i].Event, evs[i].Seq)
		}
		order := slices.Clone(ids)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		f.Settle(order, nil)
		require.Equal(t, want, canon(f))
	}
}

// TestGroupLateAndHistory: the late-publication window spares the node's own
// events and a history import (Policy.History), which also dates the node's
// moderation events at their cause, not at the ingest time.
func TestGroupLateAndHistory(t *testing.T) {
	t.Parallel()
	node, admin, u := newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsAny, LateWindow: DefaultLateWindow}
	s := New("g")
	s.Apply(admin.ev(t, KindCreateGroup, now-86400, nostr.Tag{"h", "g"}), 0)
	s.Apply(node.ev(t, KindPutUser, now-86400, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, "admin"}), 0)
	f := Facts{Now: now, Seq: 1}
	old := u.ev(t, KindJoinRequest, now-3600, nostr.Tag{"h", "g"})
	require.Equal(t, ReasonLate(DefaultLateWindow), pol.Decide(s, old, f).Message)
	edge := u.ev(t, 9, now-int64(DefaultLateWindow.Seconds()), nostr.Tag{"h", "g"})
	require.True(t, pol.Decide(s, edge, f).OK, "exactly the window is not late")
	require.True(t, pol.Decide(s, node.ev(t, KindPutUser, now-3600, nostr.Tag{"h", "g"}, nostr.Tag{"p", u.pk}), f).OK, "the node's own")
	require.True(t, pol.Decide(s, u.ev(t, 9, now, nostr.Tag{"h", "g"}, nostr.Tag{"previous", "0badf00d"}), Facts{Now: now, Seq: 1,
		Known: func(p string) bool { return p == "0badf00d" }}).OK)

	pol.History = true
	d := pol.Decide(s, old, f)
	require.True(t, d.OK, d.Message)
	require.EqualValues(t, now-3600, d.Emit[0].CreatedAt, "dated at the join request, not now")
	require.True(t, pol.Decide(s, u.ev(t, 9, now-3600, nostr.Tag{"h", "g"}, nostr.Tag{"previous", "0badf00d"}), f).OK, "references not checked")
	require.Equal(t, ReasonBadPrevious, pol.Decide(s, u.ev(t, 9, now, nostr.Tag{"h", "g"}, nostr.Tag{"previous", "xyz"}), f).Message, "still well-formed")
}
