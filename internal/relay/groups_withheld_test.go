package relay

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/store"
)

// TestGroupWithheldReaders: invite codes (9009) and join requests with a
// code (9021), which no shared read path returns, are read with REQ, stored
// and live, by exactly those NIP-29 lets see them: the group's admins and
// moderators (create-invite for 9009, put-user for a coded 9021), a relay
// admin, and a coded 9021's own author; a plain member, an outsider and an
// anonymous reader get none of them (REQ and COUNT), nor does an admin
// once removed.
func TestGroupWithheldReaders(t *testing.T) {
	t.Parallel()
	tr, relayAdmin := startWithheldRelay(t, nil)
	authed := func(k key) *client {
		c := dial(t, tr.url)
		c.authAs(k, tr.url)
		return c
	}

	alice, mod, bob, carol, dave, erin, frank := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	ac := authed(alice)
	ac.accepted(alice.note(t, "hello", nil))
	ac.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("g")}, ""))
	ac.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("g"), {"name", "G"}, {"closed"}}, ""))
	ac.accepted(alice.signed(t, groups.KindPutUser, nostr.Tags{h("g"), {"p", mod.pk, "moderator"}}, ""))
	ac.accepted(alice.signed(t, groups.KindPutUser, nostr.Tags{h("g"), {"p", bob.pk}}, ""))

	invites := map[string]any{"kinds": []int{groups.KindCreateInvite}, "#h": []string{"g"}}
	joins := map[string]any{"kinds": []int{groups.KindJoinRequest}, "#h": []string{"g"}}
	readers := map[string]*client{"admin": ac, "moderator": authed(mod), "member": authed(bob), "outsider": authed(carol),
		"joiner": authed(dave), "relay admin": authed(relayAdmin), "anonymous": dial(t, tr.url)}
	// Live subscriptions opened before anything is withheld.
	live := map[string]*client{}
	for name := range readers {
		c := dial(t, tr.url)
		if k, ok := map[string]key{"admin": alice, "moderator": mod, "member": bob, "outsider": carol, "joiner": dave,
			"relay admin": relayAdmin}[name]; ok {
			c.authAs(k, tr.url)
		}
		c.send("REQ", "live", map[string]any{"kinds": []int{groups.KindJoinRequest, groups.KindCreateInvite}, "#h": []string{"g"}, "limit": 0})
		if name == "anonymous" {
			require.Regexp(t, "^auth-required: ", c.closed("live"))
			c.send("REQ", "live", map[string]any{"kinds": []int{groups.KindJoinRequest}, "#h": []string{"g"}, "limit": 0})
		}
		c.eose("live")
		live[name] = c
	}

	now := nostr.Now()
	inv1 := alice.signedAt(t, groups.KindCreateInvite, now-60, nostr.Tags{h("g"), {"code", "first"}}, "")
	ac.accepted(inv1)
	inv2 := mod.signedAt(t, groups.KindCreateInvite, now-50, nostr.Tags{h("g"), {"code", "second"}}, "")
	authed(mod).accepted(inv2)
	// A valid code joins at once; a wrong one waits for the admins; a join
	// without a code is an ordinary (stored, shared) pending request.
	daveJoin := dave.signedAt(t, groups.KindJoinRequest, now-40, nostr.Tags{h("g"), {"code", "first"}}, "")
	readers["joiner"].accepted(daveJoin)
	erinJoin := erin.signedAt(t, groups.KindJoinRequest, now-30, nostr.Tags{h("g"), {"code", "guess"}}, "")
	authed(erin).refused(erinJoin, "restricted: pending review: this invite code is unknown")
	plainJoin := frank.signedAt(t, groups.KindJoinRequest, now-20, nostr.Tags{h("g")}, "")
	authed(frank).refused(plainJoin, "restricted: pending review: this group is closed")

	// Live: the withheld events came before the fence (the plain join,
	// delivered through the outbox), to those allowed only.
	wantLive := map[string][]string{
		"admin":       {inv1.ID, inv2.ID, daveJoin.ID, erinJoin.ID},
		"moderator":   {inv1.ID, inv2.ID, daveJoin.ID, erinJoin.ID},
		"relay admin": {inv1.ID, inv2.ID, daveJoin.ID, erinJoin.ID},
		"joiner":      {daveJoin.ID},
	}
	for name, c := range live {
		var got []string
		for {
			ev := c.event("live")
			if ev.ID == plainJoin.ID {
				break
			}
			got = append(got, ev.ID)
		}
		require.Equal(t, wantLive[name], got, "%s: live", name)
	}

	// Stored: the same readers, newest first, limits honoured.
	wantInvites := map[string][]string{"admin": {inv2.ID, inv1.ID}, "moderator": {inv2.ID, inv1.ID}, "relay admin": {inv2.ID, inv1.ID}}
	wantJoins := map[string][]string{
		"admin":       {plainJoin.ID, erinJoin.ID, daveJoin.ID},
		"moderator":   {plainJoin.ID, erinJoin.ID, daveJoin.ID},
		"relay admin": {plainJoin.ID, erinJoin.ID, daveJoin.ID},
		"joiner":      {plainJoin.ID, daveJoin.ID},
		"member":      {plainJoin.ID}, "outsider": {plainJoin.ID}, "anonymous": {plainJoin.ID},
	}
	for name, c := range readers {
		res := c.req("inv", invites)
		if name == "anonymous" {
			require.Regexp(t, "^auth-required: ", res.closed, "anonymous REQ for invite codes")
			n, reason := c.count("n", invites)
			require.Equal(t, -1, n)
			require.Regexp(t, "^auth-required: ", reason)
		} else {
			require.Empty(t, res.closed)
			require.Equal(t, wantInvites[name], res.ids, "%s: invites", name)
			// COUNT answers for the shared set only (docs/groups.md).
			n, reason := c.count("n", invites)
			require.Empty(t, reason)
			require.Zero(t, n, "%s: COUNT of invites", name)
		}
		require.Equal(t, wantJoins[name], c.req("j", joins).ids, "%s: join requests", name)
		// Other ways in: by author, by id, without kinds; never a search.
		require.Empty(t, c.req("a", map[string]any{"authors": []string{alice.pk, mod.pk}, "kinds": []int{groups.KindCreateInvite}}).ids,
			"%s: without #h", name)
		byID := c.req("id", map[string]any{"ids": []string{inv1.ID, erinJoin.ID}, "#h": []string{"g"}}).ids
		switch name {
		case "admin", "moderator", "relay admin":
			require.Equal(t, []string{erinJoin.ID, inv1.ID}, byID, name)
		default:
			require.Empty(t, byID, name)
		}
		require.Empty(t, c.req("s", map[string]any{"search": "first", "#h": []string{"g"}}).ids, "%s: search", name)
	}
	// Limits count stored and withheld events together.
	require.Equal(t, []string{inv2.ID}, ac.req("l", map[string]any{"kinds": []int{groups.KindCreateInvite}, "#h": []string{"g"}, "limit": 1}).ids)
	require.Equal(t, []string{plainJoin.ID, erinJoin.ID}, ac.req("l", map[string]any{"kinds": []int{groups.KindJoinRequest}, "#h": []string{"g"}, "limit": 2}).ids)
	require.Equal(t, []string{erinJoin.ID}, ac.req("l", map[string]any{"kinds": []int{groups.KindJoinRequest}, "#h": []string{"g"}, "until": int64(now - 25), "limit": 1}).ids)
	require.Equal(t, []string{daveJoin.ID, inv2.ID}, ac.req("l", map[string]any{"#h": []string{"g"}, "authors": []string{mod.pk, dave.pk}, "since": int64(now - 55), "kinds": []int{groups.KindCreateInvite, groups.KindJoinRequest}}).ids)

	// Removed, the admin reads none of them, stored or live.
	adminLive := authed(alice)
	adminLive.send("REQ", "live", invites)
	require.Equal(t, inv2.ID, adminLive.event("live").ID)
	adminLive.event("live")
	adminLive.eose("live")
	authed(relayAdmin).accepted(relayAdmin.signed(t, groups.KindRemoveUser, nostr.Tags{h("g"), {"p", alice.pk}}, ""))
	require.Empty(t, ac.req("inv", invites).ids, "removed admin")
	require.Equal(t, []string{plainJoin.ID}, ac.req("j", joins).ids, "removed admin")
	inv3 := mod.signed(t, groups.KindCreateInvite, nostr.Tags{h("g"), {"code", "third"}}, "")
	modLive := authed(mod)
	modLive.send("REQ", "live", map[string]any{"kinds": []int{groups.KindCreateInvite}, "#h": []string{"g"}, "limit": 0})
	modLive.eose("live")
	authed(mod).accepted(inv3)
	require.Equal(t, inv3.ID, modLive.event("live").ID, "the moderator gets it live")
	adminLive.send("REQ", "fence", map[string]any{"ids": []string{plainJoin.ID}})
	msg := adminLive.next()
	require.Equal(t, `"fence"`, string(msg[1]), "the removed admin gets no invite live: %s", join(msg))

	// A private group's rule applies on top: its moderator reads the codes;
	// a requester who is no member does not read even their own request
	// (as for one without a code), one who joined does.
	authed(relayAdmin).accepted(relayAdmin.signed(t, groups.KindEditMetadata, nostr.Tags{h("g"), {"name", "G"}, {"closed"}, {"private"}}, ""))
	require.Equal(t, []string{inv3.ID, inv2.ID, inv1.ID}, authed(mod).req("inv", invites).ids)
	require.Equal(t, []string{plainJoin.ID, erinJoin.ID, daveJoin.ID}, authed(mod).req("j", joins).ids)
	require.Regexp(t, "^restricted: ", authed(erin).req("j", joins).closed)
	require.Empty(t, authed(erin).req("j", map[string]any{"kinds": []int{groups.KindJoinRequest}, "authors": []string{erin.pk}, "#h": []string{"g"}}).ids)
	require.Equal(t, []string{plainJoin.ID, daveJoin.ID}, authed(dave).req("j", joins).ids, "a member: the shared requests and their own")

	// A deleted group is read by relay admins and the node only, its
	// withheld events too.
	authed(relayAdmin).accepted(relayAdmin.signed(t, groups.KindDeleteGroup, nostr.Tags{h("g")}, ""))
	require.Empty(t, authed(mod).req("inv", invites).ids, "the moderator of a deleted group")
	require.Empty(t, authed(dave).req("j", joins).ids, "the joiner of a deleted group")
	require.Equal(t, []string{inv3.ID, inv2.ID, inv1.ID}, authed(relayAdmin).req("inv", invites).ids)
}

