package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is one test's database with a side-effect table the handlers write through
// the consumer's transaction: applied(event_id, seq, n) where n counts applications.
type env struct {
	db     *pgtest.DB
	writer *outbox.Writer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db := pgtest.New(t)
	_, err := db.Pool.Exec(context.Background(), `CREATE TABLE applied (
		event_id text PRIMARY KEY, seq bigint NOT NULL, n integer NOT NULL DEFAULT 1)`)
	require.NoError(t, err)
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &env{db: db, writer: w}
}

// pool opens a separate pool whose connections carry application_name, so a test
// can kill exactly the consumer's connections.
func (e *env) pool(t *testing.T, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(e.db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 4
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func (e *env) append(t *testing.T, ids ...string) outbox.Range {
	t.Helper()
	recs := make([]outbox.Record, len(ids))
	for i, id := range ids {
		recs[i] = outbox.Record{Op: outbox.OpUpsert, EventID: id, TopicID: "t", Kind: 1, CreatedAt: 1}
	}
	r, err := e.writer.Write(context.Background(), func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil })
	require.NoError(t, err)
	return r
}

func (e *env) head(t *testing.T) int64 {
	h, err := outbox.Head(context.Background(), e.db.Pool)
	require.NoError(t, err)
	return h
}

func (e *env) lastSeq(t *testing.T, name string) int64 {
	var last int64
	err := e.db.Pool.QueryRow(context.Background(), "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", name).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1
	}
	require.NoError(t, err)
	return last
}

func (e *env) applied(t *testing.T) map[string]int {
	rows, err := e.db.Pool.Query(context.Background(), "SELECT event_id, n FROM applied")
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		out[id] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// record is the same-transaction handler: one applied row per outbox row; a second
// application of the same event increments n, which the tests forbid.
func record(ctx context.Context, tx Tx, rows []outbox.Row) error {
	ids := make([]string, len(rows))
	seqs := make([]int64, len(rows))
	for i, r := range rows {
		ids[i], seqs[i] = r.EventID, r.Seq
	}
	_, err := tx.Exec(ctx, `INSERT INTO applied (event_id, seq) SELECT * FROM unnest($1::text[], $2::bigint[])
		ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, ids, seqs)
	return err
}

type running struct {
	c      *Consumer
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, pool *pgxpool.Pool, h Handler, cfg Config) *running {
	t.Helper()
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = time.Second
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 5 * time.Millisecond
		cfg.RetryMax = 50 * time.Millisecond
	}
	c, err := New(pool, h, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *running) stop() error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(10 * time.Second):
		return errors.New("consumer did not stop within 10s")
	}
}

func (e *env) waitCaughtUp(t *testing.T, name string, d time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return e.lastSeq(t, name) == e.head(t) }, d, 10*time.Millisecond,
		"consumer %s did not reach head", name)
}

// TestCrashAndReplay: writers append while the consumer is repeatedly cancelled and
// has its connections killed at random points; the same-transaction side effects
// end with exactly the committed rows, once each.
func TestCrashAndReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const name = "crash-v1"

	var mu sync.Mutex
	committed := map[string]bool{}
	var wg sync.WaitGroup
	stopWriters := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; ; n++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				recs := make([]outbox.Record, 1+rng.IntN(20))
				for i := range recs {
					recs[i] = outbox.Record{Op: outbox.OpUpsert, EventID: fmt.Sprintf("w%d-%d-%d", w, n, i), TopicID: "t", Kind: 1, CreatedAt: 1}
				}
				rollback := rng.IntN(10) == 0
				_, err := e.writer.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) {
					if rollback {
						return nil, errors.New("rolled back on purpose")
					}
					return recs, nil
				})
				if rollback {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range recs {
					committed[r.EventID] = true
				}
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
			}
		})
	}

	pool := e.pool(t, "crash-consumer")
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := Config{Name: name, BatchSize: 1 + rng.IntN(200), OwnerID: "crash-test", MinPollInterval: 5 * time.Millisecond, PollInterval: 50 * time.Millisecond}
	kills, cancels := 0, 0
	for round := range 30 {
		cfg.BatchSize = 1 + rng.IntN(200)
		r := start(t, pool, HandlerFunc(record), cfg)
		time.Sleep(time.Duration(10+rng.IntN(60)) * time.Millisecond)
		if round%2 == 0 {
			_, err := e.db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = 'crash-consumer'`)
			require.NoError(t, err)
			kills++
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		require.NoError(t, r.stop())
		cancels++
	}
	close(stopWriters)
	wg.Wait()

	r := start(t, pool, HandlerFunc(record), cfg)
	e.waitCaughtUp(t, name, 30*time.Second)
	require.NoError(t, r.stop())

	got := e.applied(t)
	require.Len(t, got, len(committed), "applied rows == committed rows")
	for id := range committed {
		require.Equal(t, 1, got[id], "event %s applied %d times", id, got[id])
	}
	t.Logf("%d committed rows, %d kills, %d cancels", len(committed), kills, cancels)
}

