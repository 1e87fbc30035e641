package relay

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/store"
)

// groupRelay is a relay on Postgres that hosts NIP-29 groups with node key node.
type groupRelay struct {
	*testRelay
	db   *pgtest.DB
	node nodekey.Key
}

// startGroupRelay serves a relay whose store hosts groups under the default
// policy (creators: community members), after edit.
func startGroupRelay(t *testing.T, edit func(*groups.Policy)) *groupRelay {
	t.Helper()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Info.Self, cfg.Groups = node.PubKey, true
	st := store.New(db.Pool, startWriter(t, db), cfg.Limits.TopicRules)
	pol := groups.Policy{Node: node.PubKey, Creators: groups.CreatorsMembers}
	if edit != nil {
		edit(&pol)
	}
	require.NoError(t, st.SetGroups(store.Groups{Policy: pol, Sign: node.Sign}))
	reg := prometheus.NewRegistry()
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: pgStore{st}, Feed: NewPGFeed(db.Pool, nil), Registerer: reg}))
	require.NoError(t, err)
	return &groupRelay{testRelay: serveRelay(t, r), db: db, node: node}
}

// h is the h tag of group id.
func h(id string) nostr.Tag { return nostr.Tag{"h", id} }

// accepted publishes ev and requires OK true with an empty message.
func (c *client) accepted(ev *nostr.Event) {
	c.t.Helper()
	ok, reason := c.publish(ev)
	require.True(c.t, ok, "kind %d refused: %s", ev.Kind, reason)
	require.Empty(c.t, reason)
}

// refused publishes ev and requires OK false with a message starting with prefix.
func (c *client) refused(ev *nostr.Event, prefix string) string {
	c.t.Helper()
	ok, reason := c.publish(ev)
	require.False(c.t, ok, "kind %d accepted", ev.Kind)
	require.Regexp(c.t, "^"+prefix, reason)
	return reason
}

// stateOf reads group id's state event of kind (there must be exactly one
// visible, signed by the node).
func (g *groupRelay) stateOf(t *testing.T, c *client, kind int, id string) *nostr.Event {
	t.Helper()
	evs := g.query(t, c, map[string]any{"kinds": []int{kind}, "#d": []string{id}})
	require.Len(t, evs, 1, "kind %d of %s", kind, id)
	require.Equal(t, g.node.PubKey, evs[0].PubKey)
	ok, err := evs[0].CheckSignature()
	require.NoError(t, err)
	require.True(t, ok)
	return evs[0]
}

// query runs a REQ up to EOSE.
func (g *groupRelay) query(t *testing.T, c *client, filter map[string]any) []*nostr.Event {
	t.Helper()
	c.send("REQ", "q", filter)
	var out []*nostr.Event
	for {
		msg := c.next()
		switch str(t, msg[0]) {
		case "EVENT":
			var ev nostr.Event
			require.NoError(t, json.Unmarshal(msg[2], &ev))
			out = append(out, &ev)
		case "EOSE":
			c.send("CLOSE", "q")
			return out
		default:
			t.Fatalf("unexpected %s", join(msg))
		}
	}
}

// members returns the p tags of a 39002.
func members(ev *nostr.Event) []string {
	var out []string
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "p" {
			out = append(out, tag[1])
		}
	}
	return out
}

