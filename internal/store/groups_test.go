package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestGroupRebuildEqualsLive drives random group histories through Ingest
// (batches of several events, several groups, equal timestamps, late
// arrivals, refused events) and checks that the state the relay kept live
// equals the projection of the stored events (canonical dumps), and that the
// visible state events are the rendering of that state.
func TestGroupRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			randomGroupHistory(t, seed)
		})
	}
}

func randomGroupHistory(t *testing.T, seed uint64) {
	ctx := context.Background()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	st := New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
	require.NoError(t, st.SetGroups(Groups{Sign: node.Sign, Policy: groups.Policy{Node: node.PubKey, Creators: groups.CreatorsAny}}))
	rng := rand.New(rand.NewPCG(seed, 33))
	var sks, pks []string
	for range 8 {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		sks, pks = append(sks, sk), append(pks, pk)
	}
	ids := []string{"alpha", "beta", "gamma"}
	base := nostr.Now() - 600
	var posts []string // group messages stored, for 9005
	accepted := map[int]int{}
	for step := 0; step < 120; step++ {
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
			case r < 16:
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
			case r < 30:
				kind = groups.KindPutUser
				tags = append(tags, append(nostr.Tag{"p", p}, [][]string{nil, {"admin"}, {"moderator"}, {"x"}}[rng.IntN(4)]...))
			case r < 38:
				kind = groups.KindRemoveUser
				tags = append(tags, nostr.Tag{"p", p})
			case r < 55:
				kind = groups.KindJoinRequest
				if rng.IntN(2) == 0 {
					tags = append(tags, nostr.Tag{"code", fmt.Sprint("code-", rng.IntN(3))})
				}
			case r < 63:
				kind = groups.KindLeaveRequest
			case r < 71:
				kind = groups.KindCreateInvite
				tags = append(tags, nostr.Tag{"code", fmt.Sprint("code-", rng.IntN(3))})
			case r < 76 && len(posts) > 0:
				kind = groups.KindDeleteEvent
				tags = append(tags, nostr.Tag{"e", posts[rng.IntN(len(posts))]})
			case r < 78 && step > 100:
				kind = groups.KindDeleteGroup
			default:
				kind = 9
			}
			if kind == groups.KindCreateGroup || groups.IsModerationKind(kind) && rng.IntN(3) > 0 {
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
		res, err := st.Ingest(ctx, batch)
		require.NoError(t, err)
		for i, v := range res {
			if v.OK {
				accepted[batch[i].Kind]++
				if batch[i].Kind == 9 {
					posts = append(posts, batch[i].ID)
				}
			}
		}
	}
	// The history did something of every kind.
	for _, k := range []int{groups.KindCreateGroup, groups.KindEditMetadata, groups.KindPutUser, groups.KindRemoveUser,
		groups.KindJoinRequest, groups.KindLeaveRequest, groups.KindCreateInvite, groups.KindDeleteEvent, 9} {
		require.Positive(t, accepted[k], "no kind %d accepted: %v", k, accepted)
	}

	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	require.NotEmpty(t, live)
	stored, err := groups.Stored(ctx, db.Pool)
	require.NoError(t, err)
	rebuilt := groups.Project(stored)
	for _, id := range groups.Diff(live, rebuilt) {
		t.Errorf("group %s:\nlive    %s\nrebuilt %s", id, dump(live[id]), dump(rebuilt[id]))
	}

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
	checkGroupReadRule(t, st, live, pks)
}

func dump(s *groups.State) string {
	if s == nil {
		return "(none)"
	}
	return string(s.Dump())
}
