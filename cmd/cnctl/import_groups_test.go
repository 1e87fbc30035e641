package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// TestImportGroupHistory: the history of a group moved from another relay
// (days old, with the former relay's own 9000s and state events, timeline
// references to events never exported, a subgroup) is refused by a plain
// import, and stored by --group-history: the imported moderation events make
// the state (admins kept), the node signs it, and a rebuild equals it.
func TestImportGroupHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "node.key")
	node, _, err := nodekey.LoadOrGenerate(keyFile)
	require.NoError(t, err)
	former, alice, bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pk := func(sk string) string { p, _ := nostr.GetPublicKey(sk); return p }
	at := nostr.Timestamp(time.Now().Add(-72 * time.Hour).Unix())
	var lines []string
	add := func(sk string, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: ""}
		require.NoError(t, ev.Sign(sk))
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		lines = append(lines, string(b))
		return ev
	}
	h := func(id string) nostr.Tag { return nostr.Tag{"h", id} }
	add(alice, groups.KindCreateGroup, h("moved"))
	add(former, groups.KindPutUser, h("moved"), nostr.Tag{"p", pk(alice), "admin"})
	add(former, groups.KindMetadata, nostr.Tag{"d", "moved"}, nostr.Tag{"name", "Moved"})
	add(alice, groups.KindEditMetadata, h("moved"), nostr.Tag{"name", "Moved"}, nostr.Tag{"closed"})
	add(bob, groups.KindJoinRequest, h("moved"))                         // pending: closed
	add(former, groups.KindPutUser, h("moved"), nostr.Tag{"p", pk(bob)}) // the former relay admitted bob
	msg := add(bob, 9, h("moved"), nostr.Tag{"previous", "0badf00d"})    // a reference never exported
	add(alice, groups.KindPutUser, h("moved"), nostr.Tag{"p", pk(carol), "moderator"})
	add(carol, 9, h("moved"), nostr.Tag{"previous", msg.ID[:8]})
	add(carol, groups.KindRemoveUser, h("moved"), nostr.Tag{"p", pk(bob)})
	add(alice, groups.KindCreateGroup, h("kid"))
	add(former, groups.KindPutUser, h("kid"), nostr.Tag{"p", pk(alice), "admin"})
	add(alice, groups.KindEditMetadata, h("kid"), nostr.Tag{"name", "Kid"}, nostr.Tag{"parent", "moved"})
	path := filepath.Join(dir, "groups.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	plain := pgtest.New(t)
	out, err := cnctl(t, "import", "--database-url", plain.URL, "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "accepted 0, pending 0, duplicate 0, refused 13\n")
	require.Contains(t, out, "refused 13: restricted: this relay does not host NIP-29 groups")

	out, err = cnctl(t, "import", "--database-url", plain.URL, "--progress", "0", "--group-history", path)
	require.Error(t, err)
	require.Contains(t, out+err.Error(), "--group-history needs --node-key-file")

	db := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", db.URL, "--progress", "0", "--group-history",
		"--node-key-file", keyFile, "--group-former-relay", pk(former), path)
	require.NoError(t, err, out)
	// Refused: the former relay's state event (this node signs its own); the
	// join request to the closed group is answered as a client's would be
	// (OK false, pending review: counted refused) and kept.
	require.Contains(t, out, "refused 1: restricted: group state (kinds 39000-39005) is published by this relay only")
	require.Contains(t, out, "refused 1: restricted: pending review: this group is closed")
	require.Contains(t, out, "accepted 11, pending 0, duplicate 0, refused 2\n")

	ctx := context.Background()
	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	moved := live["moved"]
	require.NotNil(t, moved)
	require.Equal(t, "Moved", moved.Meta.Name)
	require.True(t, moved.Meta.Closed)
	require.Equal(t, []string{"admin"}, moved.RolesOf(pk(alice)), "the admins are kept")
	require.Equal(t, []string{"moderator"}, moved.RolesOf(pk(carol)))
	require.False(t, moved.IsMember(pk(bob)), "removed later in the history")
	require.Equal(t, []string{"kid"}, moved.Tree.Children)
	require.Equal(t, "moved", live["kid"].Tree.Parent)
	stored, err := groups.Stored(ctx, db.Pool)
	require.NoError(t, err)
	require.Empty(t, groups.Diff(live, groups.Project(stored)), "rebuild equals the imported state")
	// The node signed the state: one 39000 per group, by the node key, now.
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE kind = 39000 AND pubkey = $1 AND is_effective`, node.PubKey).Scan(&n))
	require.Equal(t, 2, n)
}
