package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// pruneBase is where the small test partitions start: the migration made
// [0,1M), [1M,2M), [2M,3M), all empty once the sequence is moved past them.
const pruneBase = 3_000_000

// seedPrunable switches the database to 100-seq partitions from pruneBase on and
// appends old rows (ingested 40 days ago), then fresh ones. Their seq values are
// pruneBase+1 ... pruneBase+old and then up to pruneBase+old+fresh (the head).
func seedPrunable(t *testing.T, pool *pgxpool.Pool, old, fresh int) {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, "UPDATE cn_relay.outbox_partitioning SET partition_size = 100")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "SELECT setval('cn_relay.events_outbox_seq_seq', $1)", pruneBase)
	require.NoError(t, err)
	_, err = outbox.EnsurePartitions(ctx, pool, (old+fresh)/100+2)
	require.NoError(t, err)

	w := outbox.NewWriter(pool, outbox.WriterConfig{})
	oldAt := time.Now().Add(-40 * 24 * time.Hour)
	for i, n := range []int{old, fresh} {
		recs := make([]outbox.Record, n)
		for j := range recs {
			recs[j] = outbox.Record{Op: outbox.OpUpsert, TopicID: "test", Kind: 1, CreatedAt: 1700000000, EventID: fmt.Sprintf("e%d-%d", i, j)}
			if i == 0 {
				recs[j].IngestedAt = oldAt
			}
		}
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil })
		require.NoError(t, err)
	}
	var inDefault int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox_default").Scan(&inDefault))
	require.Zero(t, inDefault, "every row is in a range partition")
}

// outboxLayout lists every range partition with its row count, and the default's.
func outboxLayout(t *testing.T, q outbox.Querier) []string {
	t.Helper()
	ctx := context.Background()
	parts, err := outbox.Partitions(ctx, q)
	require.NoError(t, err)
	var out []string
	for _, p := range append(parts, outbox.Partition{Name: "events_outbox_default"}) {
		var n int64
		require.NoError(t, q.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{"cn_relay", p.Name}.Sanitize()).Scan(&n))
		out = append(out, fmt.Sprintf("%s [%d,%d) %d rows", p.Name, p.Lo, p.Hi, n))
	}
	return out
}

