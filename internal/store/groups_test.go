package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// TestGroupRebuildEqualsLive drives random group histories through Ingest
// (batches of several events, several groups, equal timestamps, late
// arrivals, refused events) and checks that the state the relay kept live
// equals the projection of the stored events (canonical dumps), and that the
// visible state events are the rendering of that state.
func TestGroupRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	total := map[string]int{}
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				t.Parallel()
				tally := randomGroupHistory(t, seed)
				mu.Lock()
				defer mu.Unlock()
				for k, v := range tally {
					total[k] += v
				}
			})
		}
	})
	// The histories made every subgroup move (ids and signatures are random,
	// so one seed alone may miss one).
	// (and deleted some group: its group_access row is checked).
	for _, what := range []string{"parent set", "detached", "reordered", "parent deleted", "deleted"} {
		require.Positive(t, total[what], "the histories never %s: %v", what, total)
	}
}

// randomGroupHistory ingests a random history of groups and checks that
// Project over the stored events equals the live states and that the visible
// state events render them; it returns how many subgroup moves it made.
func randomGroupHistory(t *testing.T, seed uint64) map[string]int {
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{})
	rng := rand.New(rand.NewPCG(seed, 33))
	var sks, pks []string
	for range 8 {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		sks, pks = append(sks, sk), append(pks, pk)
	}
	ids := []string{"alpha", "beta", "gamma", "delta", "eps"}
	tally := map[string]int{} // subgroup moves the history made
	base := nostr.Now() - 600
	var posts []string // group messages stored, for 9005
	accepted := map[int]int{}
	for step := 0; step < 240; step++ {
		live, err := groups.Live(ctx, db.Pool) // what clients read (39000) before they edit
		require.NoError(t, err)
		var batch []*nostr.Event
		for range 1 + rng.IntN(6) {
			author := rng.IntN(len(sks))
			id := ids[rng.IntN(len(ids))]
			if rng.IntN(4) == 0 {
				id = ids[0] // most action in one group
			}
			h := nostr.Tag{"h", id}
			p := pks[rng.IntN(len(pks))]
			var kind int
			tags := nostr.Tags{h}
			switch r := rng.IntN(100); {
			case r < 6:
				kind = groups.KindCreateGroup
			case r < 28:
				kind = groups.KindEditMetadata
				tags = append(tags, nostr.Tag{"name", fmt.Sprint("name-", rng.IntN(5))})
				if rng.IntN(2) == 0 {
					tags = append(tags, nostr.Tag{"closed"})
				}
				if rng.IntN(3) == 0 {
					tags = append(tags, nostr.Tag{"restricted"})
				}
				for _, flag := range []string{"private", "hidden"} {
					if rng.IntN(3) == 0 {
						tags = append(tags, nostr.Tag{flag})
					}
				}
				// Subgroups: a parent half the time (any group, itself
				// included: cycles are refused), and the group's children
				// as its 39000 lists them, shuffled (a reorder), mostly.
				if r := rng.IntN(10); r < 7 {
					tags = append(tags, nostr.Tag{"parent", ids[r%2]}) // mostly under the first two
				} else if r == 7 {
					tags = append(tags, nostr.Tag{"parent", id})
				}
				if s := live[id]; s != nil && rng.IntN(6) > 0 {
					kids := slices.Clone(s.Tree.Children)
					rng.Shuffle(len(kids), func(i, j int) { kids[i], kids[j] = kids[j], kids[i] })
					for _, k := range kids {
						tags = append(tags, nostr.Tag{"child", k})
					}
				}
			case r < 40:
				kind = groups.KindPutUser
				tags = append(tags, append(nostr.Tag{"p", p}, [][]string{nil, {"admin"}, {"moderator"}, {"x"}}[rng.IntN(4)]...))
			case r < 46:
				kind = groups.KindRemoveUser
				tags = append(tags, nostr.Tag{"p", p})
			case r < 60:
				kind = groups.KindJoinRequest
				if rng.IntN(2) == 0 {
					tags = append(tags, nostr.Tag{"code", fmt.Sprint("code-", rng.IntN(3))})
				}
			case r < 66:
				kind = groups.KindLeaveRequest
			case r < 72:
				kind = groups.KindCreateInvite
				tags = append(tags, nostr.Tag{"code", fmt.Sprint("code-", rng.IntN(3))})
			case r < 77 && len(posts) > 0:
				kind = groups.KindDeleteEvent
				tags = append(tags, nostr.Tag{"e", posts[rng.IntN(len(posts))]})
			case r < 83 && step > 170:
				kind = groups.KindDeleteGroup
			case r < 87 && len(posts) > 0:
				kind = groups.KindPins
				for range rng.IntN(4) {
					tags = append(tags, nostr.Tag{"e", posts[rng.IntN(len(posts))]})
				}
			default:
				kind = 9
			}
			if kind == groups.KindDeleteGroup && rng.IntN(2) == 0 {
				for _, pid := range ids { // a parent, when there is one
					if s := live[pid]; s != nil && len(s.Tree.Children) > 0 {
						id, tags = pid, nostr.Tags{{"h", pid}}
						break
					}
				}
			}
			if step < len(ids) { // every group exists early, created by the owner
				kind, id, tags = groups.KindCreateGroup, ids[step], nostr.Tags{{"h", ids[step]}}
			}
			if kind == groups.KindCreateGroup || groups.IsModerationKind(kind) && rng.IntN(5) > 0 {
				author = 0 // the owner, who creates most groups: most moderation is authorised
			}
			// created_at: mostly rising, often equal, sometimes late.
			at := base + nostr.Timestamp(step*2+rng.IntN(3))
			if rng.IntN(8) == 0 {
				at -= nostr.Timestamp(rng.IntN(60))
			}
			ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: fmt.Sprint(step, rng.Int())}
			require.NoError(t, ev.Sign(sks[author]))
			batch = append(batch, ev)
		}
		if step == 200 || step == 220 { // the node (master of every group) deletes a parent, if there is one
			for _, pid := range ids {
				if s := live[pid]; s != nil && len(s.Tree.Children) > 0 {
					ev := &nostr.Event{Kind: groups.KindDeleteGroup, CreatedAt: base + nostr.Timestamp(step*2), Tags: nostr.Tags{{"h", pid}}}
					require.NoError(t, node.Sign(ev))
					batch = append(batch, ev)
					break
				}
			}
		}
		res, err := st.Ingest(ctx, batch)
		require.NoError(t, err)
		// After every batch, not only at the end: a difference that a later
		// event happens to undo counts too.
		requireProjectEqualsLive(t, db)
		for i, v := range res {
			if v.OK {
				ev := batch[i]
				accepted[ev.Kind]++
				id, _ := protocol.GroupTag(ev)
				before := live[id]
				switch {
				case ev.Kind == groups.KindEditMetadata && ev.Tags.GetFirst([]string{"parent"}) != nil:
					tally["parent set"]++
				case ev.Kind == groups.KindEditMetadata && before != nil && before.Meta.Parent != "":
					tally["detached"]++
				case ev.Kind == groups.KindDeleteGroup && before != nil && len(before.Tree.Children) > 0:
					tally["parent deleted"]++
				}
				if ev.Kind == groups.KindEditMetadata && len(ev.Tags.GetAll([]string{"child"})) > 1 {
					tally["reordered"]++
				}
				if batch[i].Kind == 9 {
					posts = append(posts, batch[i].ID)
				}
			}
		}
	}
	// The history did something of every kind.
	for _, k := range []int{groups.KindCreateGroup, groups.KindEditMetadata, groups.KindPutUser, groups.KindRemoveUser,
		groups.KindJoinRequest, groups.KindLeaveRequest, groups.KindCreateInvite, groups.KindDeleteEvent, groups.KindPins, 9} {
		require.Positive(t, accepted[k], "no kind %d accepted: %v", k, accepted)
	}
	t.Logf("accepted %v, subgroups %v", accepted, tally)

	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	require.NotEmpty(t, live)
	stored, err := groups.Stored(ctx, db.Pool)
	require.NoError(t, err)
	rebuilt := groups.Project(stored)
	for _, id := range groups.Diff(live, rebuilt) {
		t.Errorf("group %s:\nlive    %s\nrebuilt %s", id, dump(live[id]), dump(rebuilt[id]))
	}

	// The metrics' counts, made in the database, are the live states' (groups.CountsOf).
	counts, err := groups.CountLive(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, groups.CountsOf(live), counts)

	// The visible state events are the rendering of the live state.
	for id, s := range live {
		for i, want := range groups.Render(s) {
			evs, _, err := st.QuerySnapshot(ctx, []nostr.Filter{{Kinds: []int{want.Kind}, Authors: []string{node.PubKey},
				Tags: nostr.TagMap{"d": {id}}}}, protocol.Viewer{AllGroups: true})
			require.NoError(t, err)
			if !s.Exists() {
				require.Empty(t, evs, "group %s was deleted", id)
				continue
			}
			require.Len(t, evs, 1, "group %s kind %d", id, want.Kind)
			require.True(t, slices.EqualFunc(want.Tags, evs[0].Tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) }),
				"group %s state event %d:\nwant %v\ngot  %v", id, i, want.Tags, evs[0].Tags)
		}
	}
	tally["deleted"] += checkGroupReadRule(t, st, live, pks)
	return tally
}

