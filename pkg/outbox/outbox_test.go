package outbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func rec(id string) Record {
	return Record{Op: OpUpsert, EventID: id, TopicID: "test", Kind: 1, CreatedAt: 1700000000}
}

// follower is the simplest correct consumer: it reads seq > last and advances last.
type follower struct {
	last int64
	got  []Row
}

func (f *follower) poll(t testing.TB, q Querier) {
	t.Helper()
	for {
		rows, err := ReadAfter(context.Background(), q, f.last, 1000, nil)
		require.NoError(t, err)
		if len(rows) == 0 {
			return
		}
		for _, r := range rows {
			require.Greater(t, r.Seq, f.last, "seq must strictly increase")
			f.last = r.Seq
			f.got = append(f.got, r)
		}
	}
}

func (f *follower) ids() []string {
	out := make([]string, len(f.got))
	for i, r := range f.got {
		out[i] = r.EventID
	}
	return out
}

func TestSequenceCacheIsOne(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var cache int64
	err := db.Pool.QueryRow(context.Background(), `
		SELECT cache_size FROM pg_sequences
		WHERE schemaname = 'cn_relay' AND sequencename = 'events_outbox_seq_seq'`).Scan(&cache)
	require.NoError(t, err)
	require.EqualValues(t, 1, cache)
}

// outOfOrderCommit runs the race the append lock prevents (doc.go): T1 appends and stays open, T2
// appends and commits, a follower polls in between, then T1 commits. It returns what
// the follower delivered and what was committed. appendFn nil means appending without
// the lock, to show the failure the lock prevents.
func outOfOrderCommit(t *testing.T, pool *pgxpool.Pool, appendFn func(context.Context, Batcher, []Record) (Range, error)) (delivered, committed []string) {
	lock := appendFn != nil
	if appendFn == nil {
		appendFn = func(ctx context.Context, tx Batcher, recs []Record) (Range, error) {
			return appendRecords(ctx, tx, recs, false)
		}
	}
	ctx := context.Background()
	f := &follower{}

	t1, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer t1.Rollback(ctx)
	_, err = appendFn(ctx, t1, []Record{rec("t1")})
	require.NoError(t, err)

	t2done := make(chan error, 1)
	go func() {
		t2, err := pool.Begin(ctx)
		if err != nil {
			t2done <- err
			return
		}
		defer t2.Rollback(ctx)
		if _, err := appendFn(ctx, t2, []Record{rec("t2")}); err != nil {
			t2done <- err
			return
		}
		t2done <- t2.Commit(ctx)
	}()

	if lock {
		// T2 must be parked on the outbox lock while T1 is open.
		require.Eventually(t, func() bool {
			var waiting bool
			err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
				WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting)
			return err == nil && waiting
		}, 5*time.Second, 5*time.Millisecond)
		select {
		case err := <-t2done:
			t.Fatalf("T2 finished while T1 held the outbox lock: %v", err)
		default:
		}
	} else {
		require.NoError(t, <-t2done)
	}
	f.poll(t, pool) // with the lock: sees nothing; without: sees t2 and moves past t1's seq

	require.NoError(t, t1.Commit(ctx))
	if lock {
		require.NoError(t, <-t2done)
	}
	f.poll(t, pool)
	return f.ids(), []string{"t1", "t2"}
}

func TestOutOfOrderCommitDeliversEveryRow(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	delivered, committed := outOfOrderCommit(t, db.Pool, Append)
	require.ElementsMatch(t, committed, delivered)
}

// TestOutOfOrderCommitLosesRowsWithoutLock proves the test above can fail: the same
// race without the advisory lock makes the follower skip T1's row for good.
func TestOutOfOrderCommitLosesRowsWithoutLock(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	delivered, _ := outOfOrderCommit(t, db.Pool, nil)
	require.Equal(t, []string{"t2"}, delivered, "without the lock the follower must have lost t1")
}

func TestRolledBackAppendLeavesGapThatDoesNotStall(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	f := &follower{}

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	rolled, err := Append(ctx, tx, []Record{rec("gone1"), rec("gone2")})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))

	w := NewWriter(db.Pool, WriterConfig{})
	kept, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return []Record{rec("kept")}, nil })
	require.NoError(t, err)
	require.Greater(t, kept.First, rolled.Last, "the rolled-back seqs stay a gap")

	f.poll(t, db.Pool)
	require.Equal(t, []string{"kept"}, f.ids())
	require.Equal(t, kept.Last, f.last)

	more, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return []Record{rec("after")}, nil })
	require.NoError(t, err)
	f.poll(t, db.Pool)
	require.Equal(t, []string{"kept", "after"}, f.ids())
	require.Equal(t, more.Last, f.last)
}

