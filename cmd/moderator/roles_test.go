package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestRunUnderModeratorRole runs the moderator as a login user of the moderator's
// group role (internal/dbroles): a rule labels (publishes a signed event through
// the store path) and hides an event, and an event a banned key got stored is
// hidden and recorded in cn_admin.ban_hides.
func TestRunUnderModeratorRole(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := db.LoginAsService(t, dbroles.Moderator)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	node, err := nodekey.Generate(keyFile)
	require.NoError(t, err)

	rules, err := moderation.ParseFile([]byte("rules:\n  - name: casino\n    content_regex: casino\n    label: spam\n    action: hide\n"))
	require.NoError(t, err)
	_, err = moderation.ApplyRules(ctx, db.Pool, rules, "test", true)
	require.NoError(t, err)
	banned := nostr.GeneratePrivateKey()
	bannedPub, _ := nostr.GetPublicKey(banned)
	_, err = db.Pool.Exec(ctx, `INSERT INTO cn_admin.pubkeys (pubkey, status, reason, actor, at)
		VALUES ($1, 'banned', 'test', 'test', now())`, bannedPub)
	require.NoError(t, err)

	st := testkit.NewStore(db.Pool)
	sign := func(key string, ev *nostr.Event) *nostr.Event {
		ev.CreatedAt = nostr.Now()
		require.NoError(t, ev.Sign(key))
		return ev
	}
	spam := sign(nostr.GeneratePrivateKey(), &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "cheap casino"})
	late := sign(banned, &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "stored before the ban applied"})
	res, err := st.Ingest(ctx, []*nostr.Event{spam, late})
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK, r.Message)
	}

	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "moderator", "--listen", addr, "--database-url", url, "--node-key-file", keyFile)
	hidden := func(id string) bool {
		var h bool
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT deleted_at IS NOT NULL FROM cn_relay.events WHERE id = $1", id).Scan(&h))
		return h
	}
	require.Eventually(t, func() bool { return hidden(spam.ID) && hidden(late.ID) }, 10*time.Second, 10*time.Millisecond,
		"the moderator hides under its role")
	var labels, banHides int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events WHERE kind = 1985 AND pubkey = $1", node.PubKey).Scan(&labels))
	require.Equal(t, 1, labels, "the label was published through the store path")
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_admin.ban_hides WHERE event_id = $1", late.ID).Scan(&banHides))
	require.Equal(t, 1, banHides)
	stop()
}
