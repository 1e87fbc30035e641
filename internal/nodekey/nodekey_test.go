package nodekey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

func TestGenerateLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "node.key")
	k, err := Generate(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	_, err = Generate(path)
	require.ErrorIs(t, err, ErrExists, "never overwritten")

	loaded, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, k.PubKey, loaded.PubKey)
	require.Regexp(t, "^npub1", loaded.Npub())

	ev := &nostr.Event{Kind: 1985, CreatedAt: 1, Content: "x"}
	require.NoError(t, loaded.Sign(ev))
	ok, err := ev.CheckSignature()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, k.PubKey, ev.PubKey)

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = Load(path)
	require.ErrorContains(t, err, "readable by others")

	bad := filepath.Join(t.TempDir(), "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not a key\n"), 0o600))
	_, err = Load(bad)
	require.ErrorContains(t, err, "64 lowercase hex")

	fresh := filepath.Join(t.TempDir(), "fresh.key")
	k1, created, err := LoadOrGenerate(fresh)
	require.NoError(t, err)
	require.True(t, created)
	k2, created, err := LoadOrGenerate(fresh)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, k1.PubKey, k2.PubKey)
}

func TestDerive(t *testing.T) {
	t.Parallel()
	k, err := FromSecret(strings.Repeat("1", 64))
	require.NoError(t, err)
	a, err := k.Derive("nip85 trust-v1")
	require.NoError(t, err)
	b, err := k.Derive("nip85 trust-v1")
	require.NoError(t, err)
	c, err := k.Derive("something else")
	require.NoError(t, err)
	require.Equal(t, a.PubKey, b.PubKey, "the same purpose gives the same key")
	require.NotEqual(t, a.PubKey, c.PubKey)
	require.NotEqual(t, a.PubKey, k.PubKey)
	_, err = Key{}.Derive("x")
	require.Error(t, err)
}