func TestAppendKeepsSliceOrderAndValidates(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	w := NewWriter(db.Pool, WriterConfig{})

	ingested := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []Record{
		rec("a"),
		{Op: OpDelete, EventID: "b", TopicID: "jp", Kind: 30023, CreatedAt: 5, IngestedAt: ingested,
			EffectiveKey: "30023:pk:d", Reason: "nip09"},
		rec("c"),
	}
	r, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return recs, nil })
	require.NoError(t, err)
	require.Equal(t, 3, r.Count)
	require.Equal(t, r.First+2, r.Last)

	rows, err := ReadAfter(ctx, db.Pool, 0, 10, nil)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	for i, row := range rows {
		require.Equal(t, recs[i].EventID, row.EventID)
		require.Equal(t, r.First+int64(i), row.Seq)
	}
	require.Equal(t, Row{Seq: r.First + 1, Op: OpDelete, EventID: "b", TopicID: "jp", Kind: 30023, CreatedAt: 5,
		IngestedAt: ingested, EffectiveKey: "30023:pk:d", Reason: "nip09"}, withUTC(rows[1]))

	head, err := Head(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, r.Last, head)

	limited, err := ReadAfter(ctx, db.Pool, r.First, 1, nil)
	require.NoError(t, err)
	require.Len(t, limited, 1)
	require.Equal(t, r.First+1, limited[0].Seq)

	for _, bad := range []Record{{Op: "upsurt", EventID: "x", TopicID: "t"}, {Op: OpUpsert, TopicID: "t"}, {Op: OpUpsert, EventID: "x"}} {
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return []Record{bad}, nil })
		require.ErrorIs(t, err, ErrInvalidRecord)
	}
	failing := errors.New("handler failed")
	_, err = w.Write(ctx, func(ctx context.Context, tx pgx.Tx) ([]Record, error) {
		_, err := Append(ctx, tx, []Record{rec("half")})
		require.NoError(t, err)
		return nil, failing
	})
	require.ErrorIs(t, err, failing)
	head2, err := Head(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, head, head2, "a failed write appends nothing")
}

func withUTC(r Row) Row {
	r.IngestedAt = r.IngestedAt.UTC()
	return r
}

// TestSoakConcurrentWriters: 8 writers with random delays and 10% rollbacks against
// one follower; what the follower delivers must be exactly what was committed, in
// strictly increasing seq order, without duplicates. 20,000 rows (make
// test-long); 2,000 with -short (make test).
func TestSoakConcurrentWriters(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	const writers = 8
	target := 20000
	if testing.Short() {
		target = 2000
	}

	var (
		mu        sync.Mutex
		committed = map[string]bool{}
		rolled    = map[string]bool{}
		total     int
	)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for n := 0; ; n++ {
				mu.Lock()
				enough := total >= target
				mu.Unlock()
				if enough {
					return
				}
				size := 1 + rng.IntN(40)
				recs := make([]Record, size)
				for i := range recs {
					recs[i] = rec(fmt.Sprintf("w%d-%d-%d", w, n, i))
				}
				tx, err := db.Pool.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond) // work before the append
				if _, err := Append(ctx, tx, recs); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // the window rule 1 is about
				rollback := rng.IntN(10) == 0
				if rollback {
					err = tx.Rollback(ctx)
				} else {
					err = tx.Commit(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range recs {
					if rollback {
						rolled[r.EventID] = true
					} else {
						committed[r.EventID] = true
					}
				}
				if !rollback {
					total += size
				}
				mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	f := &follower{}
	seen := map[string]bool{}
	pollOnce := func() {
		before := len(f.got)
		f.poll(t, db.Pool)
		for _, r := range f.got[before:] {
			require.False(t, seen[r.EventID], "duplicate delivery of %s", r.EventID)
			seen[r.EventID] = true
		}
	}
	// The head is max(seq) in every snapshot, whatever commits or rolls back.
	headChecks := 0
	checkHead := func() {
		var head, max int64
		require.NoError(t, db.Pool.QueryRow(ctx, "SELECT ("+HeadSQL+"), (SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox)").Scan(&head, &max))
		require.Equal(t, max, head, "the head is not the newest committed row")
		headChecks++
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			pollOnce()
			checkHead()
		}
	}
	pollOnce()
	checkHead()
	t.Logf("head checked in %d snapshots", headChecks)

	require.GreaterOrEqual(t, len(committed), target)
	require.NotEmpty(t, rolled)
	require.Equal(t, len(committed), len(seen))
	for id := range committed {
		require.True(t, seen[id], "committed %s never delivered", id)
	}
	for id := range rolled {
		require.False(t, seen[id], "rolled back %s delivered", id)
	}
}

func listen(t *testing.T, db *pgtest.DB) *pgx.Conn {
	c := db.Conn(t)
	_, err := c.Exec(context.Background(), "LISTEN "+Channel)
	require.NoError(t, err)
	return c
}

func waitNotification(c *pgx.Conn, d time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := c.WaitForNotification(ctx)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(n.Payload, 10, 64)
}

func runWriter(t *testing.T, w *Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-errc) })
}