// requireProjectEqualsLive: Project over the stored events gives the live states.
func requireProjectEqualsLive(t *testing.T, db *pgtest.DB) {
	t.Helper()
	ctx := context.Background()
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	stored, err := groups.Stored(ctx, db.Pool)
	require.NoError(t, err)
	rebuilt := groups.Project(stored)
	for _, id := range groups.Diff(live, rebuilt) {
		require.Failf(t, "rebuild differs from live", "group %s:\nlive    %s\nrebuilt %s", id, dump(live[id]), dump(rebuilt[id]))
	}
}

// TestGroupMigrationDeleted: migration 0032 gives the groups deleted before
// it the row of cn_relay.group_access that groups.Access derives now (read
// by no one), whatever row they had (none for a public group, its members'
// for a private one), and leaves the others alone.
func TestGroupMigrationDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{})
	at := nostr.Now()
	for i, ev := range []*nostr.Event{
		{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "gone"}}},
		{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "gonepriv"}}},
		{Kind: groups.KindEditMetadata, Tags: nostr.Tags{{"h", "gonepriv"}, {"private"}}},
		{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "priv"}}},
		{Kind: groups.KindEditMetadata, Tags: nostr.Tags{{"h", "priv"}, {"private"}, {"hidden"}}},
		{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "open"}}},
		{Kind: groups.KindDeleteGroup, Tags: nostr.Tags{{"h", "gone"}}},
		{Kind: groups.KindDeleteGroup, Tags: nostr.Tags{{"h", "gonepriv"}}},
	} {
		ev.CreatedAt = at + nostr.Timestamp(i)
		require.NoError(t, node.Sign(ev))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, "%d: %s", i, res[0].Message)
	}
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	want := map[string]protocol.GroupRule{}
	for id, s := range live {
		if r, ok := groups.Access(s); ok {
			want[id] = r
		}
	}
	require.Len(t, want, 3, "gone, gonepriv and priv have rows")
	require.True(t, want["gone"].Deleted && want["gonepriv"].Deleted && !want["priv"].Deleted)

	// As before 0032: no deleted column; a deleted public group had no row,
	// a deleted private one its members as readers.
	_, err = db.Pool.Exec(ctx, `ALTER TABLE cn_relay.group_access DROP COLUMN deleted`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `DELETE FROM cn_relay.group_access WHERE scope = 'GROUP:gone'`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `UPDATE cn_relay.group_access SET private = true, hidden = false, readers = $1
		WHERE scope = 'GROUP:gonepriv'`, []string{node.PubKey})
	require.NoError(t, err)
	sql := migrationSQL(t, 32)
	_, err = db.Pool.Exec(ctx, sql)
	require.NoError(t, err)

	rules, err := st.GroupAccess(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, rules, "group_access after 0032 is what groups.Access derives")
	requireProjectEqualsLive(t, db)
}

