package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestRunUnderIndexerRole runs the indexer as a login user of the indexer's group
// role (internal/dbroles): it takes its lease, indexes what the store wrote
// (including a deletion) and answers searches.
func TestRunUnderIndexerRole(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := db.LoginAsService(t, dbroles.Indexer)

	st := testkit.NewStore(db.Pool)
	key := nostr.GeneratePrivateKey()
	sign := func(ev *nostr.Event) *nostr.Event {
		ev.CreatedAt = nostr.Now()
		require.NoError(t, ev.Sign(key))
		return ev
	}
	kept := sign(&nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "least privilege works"})
	gone := sign(&nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "privilege revoked"})
	res, err := st.Ingest(ctx, []*nostr.Event{kept, gone, sign(&nostr.Event{Kind: 5, Tags: nostr.Tags{{"e", gone.ID}}})})
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK, r.Message)
	}

	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "indexer", "--listen", addr, "--database-url", url)
	head, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)
	testkit.WaitOffset(t, db.Pool, indexer.ConsumerName, head) // index-v1 reaches the head under its role
	resp, err := http.Get("http://" + addr + "/v1/search?q=privilege")
	require.NoError(t, err)
	var body struct {
		Items []struct {
			ID string `json:"event_id"`
		} `json:"items"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Len(t, body.Items, 1)
	require.Equal(t, kept.ID, body.Items[0].ID)
	stop()
}