func TestStandbyTakesOverWhenActiveDies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const name = "takeover-v1"
	poolA := e.pool(t, "instance-a")
	a := start(t, poolA, HandlerFunc(record), Config{Name: name, OwnerID: "a", LeaseTTL: time.Second})
	e.append(t, "e1")
	e.waitCaughtUp(t, name, 5*time.Second)

	b := start(t, e.pool(t, "instance-b"), HandlerFunc(record), Config{Name: name, OwnerID: "b", LeaseTTL: time.Second})
	time.Sleep(300 * time.Millisecond)
	st, err := ReadStatus(context.Background(), e.db.Pool)
	require.NoError(t, err)
	require.Equal(t, "a", *st.Consumers[0].Owner, "b waits as a standby")

	// A dies without releasing its lease: its database connections are gone for good.
	poolA.Close()
	died := time.Now()
	require.Eventually(t, func() bool {
		st, err := ReadStatus(context.Background(), e.db.Pool)
		return err == nil && st.Consumers[0].Owner != nil && *st.Consumers[0].Owner == "b"
	}, 5*time.Second, 20*time.Millisecond)
	t.Logf("takeover %v after the active instance died (lease TTL 1s)", time.Since(died).Round(time.Millisecond))

	e.append(t, "e2", "e3")
	e.waitCaughtUp(t, name, 5*time.Second)
	got := e.applied(t)
	require.Equal(t, map[string]int{"e1": 1, "e2": 1, "e3": 1}, got)
	_ = a.stop()
	require.NoError(t, b.stop())

	// A clean stop releases the lease: the next instance starts at once.
	c := start(t, e.db.Pool, HandlerFunc(record), Config{Name: name, OwnerID: "c", LeaseTTL: 30 * time.Second})
	e.append(t, "e4")
	e.waitCaughtUp(t, name, 2*time.Second)
	require.NoError(t, c.stop())
}

// TestFencedZombieCannotCommit: an instance that lost its lease while paused has its
// offset commit refused, and its same-transaction effects roll back with it.
func TestFencedZombieCannotCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const name = "fence-v1"
	r := e.append(t, "x1", "x2")
	rows, err := outbox.ReadAfter(ctx, e.db.Pool, 0, 10, nil)
	require.NoError(t, err)

	mk := func(owner string) *Consumer {
		c, err := New(e.db.Pool, HandlerFunc(record), Config{Name: name, OwnerID: owner, LeaseTTL: time.Second})
		require.NoError(t, err)
		require.NoError(t, c.register(ctx))
		return c
	}
	zombie, successor := mk("zombie"), mk("successor")
	zl, ok, err := zombie.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = successor.tryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, ok, "the lease is held")

	// The zombie pauses past its lease; the successor takes over.
	_, err = e.db.Pool.Exec(ctx, "UPDATE cn_relay.consumer_offsets SET lease_expires_at = now() - interval '1 second' WHERE consumer = $1", name)
	require.NoError(t, err)
	sl, ok, err := successor.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, sl.generation, zl.generation)

	err = zombie.commitBatch(ctx, zl.generation, zl.lastSeq, rows, nil, nil)
	require.ErrorIs(t, err, errLeaseLost)
	require.ErrorIs(t, zombie.renew(ctx, zl.generation), errLeaseLost)
	require.Empty(t, e.applied(t), "the zombie's effects rolled back")
	require.EqualValues(t, 0, e.lastSeq(t, name))

	require.NoError(t, successor.commitBatch(ctx, sl.generation, sl.lastSeq, rows, nil, nil))
	require.Equal(t, r.Last, e.lastSeq(t, name))
	require.Equal(t, map[string]int{"x1": 1, "x2": 1}, e.applied(t))
}