func dump(s *groups.State) string {
	if s == nil {
		return "(none)"
	}
	return string(s.Dump())
}

// TestGroupTreeConcurrent: concurrent batches that move groups under each
// other (each one alone would be fine, together some would make a cycle),
// delete them, and post and add members meanwhile, neither deadlock nor
// fail, never make a cycle, and leave states a rebuild equals
// (schema.GroupTreeLock).
func TestGroupTreeConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	st := New(db.Pool, w, protocol.DefaultTopicRules())
	require.NoError(t, st.SetGroups(Groups{Sign: node.Sign, Policy: groups.Policy{Node: node.PubKey, Creators: groups.CreatorsAny}}))
	ids := []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"}
	sign := func(kind int, tags ...nostr.Tag) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: fmt.Sprint(rand.Int())}
		require.NoError(t, node.Sign(ev))
		return ev
	}
	for _, id := range ids {
		res, err := st.Ingest(ctx, []*nostr.Event{sign(groups.KindCreateGroup, nostr.Tag{"h", id})})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved := 0
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 25 {
				live, err := groups.Live(ctx, db.Pool)
				if !assert(t, err == nil, "live: %v", err) {
					return
				}
				id, parent := ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]
				tags := nostr.Tags{{"h", id}, {"parent", parent}}
				for _, k := range live[id].Tree.Children {
					tags = append(tags, nostr.Tag{"child", k})
				}
				batch := []*nostr.Event{sign(groups.KindEditMetadata, tags...),
					sign(9, nostr.Tag{"h", ids[rng.IntN(len(ids))]}),
					sign(groups.KindPutUser, nostr.Tag{"h", ids[rng.IntN(len(ids))]}, nostr.Tag{"p", node.PubKey})}
				if rng.IntN(40) == 0 {
					batch = append(batch, sign(groups.KindDeleteGroup, nostr.Tag{"h", ids[rng.IntN(len(ids))]}))
				}
				res, err := st.ingestOnce(ctx, batch, false) // not Ingest: it would retry a deadlock
				if !assert(t, err == nil, "ingest: %v", err) {
					return
				}
				if res[0].OK {
					mu.Lock()
					moved++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Positive(t, moved)
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	f := groups.Forest(live)
	for id := range live {
		seen := map[string]bool{}
		for p := id; p != ""; p = f.Parent(p) {
			require.False(t, seen[p], "cycle through %s", id)
			seen[p] = true
		}
	}
	requireProjectEqualsLive(t, db)
	t.Logf("%d moves accepted", moved)
}

// assert reports a failure from a goroutine (no FailNow there) and returns ok.
func assert(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

// TestGroupMigrationParents: migration 0025 gives the states of groups made
// before it (no 9002 log) the log a rebuild computes.
func TestGroupMigrationParents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{})
	at := nostr.Now()
	for i, tags := range []nostr.Tags{{{"h", "a"}}, {{"h", "b"}}, {{"h", "a"}, {"name", "A"}}, {{"h", "a"}, {"name", "A2"}}, {{"h", "b"}, {"name", "B"}}} {
		kind := groups.KindEditMetadata
		if len(tags) == 1 {
			kind = groups.KindCreateGroup
		}
		evs := []*nostr.Event{{Kind: kind, CreatedAt: at, Tags: tags, Content: fmt.Sprint(i)}}
		require.NoError(t, node.Sign(evs[0]))
		if i == 3 { // two in one batch at one second: the tie of ids
			evs = append(evs, &nostr.Event{Kind: kind, CreatedAt: at, Tags: nostr.Tags{{"h", "a"}, {"name", "A3"}}})
			require.NoError(t, node.Sign(evs[1]))
		}
		_, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
	}
	_, err := db.Pool.Exec(ctx, `UPDATE cn_relay.groups SET state = state - 'parents'`) // as before 0025
	require.NoError(t, err)
	sql := migrationSQL(t, 25)
	_, err = db.Pool.Exec(ctx, `DROP INDEX cn_relay.groups_parent`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, sql)
	require.NoError(t, err)
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	// A, A2, and A3 if its id is the lower of the two in its batch (else it
	// was refused as stale).
	require.GreaterOrEqual(t, len(live["a"].Parents), 2)
	requireProjectEqualsLive(t, db)
}