// startWithheldRelay serves a relay on Postgres that hosts NIP-29 groups,
// with a relay admin, and withheld events read through wrap(store) (nil: the
// store).
func startWithheldRelay(t *testing.T, wrap func(pgStore, *Relay) WithheldStore) (*testRelay, key) {
	t.Helper()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	relayAdmin := newKey(t)
	cfg := testConfig()
	cfg.Info.Self, cfg.Groups, cfg.GroupAdmins = node.PubKey, true, []string{relayAdmin.pk}
	st := pgStore{store.New(db.Pool, startWriter(t, db), cfg.Limits.TopicRules)}
	require.NoError(t, st.SetGroups(store.Groups{Sign: node.Sign,
		Policy: groups.Policy{Node: node.PubKey, Creators: groups.CreatorsMembers, Admins: map[string]bool{relayAdmin.pk: true}}}))
	deps := Deps{Store: st,
		Feed: NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry()}
	r, err := New(cfg, WithEventCache(cfg, deps))
	require.NoError(t, err)
	if wrap != nil {
		r.withheld = wrap(st, r)
	}
	return serveRelay(t, r), relayAdmin
}

// hookedWithheld runs before ahead of each read of withheld events.
type hookedWithheld struct {
	pgStore
	before func()
}

func (h hookedWithheld) GroupWithheld(ctx context.Context, f nostr.Filter, r groups.WithheldReader) ([]*nostr.Event, error) {
	h.before()
	return h.pgStore.GroupWithheld(ctx, f, r)
}

