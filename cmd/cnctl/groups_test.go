package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestGroupsCommands: list and show a group the relay's store path made;
// rebuild finds it equal, finds a corrupted live state, and --write repairs it.
func TestGroupsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	st := testkit.NewStore(db.Pool)
	testkit.HostGroups(t, st, testkit.GroupOpts{})
	alice, bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bobPK, _ := nostr.GetPublicKey(bob)
	at := nostr.Now()
	sign := func(sk string, kind int, tags ...nostr.Tag) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", "tea"}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	res, err := st.Ingest(ctx, []*nostr.Event{
		sign(alice, groups.KindCreateGroup),
		sign(alice, groups.KindEditMetadata, nostr.Tag{"name", "Tea"}, nostr.Tag{"closed"}),
		sign(alice, groups.KindCreateInvite, nostr.Tag{"code", "oolong"}),
		sign(bob, groups.KindJoinRequest, nostr.Tag{"code", "oolong"}),
		sign(carol, groups.KindJoinRequest),
	})
	require.NoError(t, err)
	for i, v := range res[:4] {
		require.True(t, v.OK, "%d: %s", i, v.Message)
	}
	require.False(t, res[4].OK)

	out, err := cnctl(t, "groups", "list", "--database-url", db.URL)
	require.NoError(t, err)
	require.Regexp(t, `tea\s+Tea\s+2\s+1\s+closed`, out)
	out, err = cnctl(t, "groups", "show", "--database-url", db.URL, "tea")
	require.NoError(t, err)
	require.Regexp(t, `member\s+`+bobPK, out)
	require.Regexp(t, `invite\s+oolong`, out)
	_, err = cnctl(t, "groups", "show", "--database-url", db.URL)
	require.Equal(t, 2, exitCode(err))

	out, err = cnctl(t, "groups", "rebuild", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "1 groups from 7 stored group events; 0 differ")

	// A live state that the events do not explain is found and repaired.
	_, err = db.Pool.Exec(ctx, `UPDATE cn_relay.groups SET state = jsonb_set(state, '{meta,name}', '"Coffee"')`)
	require.NoError(t, err)
	out, err = cnctl(t, "groups", "rebuild", "--database-url", db.URL)
	require.Error(t, err)
	require.Contains(t, out, "differs: tea")
	out, err = cnctl(t, "groups", "rebuild", "--database-url", db.URL, "--write")
	require.NoError(t, err, out)
	require.Contains(t, out, "replaced 1 group states")
	out, err = cnctl(t, "groups", "rebuild", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "0 differ")
}

// TestGroupsMembersCommand: members lists each member with their roles and
// each pending join request, counts the invite codes without showing them,
// and answers an unknown group and a missing id with one line and exit 1 / 2.
func TestGroupsMembersCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	st := testkit.NewStore(db.Pool)
	testkit.HostGroups(t, st, testkit.GroupOpts{})
	alice, bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	alicePK, _ := nostr.GetPublicKey(alice)
	bobPK, _ := nostr.GetPublicKey(bob)
	carolPK, _ := nostr.GetPublicKey(carol)
	at := nostr.Now()
	sign := func(sk string, kind int, tags ...nostr.Tag) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", "tea"}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	res, err := st.Ingest(ctx, []*nostr.Event{
		sign(alice, groups.KindCreateGroup),
		sign(alice, groups.KindEditMetadata, nostr.Tag{"name", "Tea"}, nostr.Tag{"closed"}),
		sign(alice, groups.KindCreateInvite, nostr.Tag{"code", "oolong"}),
		sign(alice, groups.KindCreateInvite, nostr.Tag{"code", "sencha"}),
		sign(alice, groups.KindPutUser, nostr.Tag{"p", bobPK, "moderator"}),
		sign(carol, groups.KindJoinRequest),
	})
	require.NoError(t, err)
	for i, v := range res[:5] {
		require.True(t, v.OK, "%d: %s", i, v.Message)
	}
	require.False(t, res[5].OK, "closed group: carol waits")

	out, err := cnctl(t, "groups", "members", "--database-url", db.URL, "tea")
	require.NoError(t, err, out)
	require.Regexp(t, alicePK+`\s+member\s+admin\s+\d+`, out)
	require.Regexp(t, bobPK+`\s+member\s+moderator\s+`+strconv.FormatInt(int64(at), 10), out)
	require.Regexp(t, carolPK+`\s+pending\s+-\s+`+strconv.FormatInt(int64(at), 10), out)
	require.Contains(t, out, "group tea: 2 members, 1 pending join requests, 2 invite codes\n")
	require.NotContains(t, out, "oolong", "codes are secrets: counted, not shown")

	out, err = cnctl(t, "groups", "members", "--database-url", db.URL, "coffee")
	require.Equal(t, 1, exitCode(err), out)
	require.Equal(t, `no group "coffee"`, oneLine(err))
	_, err = cnctl(t, "groups", "members", "--database-url", db.URL)
	require.Equal(t, 2, exitCode(err))
}