// TestWakesAfterConnectionLossWhileIdle: with polling effectively off, killing every
// consumer connection while idle must not stop the next append from waking it.
func TestWakesAfterConnectionLossWhileIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const name = "idle-v1"
	pool := e.pool(t, "idle-consumer")
	r := start(t, pool, HandlerFunc(record), Config{Name: name, PollInterval: time.Hour, MinPollInterval: time.Hour})
	e.append(t, "before")
	e.waitCaughtUp(t, name, 5*time.Second)

	tag, err := e.db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'idle-consumer'`)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected())
	time.Sleep(200 * time.Millisecond)

	e.append(t, "after")
	e.waitCaughtUp(t, name, 5*time.Second)
	require.Equal(t, map[string]int{"before": 1, "after": 1}, e.applied(t))
	require.NoError(t, r.stop())
}

// failing fails every row whose event id is poisoned until healed.
type failing struct {
	poisoned string
	healed   atomic.Bool
	calls    atomic.Int64
}

func (f *failing) Handle(ctx context.Context, tx Tx, rows []outbox.Row) error {
	f.calls.Add(1)
	for _, r := range rows {
		if r.EventID == f.poisoned && !f.healed.Load() {
			return fmt.Errorf("cannot apply %s", r.EventID)
		}
	}
	return record(ctx, tx, rows)
}

func TestParkPolicyAndDeadLetterRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const name = "park-v1"
	h := &failing{poisoned: "bad"}
	r := start(t, e.db.Pool, h, Config{Name: name, Policy: PolicyPark, MaxAttempts: 3, MinPollInterval: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	e.append(t, "a", "bad", "c")
	e.append(t, "d")
	e.waitCaughtUp(t, name, 10*time.Second)
	require.Equal(t, map[string]int{"a": 1, "c": 1, "d": 1}, e.applied(t))

	dls, err := ListDeadLetters(ctx, e.db.Pool, name, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "bad", dls[0].EventID)
	require.Equal(t, 3, dls[0].Attempts)
	require.Contains(t, dls[0].Error, "cannot apply bad")

	// A retry while still broken keeps it parked with one more attempt.
	n, err := RequestRetry(ctx, e.db.Pool, name, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Eventually(t, func() bool {
		dls, err := ListDeadLetters(ctx, e.db.Pool, name, 10)
		return err == nil && len(dls) == 1 && dls[0].RetryRequestedAt == nil && dls[0].Attempts == 4
	}, 5*time.Second, 10*time.Millisecond)

	h.healed.Store(true)
	_, err = RequestRetry(ctx, e.db.Pool, name, []int64{dls[0].Seq})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		dls, err := ListDeadLetters(ctx, e.db.Pool, name, 10)
		return err == nil && len(dls) == 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]int{"a": 1, "bad": 1, "c": 1, "d": 1}, e.applied(t))
	require.NoError(t, r.stop())

	_, err = ListDeadLetters(ctx, e.db.Pool, "nobody-v1", 10)
	require.ErrorIs(t, err, ErrUnknownConsumer)
}

func TestHaltPolicyStopsBeforeTheRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const name = "halt-v1"
	e.append(t, "a")
	bad := e.append(t, "bad")
	e.append(t, "c")
	h := &failing{poisoned: "bad"}
	r := start(t, e.db.Pool, h, Config{Name: name, Policy: PolicyHalt, MaxAttempts: 3, BatchSize: 10})
	select {
	case err := <-r.done:
		close(r.done)
		require.ErrorIs(t, err, ErrHalted)
		require.Contains(t, err.Error(), fmt.Sprintf("seq %d", bad.Last))
	case <-time.After(10 * time.Second):
		t.Fatal("consumer did not halt")
	}
	require.Equal(t, map[string]int{"a": 1}, e.applied(t))
	require.Equal(t, bad.Last-1, e.lastSeq(t, name), "the offset stays just before the failing row")
	// 3 attempts of the batch, then 1 for "a" alone and 3 for "bad" alone.
	require.EqualValues(t, 7, h.calls.Load())
	st, err := ReadStatus(context.Background(), e.db.Pool)
	require.NoError(t, err)
	require.Nil(t, st.Consumers[0].Owner, "a halted consumer releases its lease")
	require.True(t, st.Consumers[0].Halted, "and says so in its offset row")
	require.Contains(t, st.Consumers[0].HaltedReason, fmt.Sprintf("seq %d", bad.Last))
}

func TestResetOffset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const name = "reset-v1"
	e.append(t, "a", "b")
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	second := e.append(t, "c", "d")

	r := start(t, e.db.Pool, HandlerFunc(record), Config{Name: name, MinPollInterval: 5 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	e.waitCaughtUp(t, name, 5*time.Second)

	zero := int64(0)
	plan, err := PlanReset(ctx, e.db.Pool, name, ResetTarget{Seq: &zero})
	require.NoError(t, err)
	require.EqualValues(t, 4, plan.Replay)
	require.NotNil(t, plan.Owner)
	require.ErrorIs(t, ExecuteReset(ctx, e.db.Pool, plan, false, "test"), ErrActive, "refused while active")
	require.Equal(t, second.Last, e.lastSeq(t, name), "a refused reset changes nothing")
	require.NoError(t, r.stop())

	// Dry run: planning alone changes nothing.
	plan, err = PlanReset(ctx, e.db.Pool, name, ResetTarget{Seq: &zero})
	require.NoError(t, err)
	require.Nil(t, plan.Owner)
	require.Equal(t, second.Last, e.lastSeq(t, name))

	// To a time: the first row ingested after it is where the replay starts.
	tp, err := PlanReset(ctx, e.db.Pool, name, ResetTarget{Time: &mid})
	require.NoError(t, err)
	require.Equal(t, second.First-1, tp.To)
	require.EqualValues(t, 2, tp.Replay)

	// To 0 and run: everything is applied once more (the handler counts it).
	require.NoError(t, ExecuteReset(ctx, e.db.Pool, plan, false, "tester@host"))
	require.EqualValues(t, 0, e.lastSeq(t, name))
	r = start(t, e.db.Pool, HandlerFunc(record), Config{Name: name})
	e.waitCaughtUp(t, name, 5*time.Second)
	require.NoError(t, r.stop())
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 2, "d": 2}, e.applied(t))

	var who string
	var from, to int64
	require.NoError(t, e.db.Pool.QueryRow(ctx, "SELECT requested_by, from_seq, to_seq FROM cn_relay.consumer_offset_resets WHERE consumer = $1", name).Scan(&who, &from, &to))
	require.Equal(t, "tester@host", who)
	require.Equal(t, second.Last, from)
	require.EqualValues(t, 0, to)

	// Latest skips; below the retention horizon clamps with a warning.
	lp, err := PlanReset(ctx, e.db.Pool, name, ResetTarget{Latest: true})
	require.NoError(t, err)
	require.Equal(t, second.Last, lp.To)
	_, err = e.db.Pool.Exec(ctx, "UPDATE cn_relay.outbox_retention SET pruned_through = $1", second.First-1)
	require.NoError(t, err)
	cp, err := PlanReset(ctx, e.db.Pool, name, ResetTarget{Seq: &zero})
	require.NoError(t, err)
	require.True(t, cp.Clamped)
	require.Equal(t, second.First-1, cp.To)
	require.Equal(t, second.First-1, cp.Horizon)
	require.Zero(t, cp.Requested)
	require.Equal(t, second.Last, cp.Head)

	_, err = PlanReset(ctx, e.db.Pool, "nobody-v1", ResetTarget{Latest: true})
	require.ErrorIs(t, err, ErrUnknownConsumer)
}

func TestStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.append(t, "a", "b", "c")
	_, err := e.db.Pool.Exec(ctx, "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('lagging-v1', 1), ('done-v1', $1)", e.head(t))
	require.NoError(t, err)
	st, err := ReadStatus(ctx, e.db.Pool)
	require.NoError(t, err)
	require.Equal(t, e.head(t), st.HeadSeq)
	require.Len(t, st.Consumers, 2)
	require.Equal(t, "done-v1", st.Consumers[0].Consumer)
	require.Zero(t, st.Consumers[0].Backlog)
	require.Zero(t, st.Consumers[0].LagSeconds)
	require.Equal(t, "lagging-v1", st.Consumers[1].Consumer)
	require.Equal(t, e.head(t)-1, st.Consumers[1].Backlog)
	require.Positive(t, st.Consumers[1].LagSeconds)
	require.Nil(t, st.Consumers[1].Owner)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{Name: "index-v1"}.Validate())
	for _, bad := range []Config{{Name: ""}, {Name: "Index"}, {Name: "x", Policy: "skip"}, {Name: "x", BatchSize: -1}, {Name: "x", LeaseTTL: time.Millisecond}} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
}