// TestGroupWithheldOnce: an invite code committed after a subscription was
// filed and before its stored part read the withheld events is both read and
// delivered live (held until EOSE, or after it); the client gets it once.
func TestGroupWithheldOnce(t *testing.T) {
	t.Parallel()
	var pending atomic.Pointer[nostr.Event] // the invite the next read commits first
	var late atomic.Bool                    // ... and delivers live only after EOSE (the test does)
	hookErr := make(chan error, 1)
	alice := newKey(t)
	tr, _ := startWithheldRelay(t, func(st pgStore, r *Relay) WithheldStore {
		return hookedWithheld{pgStore: st, before: func() {
			inv := pending.Swap(nil)
			if inv == nil {
				return
			}
			// What the relay does with an EVENT it withholds (messages.go
			// onEvent): ingest, then live delivery.
			res, err := st.Ingest(context.Background(), []*nostr.Event{inv})
			if err == nil && !res[0].Withheld {
				err = fmt.Errorf("not withheld: %+v", res[0])
			}
			if err == nil && !late.Load() {
				r.fanoutWithheld(context.Background(), inv)
			}
			hookErr <- err
		}}
	})
	c := dial(t, tr.url)
	c.authAs(alice, tr.url)
	c.accepted(alice.note(t, "hello", nil))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("g")}, ""))
	inv := alice.signed(t, groups.KindCreateInvite, nostr.Tags{h("g"), {"code", "once"}}, "")
	pending.Store(inv)
	c.send("REQ", "s", map[string]any{"kinds": []int{groups.KindCreateInvite}, "#h": []string{"g"}})
	require.Equal(t, inv.ID, c.event("s").ID)
	c.eose("s")
	require.NoError(t, <-hookErr)
	// The live delivery comes after EOSE (a slow ingest reply): skipped too.
	c.send("CLOSE", "s")
	late.Store(true)
	inv2 := alice.signed(t, groups.KindCreateInvite, nostr.Tags{h("g"), {"code", "twice"}}, "")
	pending.Store(inv2)
	c.send("REQ", "s2", map[string]any{"kinds": []int{groups.KindCreateInvite}, "#h": []string{"g"}})
	require.ElementsMatch(t, []string{inv.ID, inv2.ID}, []string{c.event("s2").ID, c.event("s2").ID})
	c.eose("s2")
	require.NoError(t, <-hookErr)
	tr.Relay.fanoutWithheld(context.Background(), inv2)
	fence := alice.signed(t, 9, nostr.Tags{h("g")}, "fence")
	c.accepted(fence)
	c.send("REQ", "fence", map[string]any{"ids": []string{fence.ID}})
	msg := c.next()
	require.Equal(t, `"fence"`, string(msg[1]), "no second copy: %s", join(msg))
}
