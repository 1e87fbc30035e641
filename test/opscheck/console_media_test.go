//go:build ops

package opscheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// TestConsoleMediaInBrowser drives the console's Media page of `cnctl dev`
// (Blossom on the relay's address) in headless Chromium: a member's upload
// shows among the largest uploaders; a NIP-56 report naming the blob (an x
// tag) lists it with its report count, type and owner; the admin hides it
// (NIP-86 hideblob) and the relay answers 451 for it, then unhides it and
// the relay serves it again. A key that is no admin is refused and the blob
// stays served. The page passes axe-core and its Content-Security-Policy.
func TestConsoleMediaInBrowser(t *testing.T) {
	admin, outsider, reporter := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	n := startDev(t, admin.PK)
	c := dial(t, n.relay)
	base := "http://" + strings.TrimPrefix(n.relay, "ws://")

	data := []byte("a picture someone will report " + nostr.GeneratePrivateKey())
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	auth := nostr.Event{Kind: 24242, CreatedAt: nostr.Now() - 1, Content: "Upload",
		Tags: nostr.Tags{{"t", "upload"}, {"x", hash}, {"expiration", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}}}
	require.NoError(t, auth.Sign(admin.SK))
	raw, err := json.Marshal(auth)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, base+"/upload", bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Nostr "+base64.RawURLEncoding.EncodeToString(raw))
	req.Header.Set("Content-Type", "image/png")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, res.Header.Get("X-Reason"))
	blob := func() int {
		res, err := http.Get(base + "/" + hash)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}

	ok, reason, _ := c.publish(reporter.SK, nostr.Event{Kind: 1984, Tags: nostr.Tags{{"x", hash, "nudity"}, {"p", admin.PK}}})
	require.True(t, ok, reason)

	s := newConsoleSession(t, n, admin)
	row := fmt.Sprintf(`tr[data-blob=%q]`, hash)
	s.open("media")
	s.signIn(admin, "relay admin")
	require.True(t, s.exists(fmt.Sprintf(`tr[data-uploader=%q]`, admin.PK)), "the uploader is listed")
	deadline := time.Now().Add(30 * time.Second)
	for !s.exists(row) { // the moderator tallies the report; nothing on the stream says so: read the page again
		require.False(t, time.Now().After(deadline), "the reported blob never listed")
		time.Sleep(200 * time.Millisecond)
		s.open("media")
	}
	require.Contains(t, s.text(row), "image/png")
	require.Contains(t, s.text(row), "served")
	require.Equal(t, "1", s.text(row+" td:nth-child(4)"), "one open report")

	s.click(row + ` button[data-act="hideblob"]`)
	require.Contains(t, s.result("Hide blob"), "hidden (hideblob)")
	require.Equal(t, http.StatusUnavailableForLegalReasons, blob(), "the relay no longer serves it")
	s.waitFor("the blob shown hidden", func() bool { return s.exists(row + ` button[data-act="unhideblob"]`) })
	require.Contains(t, s.text(row), "hidden from the console")
	s.check("media")

	s.click(row + ` button[data-act="unhideblob"]`)
	require.Contains(t, s.result("Unhide blob"), "served again")
	require.Equal(t, http.StatusOK, blob())

	s.signIn(outsider, "group roles only")
	s.waitFor("the hide button", func() bool { return s.exists(row + ` button[data-act="hideblob"]`) })
	s.click(row + ` button[data-act="hideblob"]`)
	got := s.result("Hide blob")
	require.Contains(t, got, "failed")
	require.Contains(t, got, "403")
	require.Equal(t, http.StatusOK, blob(), "a key that is no admin changed nothing")
}