func TestNotifyOnlyAfterCommit(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	l := listen(t, db)
	w := NewWriter(db.Pool, WriterConfig{})
	runWriter(t, w)

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	r, err := Append(ctx, tx, []Record{rec("x")})
	require.NoError(t, err)
	_, err = waitNotification(l, 100*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no notification while the append is uncommitted")
	require.NoError(t, tx.Commit(ctx))
	w.Notify(r.Last)
	seq, err := waitNotification(l, 5*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, seq, r.Last)

	// Through Write: whenever a notification arrives, the seq it names is visible.
	for i := range 20 {
		r, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) {
			return []Record{rec(fmt.Sprint("w", i))}, nil
		})
		require.NoError(t, err)
		seq, err := waitNotification(l, 5*time.Second)
		require.NoError(t, err)
		require.GreaterOrEqual(t, seq, r.Last)
		rows, err := ReadAfter(ctx, db.Pool, seq-1, 1, nil)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, seq, rows[0].Seq, "the notified seq is committed and visible")
	}
}

func TestNotifyBurstIsCoalesced(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	l := listen(t, db)
	// Long enough that the burst is dense against it: 1,000 durable appends
	// take 0.5-5 s here (each waits for its WAL flush), so at most one
	// notification per interval is far fewer than one per append, unless the
	// burst takes over 25 s.
	const interval = 100 * time.Millisecond
	w := NewWriter(db.Pool, WriterConfig{NotifyInterval: interval})
	runWriter(t, w)

	const appends = 1000
	start := time.Now()
	var wg sync.WaitGroup
	var maxSeq int64
	var mu sync.Mutex
	for g := range 8 {
		wg.Go(func() {
			for i := range appends / 8 {
				r, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) {
					return []Record{rec(fmt.Sprintf("%d-%d", g, i))}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				maxSeq = max(maxSeq, r.Last)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	count, last := 0, int64(0)
	for last < maxSeq {
		seq, err := waitNotification(l, 5*time.Second)
		require.NoError(t, err, "the final head must be announced")
		require.GreaterOrEqual(t, seq, last, "payloads never go backwards")
		last = seq
		count++
	}
	t.Logf("%d appends in %v produced %d notifications", appends, elapsed, count)
	require.Equal(t, maxSeq, last)
	require.LessOrEqual(t, count, appends/4, "far fewer notifications than appends")
	require.LessOrEqual(t, count, int((time.Since(start))/interval)+2, "at most one notification per interval")
}

func TestPartitionsExtendAndAbsorbDefault(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()

	parts, err := Partitions(ctx, db.Pool)
	require.NoError(t, err)
	require.Len(t, parts, 3, "the migration prepares the head partition and two ahead")

	// Jump close to the end of the prepared range with small partitions from here on.
	end := parts[len(parts)-1].Hi
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.outbox_partitioning SET partition_size = 100")
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "SELECT setval('cn_relay.events_outbox_seq_seq', $1)", end-10)
	require.NoError(t, err)

	w := NewWriter(db.Pool, WriterConfig{}) // not running: nothing extends the partitions
	var ids []string
	for i := range 5 {
		recs := make([]Record, 50)
		for j := range recs {
			recs[j] = rec(fmt.Sprintf("p%d-%d", i, j))
			ids = append(ids, recs[j].EventID)
		}
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return recs, nil })
		require.NoError(t, err)
	}
	var inDefault int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox_default").Scan(&inDefault))
	require.Equal(t, 241, inDefault, "rows past the prepared range fall into the default partition")

	created, err := EnsurePartitions(ctx, db.Pool, 2)
	require.NoError(t, err)
	require.Equal(t, 5, created) // 3 partitions of 100 now hold rows, 2 ahead
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox_default").Scan(&inDefault))
	require.Zero(t, inDefault)
	again, err := EnsurePartitions(ctx, db.Pool, 2)
	require.NoError(t, err)
	require.Zero(t, again, "idempotent")

	f := &follower{}
	f.poll(t, db.Pool)
	require.Equal(t, ids, f.ids())

	// A running writer extends the partitions by itself as the head moves on.
	runWriter(t, w)
	for i := range 6 {
		recs := make([]Record, 50)
		for j := range recs {
			recs[j] = rec(fmt.Sprintf("q%d-%d", i, j))
		}
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return recs, nil })
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		parts, err := Partitions(ctx, db.Pool)
		head, err2 := Head(ctx, db.Pool)
		return err == nil && err2 == nil && parts[len(parts)-1].Hi > head+100
	}, 30*time.Second, 10*time.Millisecond, "the writer extends the partitions in the background (slow on a loaded machine)")
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox_default").Scan(&inDefault))
	require.Zero(t, inDefault)
}
