package outbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/pgtest"
)

// BenchmarkAppend measures appended events/s for W concurrent writers committing T
// events per transaction, with the ordering lock and without it (the baseline that
// loses rows; see TestOutOfOrderCommitLosesRowsWithoutLock). b.N counts events.
func BenchmarkAppend(b *testing.B) {
	for _, perTx := range []int{1, 100} {
		for _, writers := range []int{1, 8, 32} {
			for _, lock := range []bool{false, true} {
				name := fmt.Sprintf("perTx=%d/writers=%d/lock=%v", perTx, writers, lock)
				b.Run(name, func(b *testing.B) { benchAppend(b, writers, perTx, lock) })
			}
		}
	}
}

func benchAppend(b *testing.B, writers, perTx int, lock bool) {
	db := pgtest.New(b)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(writers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	w := NewWriter(pool, WriterConfig{disableAppendLock: !lock})
	recs := make([]Record, perTx)
	for i := range recs {
		recs[i] = Record{Op: OpUpsert, EventID: fmt.Sprintf("%064x", i), TopicID: "bench", Kind: 1, CreatedAt: 1700000000}
	}
	txs := int64((b.N + perTx - 1) / perTx)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for next.Add(1) <= txs {
				if _, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return recs, nil }); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(txs*int64(perTx))/elapsed.Seconds(), "events/s")
}

// BenchmarkDrain measures how fast a follower reads committed rows in batches of
// 1,000 (ReadAfter with the last seq as parameter). b.N counts events read.
func BenchmarkDrain(b *testing.B) {
	const rows, batch = 200_000, 1000
	db := pgtest.New(b)
	ctx := context.Background()
	w := NewWriter(db.Pool, WriterConfig{})
	recs := make([]Record, 10_000)
	for i := range recs {
		recs[i] = Record{Op: OpUpsert, EventID: fmt.Sprintf("%064x", i), TopicID: "bench", Kind: 1,
			CreatedAt: 1700000000, EffectiveKey: "1:" + fmt.Sprintf("%064x", i)}
	}
	for range rows / len(recs) {
		if _, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]Record, error) { return recs, nil }); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events_outbox"); err != nil {
		b.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()

	buf := make([]Row, 0, batch)
	var last int64
	read := 0
	b.ResetTimer()
	start := time.Now()
	for read < b.N {
		buf, err = ReadAfter(ctx, conn, last, batch, buf)
		if err != nil {
			b.Fatal(err)
		}
		if len(buf) == 0 {
			last = 0 // wrap around: the drain rate is what is measured
			continue
		}
		last = buf[len(buf)-1].Seq
		read += len(buf)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(read)/elapsed.Seconds(), "events/s")
}
