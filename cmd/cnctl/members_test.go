package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// TestMembersCommands: cnctl members adds, lists, removes, mints and revokes
// invites, and rebuild finds the kept registers equal to the stored events,
// finds a corrupted one, and --write repairs it; bad input exits 2.
func TestMembersCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	node, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	alice, bob := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	alicePK, _ := nostr.GetPublicKey(alice)
	bobPK, _ := nostr.GetPublicKey(bob)
	base := []string{"--database-url", db.URL}
	withKey := append(base, "--node-key-file", keyFile)

	out, err := cnctl(t, append(append([]string{"members", "add"}, withKey...), alicePK)...)
	require.NoError(t, err, out)
	out, err = cnctl(t, append(append([]string{"members", "add"}, withKey...), bobPK)...)
	require.NoError(t, err, out)
	out, err = cnctl(t, append(append([]string{"members", "remove"}, withKey...), bobPK)...)
	require.NoError(t, err, out)
	out, err = cnctl(t, append([]string{"members", "list", "--json"}, base...)...)
	require.NoError(t, err, out)
	var members []membership.Member
	require.NoError(t, json.Unmarshal([]byte(out), &members))
	require.Len(t, members, 1)
	require.Equal(t, alicePK, members[0].Pubkey)
	require.Equal(t, membership.ViaOperator, members[0].Via)
	// The node's 13534 lists alice, signed by the node key.
	var tags string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT tags::text FROM cn_relay.events WHERE kind = 13534 AND pubkey = $1 AND is_effective`, node.PubKey).Scan(&tags))
	require.JSONEq(t, `[["-"],["member","`+alicePK+`"]]`, tags)

	out, err = cnctl(t, append([]string{"members", "invite"}, withKey...)...)
	require.NoError(t, err, out)
	m := regexp.MustCompile(`(?m)^id\s+([0-9a-f]{16})$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out, err = cnctl(t, append(append([]string{"members", "revoke"}, withKey...), m[1])...)
	require.NoError(t, err, out)
	out, err = cnctl(t, append(append([]string{"members", "revoke"}, withKey...), m[1])...)
	require.Equal(t, 2, exitCode(err), out)
	out, err = cnctl(t, append([]string{"members", "invites"}, base...)...)
	require.NoError(t, err, out)
	require.Regexp(t, m[1]+`\s+revoked`, out)
	_, err = cnctl(t, append(append([]string{"members", "add"}, withKey...), "nothex")...)
	require.Equal(t, 2, exitCode(err))
	_, err = cnctl(t, append(append([]string{"members", "deny"}, withKey...), bobPK)...)
	require.Equal(t, 2, exitCode(err), "nothing pending")

	out, err = cnctl(t, append([]string{"members", "rebuild"}, withKey...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "2 keys, 0 differ")
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.nip43_members SET member = NOT member")
	require.NoError(t, err)
	out, err = cnctl(t, append([]string{"members", "rebuild", "--write"}, withKey...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "2 differ")
	out, err = cnctl(t, append([]string{"members", "rebuild"}, withKey...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "0 differ")
}
