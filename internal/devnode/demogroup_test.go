package devnode

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestDemoGroup: the first run makes the demo group through the store's
// group path (state, node-signed 39000 that the naddr points to); the next
// runs change nothing.
func TestDemoGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	key, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	first, err := ensureDemoGroup(ctx, db.URL, key, protocol.DefaultTopicRules(), "ws://127.0.0.1:7777")
	require.NoError(t, err)
	require.True(t, first.Created)
	require.Equal(t, "127.0.0.1:7777'community", first.Ref)
	prefix, data, err := nip19.Decode(first.Naddr)
	require.NoError(t, err)
	require.Equal(t, "naddr", prefix)
	ptr := data.(nostr.EntityPointer)
	require.Equal(t, nostr.EntityPointer{PublicKey: key.PubKey, Kind: groups.KindMetadata, Identifier: "community",
		Relays: []string{"ws://127.0.0.1:7777"}}, ptr)

	s, err := groups.LiveOne(ctx, db.Pool, DemoGroupID)
	require.NoError(t, err)
	require.True(t, s.Exists())
	require.Equal(t, DemoGroupName, s.Meta.Name)
	require.Equal(t, []string{key.PubKey}, s.MemberList())
	require.Equal(t, []string{"admin"}, s.RolesOf(key.PubKey))
	st := testkit.NewStore(db.Pool)
	evs, _, err := st.QuerySnapshot(ctx, []nostr.Filter{{Kinds: []int{ptr.Kind}, Authors: []string{ptr.PublicKey},
		Tags: nostr.TagMap{"d": {ptr.Identifier}}}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, evs, 1, "the naddr points to the node's 39000")
	require.Contains(t, evs[0].Tags, nostr.Tag{"name", DemoGroupName})

	var before int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events`).Scan(&before))
	again, err := ensureDemoGroup(ctx, db.URL, key, protocol.DefaultTopicRules(), "ws://127.0.0.1:7777")
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, first.Naddr, again.Naddr)
	var after int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events`).Scan(&after))
	require.Equal(t, before, after, "a restart stores nothing")
}
