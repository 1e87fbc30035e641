package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/console"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// storeBlob stores data as owner's blob through package blossom.
func storeBlob(t *testing.T, db *blossom.DB, owner string, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	tmp := filepath.Join(db.Files.Dir, "tmp", "upload-"+h[:8]+owner[:4])
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	_, err := db.Add(context.Background(), h, int64(len(data)), "image/png", owner, tmp, blossom.Quota{}, time.Now())
	require.NoError(t, err)
	return h
}

// TestConsoleMedia: the Media page and its API (behind the status page's
// token, as every console read) list the keys holding the most bytes and the
// blobs hidden or named by open reports, most reports first, with their
// size, type, owners and hidden state; a blob neither hidden nor reported is
// not listed; hiding through blossom (what NIP-86 hideblob and cnctl blobs
// hide call) shows at the next read.
func TestConsoleMedia(t *testing.T) {
	t.Parallel()
	pg := pgtest.New(t)
	ctx := context.Background()
	base := serve(t, pg)
	q := "?token=" + token

	require.Equal(t, http.StatusUnauthorized, get(t, base+"/console/api/media", nil), "the console needs the token")
	require.Equal(t, http.StatusUnauthorized, get(t, base+"/console/media", nil))
	require.Equal(t, http.StatusOK, get(t, base+"/console/media"+q, nil))
	var empty console.MediaView
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/media"+q, &empty))
	require.Equal(t, console.MediaView{Uploaders: []console.MediaUploader{}, Blobs: []console.MediaBlob{}}, empty)

	files := blossom.Files{Dir: t.TempDir()}
	require.NoError(t, files.Init())
	db := &blossom.DB{Pool: pg.Pool, Files: files}
	big, small := hex64('b'), hex64('5')
	large := storeBlob(t, db, big, make([]byte, 5000))
	reported := storeBlob(t, db, small, []byte("a reported picture"))
	shared := storeBlob(t, db, small, []byte("hidden by an operator"))
	storeBlob(t, db, big, []byte("hidden by an operator"))
	for i, reporter := range []string{hex64('1'), hex64('2')} {
		_, err := pg.Pool.Exec(ctx, `INSERT INTO cn_moderation.reports
			(report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq)
			VALUES ($1, $2, 'blob', $3, $4, 'nudity', 100, $5)`, hex64(byte('c'+i)), reported, small, reporter, i+1)
		require.NoError(t, err)
	}
	changed, err := db.Hide(ctx, shared, "op@host", "illegal")
	require.NoError(t, err)
	require.True(t, changed)

	var v console.MediaView
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/media"+q, &v))
	require.Equal(t, []console.MediaUploader{
		{Pubkey: big, Bytes: 5000 + 21, Blobs: 2},
		{Pubkey: small, Bytes: 18 + 21, Blobs: 2},
	}, v.Uploaders, "largest first")
	require.Len(t, v.Blobs, 2, "the unreported, visible blob %s is not listed", large)
	require.Equal(t, reported, v.Blobs[0].SHA256, "most reports first")
	require.Equal(t, 2, v.Blobs[0].Reports)
	require.Equal(t, int64(18), v.Blobs[0].Size)
	require.Equal(t, "image/png", v.Blobs[0].Type)
	require.Equal(t, []string{small}, v.Blobs[0].Owners)
	require.Empty(t, v.Blobs[0].Hidden)
	require.Equal(t, shared, v.Blobs[1].SHA256)
	require.Equal(t, "illegal", v.Blobs[1].Hidden)
	require.Equal(t, []string{small, big}, v.Blobs[1].Owners, "in upload order")

	_, err = db.Hide(ctx, reported, "npub-admin", "reported")
	require.NoError(t, err)
	_, err = db.Unhide(ctx, shared, "npub-admin")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/media"+q, &v))
	require.Len(t, v.Blobs, 1, "an unhidden, unreported blob leaves the list")
	require.Equal(t, "reported", v.Blobs[0].Hidden)

	require.Equal(t, http.StatusOK, get(t, base+"/console/api/media"+q+"&limit=1", &v))
	require.Len(t, v.Uploaders, 1)
	require.Equal(t, big, v.Uploaders[0].Pubkey)
	for _, bad := range []string{"&limit=0", "&limit=x", "&after=abc", "&q=ab"} {
		require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/media"+q+bad, nil), bad)
	}
}
