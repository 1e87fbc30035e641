package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// TestBlobsCommands: cnctl blobs lists, hides, unhides and purges blobs;
// errors are one line with exit code 1 (a blob not stored, a wrong
// directory) or 2 (bad input).
func TestBlobsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dir := t.TempDir()
	files := blossom.Files{Dir: dir}
	require.NoError(t, files.Init())
	data := []byte("a picture")
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	tmp := filepath.Join(dir, "tmp", "upload-test")
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	owner := strings.Repeat("ab", 32)
	_, err := (&blossom.DB{Pool: db.Pool, Files: files}).Add(ctx, h, int64(len(data)), "image/png", owner, tmp, blossom.Quota{}, time.Now())
	require.NoError(t, err)
	base := []string{"--database-url", db.URL}

	out, err := cnctl(t, append([]string{"blobs", "list"}, base...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, h)
	require.Contains(t, out, "image/png")
	out, err = cnctl(t, append([]string{"blobs", "list", "--uploaders", "--json"}, base...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, `"pubkey":"`+owner+`"`)

	out, err = cnctl(t, append(append([]string{"blobs", "hide", "--reason", "reported by hand"}, base...), h)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "hidden")
	out, err = cnctl(t, append([]string{"blobs", "list", "--hidden"}, base...)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "reported by hand")
	out, err = cnctl(t, append(append([]string{"blobs", "unhide"}, base...), h)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "served again")

	out, err = cnctl(t, append(append([]string{"blobs", "purge", "--blossom-dir", t.TempDir()}, base...), h)...)
	require.Equal(t, 1, exitCode(err), out)
	require.Contains(t, oneLine(err), "not a blob directory")
	require.FileExists(t, files.Path(h))
	out, err = cnctl(t, append(append([]string{"blobs", "purge", "--blossom-dir", dir}, base...), h)...)
	require.NoError(t, err, out)
	require.Contains(t, out, "purged")
	require.NoFileExists(t, files.Path(h))

	out, err = cnctl(t, append(append([]string{"blobs", "hide", "--reason", "x"}, base...), strings.Repeat("cd", 32))...)
	require.Equal(t, 1, exitCode(err), out)
	require.Equal(t, "blob "+strings.Repeat("cd", 32)+" is not stored", oneLine(err))
	out, err = cnctl(t, append(append([]string{"blobs", "hide", "--reason", "x"}, base...), "nothex")...)
	require.Equal(t, 2, exitCode(err), out)
}
