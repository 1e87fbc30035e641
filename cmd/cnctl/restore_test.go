package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestAfterRestore: a consumer whose offset is above the outbox head (what a
// restore to an earlier point leaves when the offset lives elsewhere, or the
// bridge after skipping to its stream's last message) is named by cnctl
// status; cnctl outbox after-restore reports it, advances the outbox sequence
// past it with --execute and then has nothing to repair; the next row gets a
// seq above it.
func TestAfterRestore(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	appendRows := func(n int) outbox.Range {
		recs := make([]outbox.Record, n)
		for i := range recs {
			recs[i] = outbox.Record{Op: outbox.OpUpsert, EventID: fmt.Sprintf("e%d", i), TopicID: "test", Kind: 1, CreatedAt: 1700000000}
		}
		r, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil })
		require.NoError(t, err)
		return r
	}
	head := appendRows(5).Last
	_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, owner_id, owner_generation, last_seq) VALUES ('bridge-v1', 'x', 1, $1)`, head+50)
	require.NoError(t, err)
	url := db.URL

	out, err := cnctl(t, "status", "--database-url", url)
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("AHEAD OF THE OUTBOX: consumer bridge-v1 at %d above the outbox head %d, and the outbox would hand out seq %d again", head+50, head, head+1))
	require.Contains(t, out, "cnctl outbox after-restore --execute")
	require.Contains(t, out, "replication: primary")

	out, err = cnctl(t, "outbox", "after-restore", "--database-url", url)
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("consumer bridge-v1 is AHEAD of the outbox head: offset %d > %d", head+50, head))
	require.Contains(t, out, fmt.Sprintf("dry run: would advance the outbox sequence: next seq %d -> %d", head+1, head+51))

	out, err = cnctl(t, "outbox", "after-restore", "--database-url", url, "--at-least", fmt.Sprint(head+70), "--json")
	require.NoError(t, err)
	var rep struct {
		Floor       int64 `json:"floor_seq"`
		NeedsRepair bool  `json:"needs_repair"`
		Executed    bool  `json:"executed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, head+70, rep.Floor)
	require.True(t, rep.NeedsRepair)
	require.False(t, rep.Executed)

	out, err = cnctl(t, "outbox", "after-restore", "--database-url", url, "--execute")
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("advanced the outbox sequence: next seq %d -> %d", head+1, head+51))
	out, err = cnctl(t, "outbox", "after-restore", "--database-url", url)
	require.NoError(t, err)
	require.Contains(t, out, "nothing to repair")
	out, err = cnctl(t, "status", "--database-url", url)
	require.NoError(t, err)
	require.NotContains(t, out, "AHEAD OF THE OUTBOX")
	require.Equal(t, head+51, appendRows(1).First, "the next row's seq is above every seq seen")

	_, err = cnctl(t, "outbox", "after-restore", "--database-url", url, "--at-least", "-1")
	require.Equal(t, 2, exitCode(err), "a negative --at-least is a usage error: %v", err)
}
