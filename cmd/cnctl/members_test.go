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

// TestMembersRoles: cnctl members roles defines, changes, lists, assigns,
// unassigns and removes NIP-43 roles (the node's 33534 and its NIP-09
// deletion; the roles after each member's pubkey in the 13534); `members add
// --role` adds with roles; an undefined role, a non-member or a bad field
// exits 2 with one line and changes nothing; rebuild finds the kept roles
// equal to the stored events, finds corrupted ones, and --write repairs them.
func TestMembersRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	node, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	alicePK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	bobPK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	base := []string{"--database-url", db.URL}
	withKey := append(base, "--node-key-file", keyFile)
	ok := func(args ...string) string {
		t.Helper()
		out, err := cnctl(t, args...)
		require.NoError(t, err, out)
		return out
	}
	refused := func(args ...string) {
		t.Helper()
		out, err := cnctl(t, args...)
		require.Equal(t, 2, exitCode(err), out)
		require.NotContains(t, oneLine(err), "\n")
	}
	roles := func(sub string, args ...string) []string { // (flags first)
		return append(append([]string{"members", "roles", sub}, withKey...), args...)
	}
	list := func() string {
		t.Helper()
		var tags string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT tags::text FROM cn_relay.events WHERE kind = 13534 AND pubkey = $1 AND is_effective`, node.PubKey).Scan(&tags))
		return tags
	}

	ok(roles("set", "--label", "king", "--description", "ruler of the relay", "--color", "37", "--order", "1", "king")...)
	ok(roles("set", "--label", "moderator", "mod")...)
	refused(roles("set", "--color", "400", "bad")...)
	refused(roles("set", "--order", "first", "bad")...)
	refused(roles("set", "bad:id")...)
	var tags string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT tags::text FROM cn_relay.events WHERE kind = 33534 AND pubkey = $1 AND is_effective
		AND tags @> '[["d", "king"]]'`, node.PubKey).Scan(&tags))
	require.JSONEq(t, `[["-"],["d","king"],["label","king"],["description","ruler of the relay"],["color","37"],["order","1"]]`, tags)
	ok(roles("set", "--color", "", "king")...) // (clears one field, keeps the others)
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT tags::text FROM cn_relay.events WHERE kind = 33534 AND pubkey = $1 AND is_effective
		AND tags @> '[["d", "king"]]'`, node.PubKey).Scan(&tags))
	require.JSONEq(t, `[["-"],["d","king"],["label","king"],["description","ruler of the relay"],["order","1"]]`, tags)

	ok(append(append([]string{"members", "add"}, withKey...), "--role", "king", "--role", "mod", alicePK)...)
	require.JSONEq(t, `[["-"],["member","`+alicePK+`","king","mod"]]`, list())
	refused(append(append([]string{"members", "add"}, withKey...), "--role", "nope", bobPK)...)
	refused(roles("assign", bobPK, "king")...) // not a member
	refused(roles("assign", alicePK, "nope")...)
	require.JSONEq(t, `[["-"],["member","`+alicePK+`","king","mod"]]`, list(), "refused calls change nothing")
	ok(roles("unassign", alicePK, "mod")...)
	require.JSONEq(t, `[["-"],["member","`+alicePK+`","king"]]`, list())

	out := ok(append([]string{"members", "roles", "list", "--json"}, base...)...)
	var defined []membership.Role
	require.NoError(t, json.Unmarshal([]byte(out), &defined))
	require.Len(t, defined, 2)
	require.Equal(t, "king", defined[0].ID, "by order")
	out = ok(append([]string{"members", "list"}, base...)...)
	require.Regexp(t, alicePK+`\s+operator\s+\S+\s+king`, out)

	// Removing a role deletes its 33534 and takes it off every member.
	ok(roles("assign", alicePK, "mod")...)
	ok(roles("remove", "mod")...)
	refused(roles("remove", "mod")...)
	require.JSONEq(t, `[["-"],["member","`+alicePK+`","king"]]`, list())
	var reason string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT coalesce(deleted_reason, '') FROM cn_relay.events WHERE kind = 33534 AND tags @> '[["d", "mod"]]'
		ORDER BY created_at DESC LIMIT 1`).Scan(&reason))
	require.Equal(t, "nip09", reason)

	out = ok(append([]string{"members", "rebuild"}, withKey...)...)
	require.Contains(t, out, "1 roles, 1 keys, 0 differ")
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.nip43_roles SET label = 'tampered'; UPDATE cn_relay.nip43_members SET roles = '{}'")
	require.NoError(t, err)
	out = ok(append([]string{"members", "rebuild", "--write"}, withKey...)...)
	require.Contains(t, out, "2 differ")
	out = ok(append([]string{"members", "rebuild"}, withKey...)...)
	require.Contains(t, out, "0 differ")
	out = ok(append([]string{"members", "roles", "list"}, base...)...)
	require.Regexp(t, `king\s+king\s+1`, out)
}
