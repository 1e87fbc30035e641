package moderation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/testkit"
)

// storeBlob records a blob owned by owner, as an upload would (the file is
// the blossom package's business, not the moderator's).
func storeBlob(t *testing.T, n *testNode, data, owner string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(data))
	ctx := context.Background()
	_, err := n.db.Pool.Exec(ctx, `INSERT INTO cn_blossom.blobs (sha256, size, type, created) VALUES ($1, $2, 'image/png', now())`, sum[:], len(data))
	require.NoError(t, err)
	_, err = n.db.Pool.Exec(ctx, `INSERT INTO cn_blossom.owners (sha256, pubkey, uploaded) VALUES ($1, $2, now())`, sum[:], owner)
	require.NoError(t, err)
	return hex.EncodeToString(sum[:])
}

func blobHidden(t *testing.T, n *testNode, hash string) string {
	t.Helper()
	b, err := (&blossom.DB{Pool: n.db.Pool}).Get(context.Background(), hash)
	require.NoError(t, err)
	return b.Hidden
}

// TestReportedBlobHidden: NIP-56 reports naming a blob in an `x` tag
// (BUD-09) are tallied like reports about events, and a hide rule with no
// condition on an event hides the blob once its threshold is met; a rule
// with a condition on events (kinds) does not apply to blobs; an operator's
// unhide is final for the rules.
func TestReportedBlobHidden(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.applyRules(t, "rules:\n"+
		"  - {name: notes-only, kinds: [1], min_reports: 1, label: spam, action: hide}\n"+
		"  - {name: reported-media, min_reports: 2, report_types: [nudity, illegal], label: reported, action: hide}\n")
	n.startModerator(t)
	c := testkit.Dial(t, n.url)
	uploader := newAuthor(t)
	ok, reason := c.Publish(uploader.event(t, 1, nostr.Tags{{"t", "go"}}, "a member's post"))
	require.True(t, ok, reason)
	h := storeBlob(t, n, "a picture", uploader.pk)
	other := storeBlob(t, n, "another picture", uploader.pk)

	report := func(blob, typ string) {
		ok, reason := c.Publish(newAuthor(t).event(t, 1984, nostr.Tags{{"x", blob, typ}, {"p", uploader.pk}, {"server", "https://media.example"}}, ""))
		require.True(t, ok, reason)
	}
	report(h, "nudity")
	report(other, "spam")
	report(other, "spam")
	n.sync(t, ConsumerName)
	require.Empty(t, blobHidden(t, n, h), "one report is below the threshold, and notes-only is about events")
	require.Empty(t, blobHidden(t, n, other), "spam is not a type the rule counts")
	var kinds []string
	rows, err := n.db.Pool.Query(context.Background(), `SELECT DISTINCT target_kind FROM cn_moderation.reports WHERE target = $1`, h)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		kinds = append(kinds, k)
	}
	require.Equal(t, []string{"blob"}, kinds)

	report(h, "illegal")
	n.sync(t, ConsumerName)
	require.Contains(t, blobHidden(t, n, h), "reported-media@")

	db := &blossom.DB{Pool: n.db.Pool}
	_, err = db.Unhide(context.Background(), h, "operator")
	require.NoError(t, err)
	report(h, "nudity")
	n.sync(t, ConsumerName)
	require.Empty(t, blobHidden(t, n, h), "an operator's unhide is final for the rules")
}
