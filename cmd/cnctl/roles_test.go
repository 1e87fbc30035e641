package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestOperatorAndDashboardRoles: after `cnctl migrate`, a login user of the
// operator role runs the operator's commands (status, reset-offset, prune,
// reindex, which swaps tables and needs ownership), the indexer's role can
// still write the rebuilt index, and the dashboard runs under its read-only role.
func TestOperatorAndDashboardRoles(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	out, err := cnctl(t, "migrate", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "roles granted: cn_role_operator owns the schema")
	cfg := dbroles.Config{}

	st := testkit.NewStore(db.Pool)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "operator"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	_, err = st.Ingest(ctx, []*nostr.Event{ev})
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('index-v1', 1)")
	require.NoError(t, err)

	op := db.LoginAs(t, cfg.Role(dbroles.Operator), true)
	for _, args := range [][]string{
		{"status", "--json"},
		{"reset-offset", "--consumer", "index-v1", "--to-seq", "0", "--execute"},
		{"outbox", "prune", "--older-than", "1ns", "--force", "--execute"},
		{"reindex"},
	} {
		out, err := cnctl(t, append(args, "--database-url", op)...)
		require.NoError(t, err, "%v: %s", args, out)
	}
	var owner string
	var indexerWrites bool
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT relowner::regrole::text, has_table_privilege($1, 'cn_index.documents', 'INSERT, UPDATE, DELETE')
		FROM pg_class WHERE oid = 'cn_index.documents'::regclass`, cfg.Role(dbroles.Indexer)).Scan(&owner, &indexerWrites))
	require.Equal(t, cfg.Role(dbroles.Operator), owner, "the rebuilt index belongs to the operator")
	require.True(t, indexerWrites, "the indexer writes the rebuilt index (default privileges)")

	dash := db.LoginAs(t, cfg.Role(dbroles.Dashboard), false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cnctlCtx(dctx, "dashboard", "--database-url", dash, "--listen", addr, "--relay-url", "ws://127.0.0.1:7777")
		done <- err
	}()
	var snap struct {
		HeadSeq   int64            `json:"head_seq"`
		Consumers []map[string]any `json:"consumers"`
		Error     string           `json:"error"`
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/api/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&snap) == nil && snap.HeadSeq > 0
	}, 10*time.Second, 20*time.Millisecond)
	require.Empty(t, snap.Error)
	require.Len(t, snap.Consumers, 1)
	// The console's read views work under the dashboard's role.
	for _, api := range []string{"groups", "groups?group=none", "members", "nip43", "nip43/members", "nip43/pending", "nip43/invites", "reports", "policy", "backlog"} {
		resp, err := http.Get("http://" + addr + "/console/api/" + api)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusOK
		if api == "groups?group=none" {
			want = http.StatusNotFound // read under the role, and not there
		}
		require.Equal(t, want, resp.StatusCode, "%s: %s", api, body)
	}
	cancel()
	require.NoError(t, <-done)
}

// cnctlCtx runs cnctl until ctx is done (for the commands that serve).
func cnctlCtx(ctx context.Context, args ...string) (string, error) {
	var out testkit.Buffer
	err := run(ctx, append([]string{"cnctl"}, args...), &out, &out)
	return out.String(), err
}
