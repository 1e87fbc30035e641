package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

const benchRows = 100_000

// BenchmarkBridge drains a backlog of 100,000 outbox rows (9 in 10 upserts
// with a 200-byte event loaded from cn_relay.events, 1 in 10 deletes; 8
// topics) into a fresh stream of an embedded JetStream server (file store),
// through the consumer runtime, and reports rows/s from
// the bridge's start until its offset reaches the head, at three batch sizes.
// Each iteration starts from offset 0 on a new stream.
func BenchmarkBridge(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	ns := startNATS(b)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig)
		SELECT lpad(to_hex(i), 64, '0'), repeat('ab', 32), 1, 1700000000 + i, '[["t","bench"]]', repeat('x', 200), repeat('cd', 64)
		FROM generate_series(1, $1::int) i`, benchRows); err != nil {
		b.Fatal(err)
	}
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	recs := make([]outbox.Record, 10_000)
	for n := 0; n < benchRows; n += len(recs) {
		for i := range recs {
			id := n + i + 1
			recs[i] = outbox.Record{Op: outbox.OpUpsert, EventID: fmt.Sprintf("%064x", id), TopicID: fmt.Sprintf("topic-%d", id%8), Kind: 1, CreatedAt: 1700000000}
			if id%10 == 0 {
				recs[i].Op, recs[i].Reason = outbox.OpDelete, outbox.ReasonNIP09
			}
		}
		if _, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil }); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events_outbox, cn_relay.events"); err != nil {
		b.Fatal(err)
	}
	head, err := outbox.Head(ctx, db.Pool)
	if err != nil {
		b.Fatal(err)
	}

	for _, batch := range []int{500, DefaultBatchSize, 5000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchDrain(b, db, ns, head, batch) })
	}
}

// benchStreams numbers the benchmark's streams: each iteration a new one.
var benchStreams int

func benchDrain(b *testing.B, db *pgtest.DB, ns *natsServer, head int64, batch int) {
	ctx := context.Background()
	var elapsed time.Duration
	var published int64
	for range b.N {
		b.StopTimer()
		if _, err := consumer.Register(ctx, db.Pool, ConsumerName, 0); err != nil {
			b.Fatal(err)
		}
		plan, err := consumer.PlanReset(ctx, db.Pool, ConsumerName, consumer.ResetTarget{Earliest: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := consumer.ExecuteReset(ctx, db.Pool, plan, false, "bench"); err != nil {
			b.Fatal(err)
		}
		cfg := testConfig()
		cfg.Stream, cfg.SubjectPrefix, cfg.DuplicateWindow = fmt.Sprintf("BENCH_%d", benchStreams), fmt.Sprintf("bench.%d", benchStreams), DefaultDuplicateWindow
		benchStreams++
		b.StartTimer()
		start := time.Now()
		rb := startBridge(b, db.Pool, ns.url(), cfg, consumer.Config{BatchSize: batch, DisableListen: true, PollInterval: 5 * time.Millisecond})
		for offset(b, db.Pool) < head {
			time.Sleep(time.Millisecond) // polling the offset, not synchronising
		}
		elapsed += time.Since(start)
		b.StopTimer()
		n := int64(rb.gauge(b, "cn_bridge_published_total"))
		if n != benchRows {
			b.Fatalf("published %d rows, want %d", n, benchRows)
		}
		published += n
		if err := rb.stop(b); err != nil {
			b.Fatal(err)
		}
		if got := streamLastID(b, ns.url(), cfg); got != head {
			b.Fatalf("stream ends at %d, want %d", got, head)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(published)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}