// seqsFrom reads every row from the start of the outbox.
func seqsFrom(t *testing.T, q outbox.Querier, after int64) []int64 {
	t.Helper()
	rows, err := outbox.ReadAfter(context.Background(), q, after, 100000, nil)
	require.NoError(t, err)
	seqs := make([]int64, len(rows))
	for i, r := range rows {
		seqs[i] = r.Seq
	}
	return seqs
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func prunedThrough(t *testing.T, q outbox.Querier) int64 {
	t.Helper()
	var n int64
	require.NoError(t, q.QueryRow(context.Background(), "SELECT pruned_through FROM cn_relay.outbox_retention").Scan(&n))
	return n
}

func partName(lo int64) string { return fmt.Sprintf("events_outbox_p%015d", lo) }

func droppedNames(r outbox.PruneReport) []string {
	var out []string
	for _, d := range r.Dropped {
		out = append(out, d.Name)
	}
	return out
}

func TestPruneKeepsWhatALaggingConsumerNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedPrunable(t, db.Pool, 500, 150) // old: +1..+500, fresh: +501..+650
	const head = pruneBase + 650
	const lagging = pruneBase + 250
	_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('fast-v1', $1), ('lagging-v1', $2)`, head, lagging)
	require.NoError(t, err)

	wantDropped := []string{partName(0), partName(1_000_000), partName(2_000_000), partName(pruneBase), partName(pruneBase + 100)}
	wantHeld := []outbox.HeldBack{{Consumer: "lagging-v1", LastSeq: lagging, Rows: 250}}

	// A dry run reports and changes nothing.
	before := outboxLayout(t, db.Pool)
	dry, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Equal(t, before, outboxLayout(t, db.Pool), "a dry run changes nothing")
	require.False(t, dry.Executed)
	require.Equal(t, outbox.DefaultRetention, dry.OlderThan)
	require.Equal(t, int64(head), dry.Head)
	require.Equal(t, 2, dry.Consumers)
	require.Equal(t, wantDropped, droppedNames(dry))
	require.Equal(t, &outbox.DeletedRange{Partition: partName(pruneBase + 200), From: pruneBase + 200, To: lagging + 1, Rows: 51}, dry.Deleted)
	require.Equal(t, wantHeld, dry.HeldBack)
	require.Equal(t, int64(99+100+51), dry.RowsRemoved())
	require.Contains(t, dry.Stopped, "seq 3000251 and later")

	// Executed, it does what the dry run said and keeps every row the lagging consumer needs.
	done, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.True(t, done.Executed)
	require.Equal(t, wantDropped, droppedNames(done))
	for i, d := range done.Dropped {
		require.Positive(t, d.Elapsed, d.Name)
		d.Elapsed = 0
		require.Equal(t, dry.Dropped[i], d)
	}
	require.Equal(t, dry.Deleted, done.Deleted)
	require.Equal(t, wantHeld, done.HeldBack)
	require.Equal(t, seqRange(lagging+1, head), seqsFrom(t, db.Pool, 0), "exactly the rows past the lagging consumer remain")
	parts, err := outbox.Partitions(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, partName(pruneBase+200), parts[0].Name)
	require.Equal(t, int64(lagging), prunedThrough(t, db.Pool), "the retention horizon is the last removed seq")

	// A second run finds nothing more to do.
	again, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Empty(t, again.Dropped)
	require.Nil(t, again.Deleted)
	require.Equal(t, wantHeld, again.HeldBack)

	// --force removes the old rows the lagging consumer has not consumed, but not the fresh ones.
	forced, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Force: true, Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Equal(t, []string{partName(pruneBase + 200), partName(pruneBase + 300), partName(pruneBase + 400)}, droppedNames(forced))
	require.Equal(t, int64(49), forced.Dropped[0].Rows)
	require.Equal(t, &outbox.DeletedRange{Partition: partName(pruneBase + 500), From: pruneBase + 500, To: pruneBase + 501, Rows: 1}, forced.Deleted)
	require.Equal(t, []outbox.HeldBack{{Consumer: "lagging-v1", LastSeq: lagging, Rows: 250, Removed: 250}}, forced.HeldBack)
	require.Equal(t, seqRange(pruneBase+501, head), seqsFrom(t, db.Pool, 0))
	require.Equal(t, int64(pruneBase+500), prunedThrough(t, db.Pool))
	h, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, int64(head), h)

	forcedAgain, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Force: true, Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Zero(t, forcedAgain.RowsRemoved())
	require.Empty(t, forcedAgain.Dropped)
	require.Empty(t, forcedAgain.HeldBack)
}

func TestPruneNeverRemovesTheHeadRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedPrunable(t, db.Pool, 250, 0) // all old: +1..+250, no consumers
	const head = pruneBase + 250

	// Rows 40 days old are not yet older than 1000h: only the empty partitions go.
	young, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{OlderThan: 1000 * time.Hour, Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Equal(t, []string{partName(0), partName(1_000_000), partName(2_000_000)}, droppedNames(young))
	require.Nil(t, young.Deleted)
	require.Contains(t, young.Stopped, "after the cutoff")
	require.Equal(t, seqRange(pruneBase+1, head), seqsFrom(t, db.Pool, 0))

	all, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Zero(t, all.Consumers)
	require.Equal(t, []string{partName(pruneBase), partName(pruneBase + 100)}, droppedNames(all))
	require.Equal(t, &outbox.DeletedRange{Partition: partName(pruneBase + 200), From: pruneBase + 200, To: head, Rows: 50}, all.Deleted)
	require.Contains(t, all.Stopped, "seq 3000250 and later")
	require.Contains(t, all.Stopped, "it is the head")
	require.Equal(t, []int64{head}, seqsFrom(t, db.Pool, 0), "only the head row remains")
	h, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, int64(head), h)

	again, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Force: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Zero(t, again.RowsRemoved())
	require.Empty(t, again.Dropped)
	require.Equal(t, []int64{head}, seqsFrom(t, db.Pool, 0))
}

func TestConcurrentPrunesDoEachRemovalOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedPrunable(t, db.Pool, 450, 0)

	reports := make([]outbox.PruneReport, 3)
	errs := make([]error, len(reports))
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() {
			reports[i], errs[i] = outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
		})
	}
	wg.Wait()
	var dropped []string
	var deleted int64
	for i, r := range reports {
		require.NoError(t, errs[i])
		dropped = append(dropped, droppedNames(r)...)
		if r.Deleted != nil {
			deleted += r.Deleted.Rows
		}
	}
	require.ElementsMatch(t, []string{partName(0), partName(1_000_000), partName(2_000_000),
		partName(pruneBase), partName(pruneBase + 100), partName(pruneBase + 200), partName(pruneBase + 300)}, dropped)
	require.Equal(t, int64(50), deleted)
	require.Equal(t, []int64{pruneBase + 450}, seqsFrom(t, db.Pool, 0))
}

func TestPruneRejectsNegativeRetention(t *testing.T) {
	t.Parallel()
	_, err := outbox.Prune(context.Background(), nil, outbox.PruneOptions{OlderThan: -time.Hour, Readers: consumer.Offsets{}})
	require.ErrorContains(t, err, "prune outbox: negative retention")
}

func TestPartitionStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedPrunable(t, db.Pool, 150, 10)
	stats, err := outbox.PartitionStats(ctx, db.Pool, true)
	require.NoError(t, err)
	byName := map[string]outbox.PartitionStat{}
	for _, s := range stats {
		byName[s.Name] = s
	}
	require.Equal(t, int64(0), byName[partName(0)].Rows)
	p1 := byName[partName(pruneBase+100)]
	require.Equal(t, int64(61), p1.Rows)
	require.True(t, p1.Exact)
	require.Equal(t, int64(pruneBase+100), p1.FirstSeq)
	require.Equal(t, int64(pruneBase+160), p1.LastSeq)
	require.Greater(t, time.Since(p1.FirstIngestedAt), 39*24*time.Hour, "seq 3000100 is an old row")
	require.Less(t, time.Since(p1.LastIngestedAt), time.Hour, "seq 3000160 is a fresh row")
}

func TestPruneOnAnEmptyOutboxDropsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	before := outboxLayout(t, db.Pool)
	rep, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Force: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Empty(t, rep.Dropped, "partitions at or above the head stay, even empty ones")
	require.Nil(t, rep.Deleted)
	require.Equal(t, before, outboxLayout(t, db.Pool))
}

func TestPruneGivesUpOnABusyOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedPrunable(t, db.Pool, 250, 0)
	before := outboxLayout(t, db.Pool)

	// A long transaction that has read the outbox holds ACCESS SHARE on it.
	reader, err := db.Conn(t).Begin(ctx)
	require.NoError(t, err)
	_, err = reader.Exec(ctx, "SELECT count(*) FROM cn_relay.events_outbox")
	require.NoError(t, err)

	start := time.Now()
	rep, err := outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
	require.ErrorContains(t, err, "prune outbox: drop partition events_outbox_p000000000000000: could not lock the outbox within 500ms in 5 attempts")
	require.Less(t, time.Since(start), 10*time.Second)
	require.Empty(t, rep.Dropped)
	require.Equal(t, before, outboxLayout(t, db.Pool))

	require.NoError(t, reader.Rollback(ctx))
	rep, err = outbox.Prune(ctx, db.Pool, outbox.PruneOptions{Execute: true, Readers: consumer.Offsets{}})
	require.NoError(t, err)
	require.Len(t, rep.Dropped, 5)
}

func TestRemovalsRecheckConsumerOffsets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	_, err := db.Pool.Exec(ctx, "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('a-v1', 500), ('b-v1', 70)")
	require.NoError(t, err)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, outbox.CheckConsumersPast(ctx, tx, consumer.Offsets{}, 70))
	require.ErrorContains(t, outbox.CheckConsumersPast(ctx, tx, consumer.Offsets{}, 71), "consumer b-v1 is at seq 70, below seq 71")
}