// TestGroupModeration drives one group through every supported moderation
// kind, the join and leave paths and the flags, with raw events, and checks
// each answer's NIP-01 prefix and the node-signed state that follows.
func TestGroupModeration(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, nil)
	c := dial(t, g.url)
	alice, bob, carol, dave, erin := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)

	// Creating a group takes a member of the community (default policy).
	c.refused(bob.signed(t, groups.KindCreateGroup, nostr.Tags{h("pizza")}, ""), "restricted: only members of this community")
	c.accepted(alice.note(t, "hello", nil))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("pizza")}, ""))
	c.refused(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("pizza")}, "again"), "duplicate: this group already exists")
	// The creator is admin at once: the 9002 apps send right after passes.
	c.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("pizza"), {"name", "Pizza Lovers"}, {"about", "pizza"}, {"picture", "https://x/p.png"}}, ""))
	meta := g.stateOf(t, c, groups.KindMetadata, "pizza")
	require.Contains(t, meta.Tags, nostr.Tag{"name", "Pizza Lovers"})
	require.Contains(t, meta.Tags, nostr.Tag{"open"})
	require.Equal(t, nostr.Tag{"p", alice.pk, "admin"}, g.stateOf(t, c, groups.KindAdmins, "pizza").Tags[1])
	require.Equal(t, []string{alice.pk}, members(g.stateOf(t, c, groups.KindMembers, "pizza")))
	require.Contains(t, g.stateOf(t, c, groups.KindRoles, "pizza").Tags[1][:2], "admin")

	// Open group: a join is honoured with the node's own 9000; again is duplicate.
	c.accepted(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("pizza")}, "hi"))
	put := g.query(t, c, map[string]any{"kinds": []int{groups.KindPutUser}, "#p": []string{bob.pk}, "authors": []string{g.node.PubKey}})
	require.Len(t, put, 1)
	require.Contains(t, members(g.stateOf(t, c, groups.KindMembers, "pizza")), bob.pk)
	c.refused(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("pizza")}, "again"), "duplicate: already a member")

	// Not restricted: anyone writes. Restricted and closed: members only, joins wait.
	c.accepted(carol.signed(t, 9, nostr.Tags{h("pizza")}, "outsider hello"))
	c.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("pizza"), {"name", "Pizza Lovers"}, {"restricted"}, {"closed"}}, ""))
	c.refused(carol.signed(t, 9, nostr.Tags{h("pizza")}, "outsider again"), "restricted: only members of this group")
	c.refused(carol.signed(t, groups.KindJoinRequest, nostr.Tags{h("pizza")}, "let me in"), "restricted: pending review")
	require.NotContains(t, members(g.stateOf(t, c, groups.KindMembers, "pizza")), carol.pk)
	// The pending request is kept where the admins can read it.
	require.Len(t, g.query(t, c, map[string]any{"kinds": []int{groups.KindJoinRequest}, "#h": []string{"pizza"}, "authors": []string{carol.pk}}), 1)

	// Invite codes: withheld from every reader; a valid one joins at once.
	c.accepted(alice.signed(t, groups.KindCreateInvite, nostr.Tags{h("pizza"), {"code", "s3cret"}}, ""))
	require.Regexp(t, "^auth-required: ", c.req("inv", map[string]any{"kinds": []int{groups.KindCreateInvite}}).closed,
		"invite codes are for the group's admins, who authenticate")
	c.accepted(dave.signed(t, groups.KindJoinRequest, nostr.Tags{h("pizza"), {"code", "s3cret"}}, ""))
	require.Empty(t, g.query(t, c, map[string]any{"kinds": []int{groups.KindJoinRequest}, "authors": []string{dave.pk}}), "a join with a code is withheld")
	c.refused(erin.signed(t, groups.KindJoinRequest, nostr.Tags{h("pizza"), {"code", "guess"}}, ""), "restricted: pending review: this invite code is unknown")
	require.ElementsMatch(t, []string{alice.pk, bob.pk, dave.pk}, members(g.stateOf(t, c, groups.KindMembers, "pizza")))

	// Roles: a member without roles moderates nothing; a moderator adds and
	// removes plain users and deletes events, never touches roles.
	c.refused(bob.signed(t, groups.KindPutUser, nostr.Tags{h("pizza"), {"p", carol.pk}}, ""), "restricted: your roles in this group do not allow adding users")
	c.accepted(alice.signed(t, groups.KindPutUser, nostr.Tags{h("pizza"), {"p", bob.pk, "moderator"}}, ""))
	require.Contains(t, g.stateOf(t, c, groups.KindAdmins, "pizza").Tags, nostr.Tag{"p", bob.pk, "moderator"})
	c.accepted(bob.signed(t, groups.KindPutUser, nostr.Tags{h("pizza"), {"p", carol.pk}}, "approved"))
	c.refused(bob.signed(t, groups.KindPutUser, nostr.Tags{h("pizza"), {"p", carol.pk, "admin"}}, ""), "restricted: your roles in this group do not allow giving")
	c.refused(bob.signed(t, groups.KindRemoveUser, nostr.Tags{h("pizza"), {"p", alice.pk}}, ""), "restricted: your roles in this group do not allow giving, changing or taking away roles")
	c.refused(bob.signed(t, groups.KindEditMetadata, nostr.Tags{h("pizza"), {"name", "mine"}}, ""), "restricted: your roles in this group do not allow editing")
	c.refused(bob.signed(t, groups.KindDeleteGroup, nostr.Tags{h("pizza")}, ""), "restricted: your roles in this group do not allow deleting the group")
	c.refused(bob.signed(t, groups.KindPutUser, nostr.Tags{h("pizza")}, ""), "invalid: name the user")

	// 9005: only events of this group, never its history.
	msg := dave.signed(t, 9, nostr.Tags{h("pizza")}, "spam")
	c.accepted(msg)
	outside := alice.note(t, "a topic post", nil)
	c.accepted(outside)
	c.refused(bob.signed(t, groups.KindDeleteEvent, nostr.Tags{h("pizza"), {"e", outside.ID}}, ""), "invalid: a delete-event needs e tags naming events of this group")
	c.refused(bob.signed(t, groups.KindDeleteEvent, nostr.Tags{h("pizza"), {"e", put[0].ID}}, ""), "invalid: group moderation")
	c.accepted(bob.signed(t, groups.KindDeleteEvent, nostr.Tags{h("pizza"), {"e", msg.ID}}, ""))
	require.Empty(t, g.query(t, c, map[string]any{"ids": []string{msg.ID}}))
	require.Len(t, g.query(t, c, map[string]any{"ids": []string{outside.ID}}), 1)

	// 9001 by a moderator of a plain member; 9022: the node's own 9001.
	c.accepted(bob.signed(t, groups.KindRemoveUser, nostr.Tags{h("pizza"), {"p", carol.pk}}, ""))
	c.accepted(dave.signed(t, groups.KindLeaveRequest, nostr.Tags{h("pizza")}, "bye"))
	require.Len(t, g.query(t, c, map[string]any{"kinds": []int{groups.KindRemoveUser}, "#p": []string{dave.pk}, "authors": []string{g.node.PubKey}}), 1)
	c.refused(dave.signed(t, groups.KindLeaveRequest, nostr.Tags{h("pizza")}, "bye again"), "restricted: not a member")
	require.ElementsMatch(t, []string{alice.pk, bob.pk}, members(g.stateOf(t, c, groups.KindMembers, "pizza")))

	// What this relay does not support yet is refused, never half done.
	c.refused(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("pizza"), {"parent", "food"}}, ""), "invalid: parent group \"food\" does not exist")
	c.refused(alice.signed(t, 9003, nostr.Tags{h("pizza")}, ""), "restricted: moderation kind 9003 is not supported")
	c.refused(alice.signed(t, groups.KindMetadata, nostr.Tags{{"d", "pizza"}, {"name", "forged"}}, ""), "restricted: group state")
	nodeForged := &nostr.Event{Kind: groups.KindMembers, CreatedAt: nostr.Now() + 100, Tags: nostr.Tags{{"d", "pizza"}}}
	require.NoError(t, g.node.Sign(nodeForged))
	c.refused(nodeForged, "restricted: group state")
	c.refused(alice.signed(t, 9, nostr.Tags{h("nowhere")}, ""), "restricted: unknown group")
	c.refused(alice.signed(t, 9, nostr.Tags{h("pizza"), h("other")}, ""), "invalid: an event belongs to one group")
	c.refused(alice.signed(t, groups.KindJoinRequest, nil, ""), "invalid: group moderation, join and leave events need an h tag")
	c.refused(alice.signed(t, 9, nostr.Tags{h("bad id!")}, ""), "invalid: a group id")

	// A reply without h does not enter the group.
	c.refused(carol.signed(t, 1, nostr.Tags{{"e", put[0].ID}}, "sneaky"), "restricted: missing topic")

	// 9008: the state events go (the node deletes them by address), nothing
	// more is accepted, and the id cannot come back.
	c.accepted(alice.signed(t, groups.KindDeleteGroup, nostr.Tags{h("pizza")}, ""))
	for _, k := range groups.StateKinds {
		require.Empty(t, g.query(t, c, map[string]any{"kinds": []int{k}, "#d": []string{"pizza"}}))
	}
	c.refused(alice.signed(t, 9, nostr.Tags{h("pizza")}, ""), "restricted: this group was deleted")
	c.refused(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("pizza")}, "once more"), "restricted: this group was deleted and its id cannot be used again")
}

