// go-nostr v0.38.2's Relay races with itself when its connection closes (see
// gonostr_test.go): this test runs without -race.

//go:build !race

package relay

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip29"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestGroupGoNostrClient: a go-nostr app creates a group, edits it, joins,
// and reads the state the relay publishes with go-nostr's nip29 package.
func TestGroupGoNostrClient(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) { p.Creators = groups.CreatorsAny })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	rl, err := nostr.RelayConnect(ctx, g.url)
	require.NoError(t, err)
	alice, bob := newKey(t), newKey(t)

	require.NoError(t, rl.Publish(ctx, *alice.signed(t, nostr.KindSimpleGroupCreateGroup, nostr.Tags{{"h", "gophers"}}, "")))
	require.NoError(t, rl.Publish(ctx, *alice.signed(t, nostr.KindSimpleGroupEditMetadata, nostr.Tags{{"h", "gophers"},
		{"name", "Gophers"}, {"about", "Go people"}, {"picture", "https://example.com/g.png"}}, "")))
	require.NoError(t, rl.Publish(ctx, *bob.signed(t, nostr.KindSimpleGroupJoinRequest, nostr.Tags{{"h", "gophers"}}, "hi")))
	carol := newKey(t) // two roles: 39001 lists them in one p tag
	require.NoError(t, rl.Publish(ctx, *alice.signed(t, groups.KindPutUser, nostr.Tags{{"h", "gophers"}, {"p", carol.pk, "moderator", "greeter"}}, "")))
	err = rl.Publish(ctx, *bob.signed(t, nostr.KindSimpleGroupJoinRequest, nostr.Tags{{"h", "gophers"}}, "hi again"))
	require.ErrorContains(t, err, "duplicate: already a member")

	evs, err := testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{nostr.KindSimpleGroupMetadata}, Authors: []string{g.node.PubKey}})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	group, err := nip29.NewGroupFromMetadataEvent(g.url, evs[0])
	require.NoError(t, err)
	require.Equal(t, "gophers", group.Address.ID)
	require.Equal(t, "Gophers", group.Name)
	require.Equal(t, "Go people", group.About)
	require.Equal(t, "https://example.com/g.png", group.Picture)
	require.False(t, group.Private)
	require.False(t, group.Closed)

	for _, kind := range []int{nostr.KindSimpleGroupAdmins, nostr.KindSimpleGroupMembers} {
		evs, err := testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{kind}, Tags: nostr.TagMap{"d": {"gophers"}}})
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, g.node.PubKey, evs[0].PubKey)
		if kind == nostr.KindSimpleGroupAdmins {
			require.NoError(t, group.MergeInAdminsEvent(evs[0]))
		} else {
			require.NoError(t, group.MergeInMembersEvent(evs[0]))
		}
	}
	require.Len(t, group.Members, 3)
	require.NotNil(t, group.Members[alice.pk])
	require.Equal(t, "admin", group.Members[alice.pk].Name)
	require.NotNil(t, group.Members[carol.pk])
	require.Equal(t, "greeter", group.Members[carol.pk].Name, "go-nostr names a member's role by the first of the p tag (roles sorted)")
	require.Contains(t, group.Members[carol.pk].Permissions, nip29.Permission("moderator"))
	addr, err := nip29.ParseGroupAddress(strings.TrimPrefix(g.url, "ws://") + "'gophers")
	require.NoError(t, err)
	require.Equal(t, group.Address.ID, addr.ID)
	require.Contains(t, group.Members, bob.pk)
	require.Nil(t, group.Members[bob.pk], "bob is a plain member")

	// Closing the group is read back the same way.
	require.NoError(t, rl.Publish(ctx, *alice.signed(t, nostr.KindSimpleGroupEditMetadata, nostr.Tags{{"h", "gophers"},
		{"name", "Gophers"}, {"closed"}}, "close")))
	evs, err = testkit.QuerySync(ctx, rl, nostr.Filter{Kinds: []int{nostr.KindSimpleGroupMetadata}, Tags: nostr.TagMap{"d": {"gophers"}}})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	closed, err := nip29.NewGroupFromMetadataEvent(g.url, evs[0])
	require.NoError(t, err)
	require.True(t, closed.Closed)
	require.Empty(t, closed.About, "9002 replaces every field")
}