// TestGroupMigrationUsers: migration 0036 moves each group's user registers
// (members, join requests) out of its state into cn_relay.group_users, and
// cn_relay.group_state gives back exactly the state as it was.
func TestGroupMigrationUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{})
	other, asking := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pkOther, _ := nostr.GetPublicKey(other)
	at := nostr.Now()
	for i, e := range []struct {
		sk string
		ev *nostr.Event
	}{
		{"", &nostr.Event{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "club"}}}},
		{"", &nostr.Event{Kind: groups.KindEditMetadata, Tags: nostr.Tags{{"h", "club"}, {"closed"}}}},
		{"", &nostr.Event{Kind: groups.KindPutUser, Tags: nostr.Tags{{"h", "club"}, {"p", pkOther, "moderator"}}}},
		{asking, &nostr.Event{Kind: groups.KindJoinRequest, Tags: nostr.Tags{{"h", "club"}}}},
		{"", &nostr.Event{Kind: groups.KindCreateGroup, Tags: nostr.Tags{{"h", "empty"}}}},
	} {
		e.ev.CreatedAt = at + nostr.Timestamp(i)
		if e.sk == "" {
			require.NoError(t, node.Sign(e.ev))
		} else {
			require.NoError(t, e.ev.Sign(e.sk))
		}
		res, err := st.Ingest(ctx, []*nostr.Event{e.ev})
		require.NoError(t, err)
		if e.ev.Kind == groups.KindJoinRequest {
			require.Equal(t, groups.ReasonPending, res[0].Message) // kept for the admins
			continue
		}
		require.True(t, res[0].OK, "%d: %s", i, res[0].Message)
	}
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	require.Len(t, live["club"].Members, 2, "the node (creator) and the moderator")
	require.Len(t, live["club"].Requests, 1)

	// As before 0036: the registers in the state, no users table, no function.
	_, err = db.Pool.Exec(ctx, `DROP FUNCTION cn_relay.group_state(cn_relay.groups)`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `DROP TABLE cn_relay.group_users`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `DROP INDEX cn_relay.groups_list_due`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `ALTER TABLE cn_relay.groups DROP COLUMN list_due`)
	require.NoError(t, err)
	for id, s := range live {
		_, err = db.Pool.Exec(ctx, `UPDATE cn_relay.groups SET state = $2 WHERE id = $1`, id, s.Dump())
		require.NoError(t, err)
	}
	sql := migrationSQL(t, 36)
	_, err = db.Pool.Exec(ctx, sql)
	require.NoError(t, err)

	after, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, len(live), len(after))
	for id, s := range live {
		require.Equal(t, dump(s), dump(after[id]), "group %s after 0036", id)
	}
	var users, withRegisters int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM cn_relay.group_users),
		(SELECT count(*) FROM cn_relay.groups WHERE state ? 'members' OR state ? 'requests')`).Scan(&users, &withRegisters))
	require.Equal(t, 4, users, "club: its creator, the moderator, the asking key; empty: its creator")
	require.Zero(t, withRegisters)
	requireProjectEqualsLive(t, db)
}

// migrationSQL returns the SQL of migration version.
func migrationSQL(t *testing.T, version int) string {
	t.Helper()
	migrations, err := schema.Migrations()
	require.NoError(t, err)
	for _, m := range migrations {
		if m.Version == version {
			return m.SQL
		}
	}
	t.Fatalf("no migration %d", version)
	return ""
}