// TestGroupScopeInOutbox: a group event's outbox rows carry the group's
// scope, and only it (its t tags are content).
func TestGroupScopeInOutbox(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) { p.Creators = groups.CreatorsAny })
	c := dial(t, g.url)
	alice := newKey(t)
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("ramen")}, ""))
	msg := alice.signed(t, 9, nostr.Tags{h("ramen"), {"t", "Noodles"}}, "shoyu")
	c.accepted(msg)
	rows, err := g.db.Pool.Query(context.Background(), `SELECT topic_id FROM cn_relay.events_outbox WHERE event_id = $1`, msg.ID)
	require.NoError(t, err)
	var topics []string
	for rows.Next() {
		var topic string
		require.NoError(t, rows.Scan(&topic))
		topics = append(topics, topic)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"GROUP:ramen"}, topics)
	// #t still matches the event's own t tag, and #h its group.
	require.Len(t, g.query(t, c, map[string]any{"#t": []string{"noodles"}}), 1)
	require.Len(t, g.query(t, c, map[string]any{"#h": []string{"ramen"}, "kinds": []int{9}}), 1)
	// NIP-11 lists 29 and names the key that signs the group state.
	var doc struct {
		Self string `json:"self"`
		NIPs []int  `json:"supported_nips"`
	}
	getNIP11(t, g.http, &doc)
	require.Equal(t, g.node.PubKey, doc.Self)
	require.Contains(t, doc.NIPs, 29)
}

// TestGroupsOffRefuses: a relay whose store hosts no groups refuses group
// events, instead of storing them as topic posts.
func TestGroupsOffRefuses(t *testing.T) {
	t.Parallel()
	tr, _ := startPGRelay(t, nil)
	c := dial(t, tr.url)
	alice := newKey(t)
	c.refused(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("x")}, ""), "restricted: this relay does not host NIP-29 groups")
	c.refused(alice.signed(t, 9, nostr.Tags{h("x"), {"t", "go"}}, ""), "restricted: this relay does not host NIP-29 groups")
	var doc struct {
		NIPs []int `json:"supported_nips"`
	}
	getNIP11(t, tr.http, &doc)
	require.NotContains(t, doc.NIPs, 29)
}

// getNIP11 reads the NIP-11 document at url into doc.
func getNIP11(t *testing.T, url string, doc any) {
	t.Helper()
	_, m := getInfo(t, url)
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, doc))
}
