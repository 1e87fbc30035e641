package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// seedOutboxForPrune makes 100-seq partitions from seq 3,000,000 on and appends old
// rows (ingested 40 days ago, seq 3000001..3000000+old), then fresh ones.
func seedOutboxForPrune(t *testing.T, db *pgtest.DB, old, fresh int) {
	t.Helper()
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, "UPDATE cn_relay.outbox_partitioning SET partition_size = 100")
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "SELECT setval('cn_relay.events_outbox_seq_seq', 3000000)")
	require.NoError(t, err)
	_, err = outbox.EnsurePartitions(ctx, db.Pool, (old+fresh)/100+2)
	require.NoError(t, err)
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	for i, n := range []int{old, fresh} {
		recs := make([]outbox.Record, n)
		for j := range recs {
			recs[j] = outbox.Record{Op: outbox.OpUpsert, EventID: fmt.Sprintf("e%d-%d", i, j), TopicID: "test", Kind: 1, CreatedAt: 1700000000}
			if i == 0 {
				recs[j].IngestedAt = time.Now().Add(-40 * 24 * time.Hour)
			}
		}
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil })
		require.NoError(t, err)
	}
}

func outboxRows(t *testing.T, db *pgtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cn_relay.events_outbox").Scan(&n))
	return n
}

func TestOutboxPruneCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	seedOutboxForPrune(t, db, 250, 20) // head 3000270
	_, err := db.Pool.Exec(context.Background(),
		"INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('fast-v1', 3000270), ('lagging-v1', 3000150)")
	require.NoError(t, err)

	out, err := cnctl(t, "outbox", "prune", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "dry run: would drop partition events_outbox_p000000003000000 seq [3000000, 3000100): 99 rows\n")
	require.Contains(t, out, "dry run: would delete 51 rows seq [3000100, 3000151) from partition events_outbox_p000000003000100\n")
	require.Contains(t, out, "dry run: held back 100 rows older than 720h: consumer lagging-v1 at seq 3000150 has not consumed them\n")
	require.Contains(t, out, "dry run: nothing was changed (use --execute)\n")
	require.Equal(t, 270, outboxRows(t, db))

	out, err = cnctl(t, "outbox", "prune", "--json", "--database-url", db.URL)
	require.NoError(t, err, out)
	var dry struct {
		Executed  bool   `json:"executed"`
		OlderThan string `json:"older_than"`
		Head      int64  `json:"head"`
		Consumers int    `json:"consumers"`
		Dropped   []struct {
			Name   string `json:"name"`
			Lo, Hi int64
			Rows   int64 `json:"rows"`
		} `json:"dropped"`
		Deleted *struct {
			Partition string `json:"partition"`
			From, To  int64
			Rows      int64 `json:"rows"`
		} `json:"deleted"`
		HeldBack []map[string]any `json:"held_back"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &dry), out)
	require.False(t, dry.Executed)
	require.Equal(t, "720h0m0s", dry.OlderThan)
	require.Equal(t, int64(3000270), dry.Head)
	require.Equal(t, 2, dry.Consumers)
	require.Len(t, dry.Dropped, 4) // the migration's three empty partitions and [3000000, 3000100)
	require.Equal(t, "events_outbox_p000000003000000", dry.Dropped[3].Name)
	require.Equal(t, int64(3000000), dry.Dropped[3].Lo)
	require.Equal(t, int64(3000100), dry.Dropped[3].Hi)
	require.Equal(t, int64(99), dry.Dropped[3].Rows)
	require.NotNil(t, dry.Deleted)
	require.Equal(t, int64(51), dry.Deleted.Rows)
	require.Equal(t, int64(3000151), dry.Deleted.To)
	require.Equal(t, []map[string]any{{"consumer": "lagging-v1", "last_seq": 3000150.0, "rows": 100.0, "removed": 0.0}}, dry.HeldBack)
	require.Equal(t, 270, outboxRows(t, db))

	out, err = cnctl(t, "outbox", "prune", "--execute", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.NotContains(t, out, "dry run")
	require.Regexp(t, `\ndropped partition events_outbox_p000000003000000 seq \[3000000, 3000100\): 99 rows \(took [0-9.]+[µm]?s\)\n`, out)
	require.Contains(t, out, "\ndeleted 51 rows seq [3000100, 3000151) from partition events_outbox_p000000003000100\n")
	require.Contains(t, out, "\nheld back 100 rows older than 720h: consumer lagging-v1 at seq 3000150 has not consumed them\n")
	require.Equal(t, 120, outboxRows(t, db))

	out, err = cnctl(t, "outbox", "prune", "--execute", "--json", "--database-url", db.URL)
	require.NoError(t, err, out)
	var again map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &again), out)
	require.Equal(t, true, again["executed"])
	require.Equal(t, []any{}, again["dropped"])
	require.NotContains(t, again, "deleted")
	require.Equal(t, 120, outboxRows(t, db))
	out, err = cnctl(t, "outbox", "prune", "--execute", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "\nnothing to prune\n", "a second run finds nothing more to do")

	out, err = cnctl(t, "outbox", "prune", "--older-than", "30d", "--force", "--execute", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Contains(t, out, "forced: removed 100 of 100 rows older than 720h that consumer lagging-v1 at seq 3000150 has not consumed\n")
	require.Equal(t, 20, outboxRows(t, db), "only the fresh rows remain")

	out, err = cnctl(t, "outbox", "partitions", "--exact", "--database-url", db.URL)
	require.NoError(t, err, out)
	require.Regexp(t, `NAME\s+LO\s+HI\s+ROWS\s+FIRST_SEQ\s+LAST_SEQ\s+FIRST_INGESTED\s+LAST_INGESTED\n`, out)
	require.Regexp(t, `\nevents_outbox_p000000003000200\s+3000200\s+3000300\s+20\s+3000251\s+3000270\s+\d{4}-`, out)
	require.Regexp(t, `\nevents_outbox_p000000003000300\s+3000300\s+3000400\s+0\s+-\s+-\s+-\s+-\n`, out)
	require.NotContains(t, out, "events_outbox_p000000003000100")
}

func TestOutboxPruneOnAnEmptyOutbox(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, args := range [][]string{{}, {"--execute", "--force"}} {
		out, err := cnctl(t, append([]string{"outbox", "prune", "--database-url", db.URL}, args...)...)
		require.NoError(t, err, out)
		require.Contains(t, out, "nothing to prune\n", "%v", args)
		require.NotContains(t, out, "partition", "%v", args)
	}
}

func TestOutboxCommandUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"outbox", "prune", "--older-than", "-5h"}, "--older-than: must be positive"},
		{[]string{"outbox", "prune", "--older-than", "0"}, "--older-than: must be positive"},
		{[]string{"outbox", "prune", "--older-than", "soon"}, `--older-than: bad duration "soon"`},
		{[]string{"outbox", "prune", "--older-than", "xd"}, `--older-than: bad duration "xd"`},
		{[]string{"outbox", "prune", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"outbox", "prune", "now"}, `unexpected argument "now"`},
		{[]string{"outbox", "partitions", "--exact=maybe"}, "invalid boolean value"},
		{[]string{"outbox", "bogus"}, `unknown command "bogus"`},
	} {
		_, err := cnctl(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, oneLine(err), tc.want, "%v", tc.args)
		require.Equal(t, 2, exitCode(err), "%v", tc.args)
	}
}

func TestParseAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"720h": 720 * time.Hour, "30d": 720 * time.Hour, "1h30m": 90 * time.Minute} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

// TestWritePruneReport checks the text of each kind of line a prune report
// has (the reports are those pkg/outbox's retention tests produce).
func TestWritePruneReport(t *testing.T) {
	t.Parallel()
	text := func(r outbox.PruneReport) string {
		var b strings.Builder
		writePruneReport(&b, r)
		return b.String()
	}
	cutoff := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lagging := outbox.HeldBack{Consumer: "lagging-v1", LastSeq: 3000250, Rows: 250}

	dry := text(outbox.PruneReport{
		OlderThan: outbox.DefaultRetention, Cutoff: cutoff, Head: 3000300, Consumers: 2,
		Dropped:  []outbox.DroppedPartition{{Name: "events_outbox_p000000003000000", Lo: 3000000, Hi: 3000100, Rows: 99}},
		Deleted:  &outbox.DeletedRange{Partition: "events_outbox_p000000003000200", From: 3000200, To: 3000251, Rows: 51},
		HeldBack: []outbox.HeldBack{lagging},
		Stopped:  "seq 3000251 and later (partition events_outbox_p000000003000200 seq [3000200, 3000300)): consumer lagging-v1 at seq 3000250 has not consumed it",
	})
	require.Equal(t, "dry run: retention 720h: rows ingested before 2026-01-02T03:04:05Z may go; the head row (seq 3000300) is always kept\n"+
		"dry run: would drop partition events_outbox_p000000003000000 seq [3000000, 3000100): 99 rows\n"+
		"dry run: would delete 51 rows seq [3000200, 3000251) from partition events_outbox_p000000003000200\n"+
		"dry run: held back 250 rows older than 720h: consumer lagging-v1 at seq 3000250 has not consumed them\n"+
		"dry run: kept seq 3000251 and later (partition events_outbox_p000000003000200 seq [3000200, 3000300)): consumer lagging-v1 at seq 3000250 has not consumed it\n"+
		"dry run: would remove 1 partitions and 150 rows in all\n", dry)

	lagging.Removed = 250
	forced := text(outbox.PruneReport{
		Executed: true, Forced: true, OlderThan: 30 * 24 * time.Hour, Cutoff: cutoff, Head: 3000300, Consumers: 2, PartitionsCreated: 2,
		Dropped:  []outbox.DroppedPartition{{Name: "events_outbox_p000000003000200", Lo: 3000200, Hi: 3000300, Rows: 49, Elapsed: 1234567}},
		HeldBack: []outbox.HeldBack{lagging},
	})
	require.Equal(t, "retention 720h: rows ingested before 2026-01-02T03:04:05Z may go; the head row (seq 3000300) is always kept\n"+
		"forced: rows are removed even where consumers have not consumed them\n"+
		"created 2 partitions ahead of the head\n"+
		"dropped partition events_outbox_p000000003000200 seq [3000200, 3000300): 49 rows (took 1.23ms)\n"+
		"forced: removed 250 of 250 rows older than 720h that consumer lagging-v1 at seq 3000250 has not consumed\n"+
		"removed 1 partitions and 49 rows in all\n", forced)

	none := text(outbox.PruneReport{Executed: true, OlderThan: 90 * time.Minute, Cutoff: cutoff, Head: 7})
	require.Equal(t, "retention 1h30m: rows ingested before 2026-01-02T03:04:05Z may go; the head row (seq 7) is always kept\n"+
		"no consumers are registered: none holds rows back\n"+
		"nothing to prune\n", none)
}
