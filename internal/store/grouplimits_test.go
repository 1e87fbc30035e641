package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// groupStore returns a store hosting groups with limits lim on db, and the node key.
func groupStore(t *testing.T, db *pgtest.DB, node nodekey.Key, lim groups.Limits) *Store {
	t.Helper()
	return groupsStore(t, db, node, groups.Policy{Limits: lim})
}

// groupsHost returns a new node key and a store on db hosting groups under
// pol, whose Node is the key (Creators: any, unless pol says).
func groupsHost(t *testing.T, db *pgtest.DB, pol groups.Policy) (nodekey.Key, *Store) {
	t.Helper()
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	return node, groupsStore(t, db, node, pol)
}

func groupsStore(t *testing.T, db *pgtest.DB, node nodekey.Key, pol groups.Policy) *Store {
	t.Helper()
	st := New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
	pol.Node = node.PubKey
	if pol.Creators == "" {
		pol.Creators = groups.CreatorsAny
	}
	require.NoError(t, st.SetGroups(Groups{Sign: node.Sign, Policy: pol}))
	return st
}

// TestHostileGroupsPerKeyStored: the groups a key created are counted from
// the stored states, so the bound holds within a batch, after a restart (a
// new store) and across relay processes creating at once (two stores).
func TestHostileGroupsPerKeyStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	create := func(id string) *nostr.Event {
		ev := &nostr.Event{Kind: groups.KindCreateGroup, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", id}}, Content: fmt.Sprint(rand.Int())}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	created := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.groups WHERE state ->> 'creator' = $1`, pk).Scan(&n))
		return n
	}

	// One batch of five: three a day.
	st := groupStore(t, db, node, groups.Limits{CreatedPerDay: 3, CreatedInAll: 4})
	var batch []*nostr.Event
	for i := range 5 {
		batch = append(batch, create(fmt.Sprint("a", i)))
	}
	res, err := st.Ingest(ctx, batch)
	require.NoError(t, err)
	for i, v := range res {
		if i < 3 {
			require.True(t, v.OK, v.Message)
		} else {
			require.Equal(t, protocol.Verdict{Message: groups.ReasonCreatedPerDay(3), Code: groups.CodeCreatedPerDay}, v)
		}
	}
	require.Equal(t, 3, created())

	// A restart with a higher daily bound: the fourth in all, then no more.
	st = groupStore(t, db, node, groups.Limits{CreatedPerDay: 10, CreatedInAll: 4})
	res, err = st.Ingest(ctx, []*nostr.Event{create("b0")})
	require.NoError(t, err)
	require.True(t, res[0].OK, res[0].Message)
	res, err = st.Ingest(ctx, []*nostr.Event{create("b1")})
	require.NoError(t, err)
	require.Equal(t, groups.ReasonCreatedInAll(4), res[0].Message)
	require.Equal(t, 4, created())
	// A deleted group still counts.
	del := &nostr.Event{Kind: groups.KindDeleteGroup, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", "b0"}}}
	require.NoError(t, del.Sign(sk))
	res, err = st.Ingest(ctx, []*nostr.Event{del})
	require.NoError(t, err)
	require.True(t, res[0].OK, res[0].Message)
	res, err = st.Ingest(ctx, []*nostr.Event{create("b2")})
	require.NoError(t, err)
	require.Equal(t, groups.ReasonCreatedInAll(4), res[0].Message)

	// Two relay processes, each creating groups for another key at once:
	// exactly the daily bound is taken.
	sk = nostr.GeneratePrivateKey()
	pk, _ = nostr.GetPublicKey(sk)
	stores := []*Store{groupStore(t, db, node, groups.Limits{CreatedPerDay: 5}), groupStore(t, db, node, groups.Limits{CreatedPerDay: 5})}
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				ev := &nostr.Event{Kind: groups.KindCreateGroup, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", fmt.Sprint("c", w, "_", i)}}}
				if !assert(t, ev.Sign(sk) == nil, "sign") {
					return
				}
				_, err := s.Ingest(ctx, []*nostr.Event{ev})
				assert(t, err == nil, "ingest: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 5, created())
	requireProjectEqualsLive(t, db)
}

// TestHostileSubgroupDepthStored: the depth bound counts the subgroups
// below the group that moves, as stored and as the batch attaches them.
func TestHostileSubgroupDepthStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	st := groupStore(t, db, node, groups.Limits{Depth: 3})
	sign := func(kind int, tags ...nostr.Tag) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: fmt.Sprint(rand.Int())}
		require.NoError(t, node.Sign(ev))
		return ev
	}
	ingest := func(evs ...*nostr.Event) []protocol.Verdict {
		res, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
		return res
	}
	under := func(id, parent string, kids ...string) *nostr.Event {
		tags := nostr.Tags{{"h", id}, {"parent", parent}}
		for _, k := range kids {
			tags = append(tags, nostr.Tag{"child", k})
		}
		return sign(groups.KindEditMetadata, tags...)
	}
	for _, id := range []string{"r", "a", "b", "c", "x", "y", "x2", "y2"} {
		require.True(t, ingest(sign(groups.KindCreateGroup, nostr.Tag{"h", id}))[0].OK)
	}
	for _, link := range [][2]string{{"a", "r"}, {"b", "a"}, {"c", "b"}, {"y", "x"}} {
		res := ingest(under(link[0], link[1]))
		require.True(t, res[0].OK, res[0].Message)
	}
	// x has y below it: under b, y would be at depth 4.
	require.Equal(t, groups.ReasonDepth(3), ingest(under("x", "b", "y"))[0].Message)
	// The same when the batch itself puts y2 below x2 first.
	res := ingest(under("y2", "x2"), under("x2", "b", "y2"))
	require.True(t, res[0].OK, res[0].Message)
	require.Equal(t, groups.ReasonDepth(3), res[1].Message)
	res = ingest(under("x", "a", "y"))
	require.True(t, res[0].OK, res[0].Message)
	requireProjectEqualsLive(t, db)
}
