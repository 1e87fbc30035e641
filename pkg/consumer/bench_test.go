package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// BenchmarkDrain compares the consumer runtime draining a backlog with a no-op
// same-transaction handler at batch 1,000 against a raw ReadAfter loop over the
// same rows in the same run. b.N counts rows; both report events/s.
func BenchmarkDrain(b *testing.B) {
	const rows = 200_000
	e := newEnv(b)
	ctx := context.Background()
	recs := make([]outbox.Record, 10_000)
	for i := range recs {
		recs[i] = outbox.Record{Op: outbox.OpUpsert, EventID: fmt.Sprintf("%064x", i), TopicID: "bench", Kind: 1, CreatedAt: 1700000000}
	}
	for range rows / len(recs) {
		if _, err := e.writer.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) { return recs, nil }); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events_outbox"); err != nil {
		b.Fatal(err)
	}
	head, err := outbox.Head(ctx, e.db.Pool)
	if err != nil {
		b.Fatal(err)
	}

	b.Run("raw-select", func(b *testing.B) {
		buf := make([]outbox.Row, 0, 1000)
		read, last := 0, int64(0)
		start := time.Now()
		for read < b.N {
			if buf, err = outbox.ReadAfter(ctx, e.db.Pool, last, 1000, buf); err != nil {
				b.Fatal(err)
			}
			if len(buf) == 0 {
				last = 0
				continue
			}
			last = buf[len(buf)-1].Seq
			read += len(buf)
		}
		b.ReportMetric(float64(read)/time.Since(start).Seconds(), "events/s")
	})

	// Steady-state rate: from the end of the first batch's handler call to the
	// handler call holding the head, so that start-up (registration, lease) is
	// left out as it is for the raw loop.
	b.Run("consumer-noop-tx", func(b *testing.B) {
		read := int64(0)
		var elapsed time.Duration
		for round := 0; read < int64(b.N); round++ {
			var first time.Time
			var firstLast int64
			reached := make(chan time.Time, 1)
			noop := HandlerFunc(func(_ context.Context, _ Tx, rows []outbox.Row) error {
				last := rows[len(rows)-1].Seq
				if first.IsZero() {
					first, firstLast = time.Now(), last
				}
				if last == head {
					select {
					case reached <- time.Now():
					default:
					}
				}
				return nil
			})
			c, err := New(e.db.Pool, noop, Config{Name: fmt.Sprintf("bench-%d", benchRound.Add(1)), BatchSize: 1000, DisableListen: true})
			if err != nil {
				b.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- c.Run(cctx) }()
			var end time.Time
			select {
			case end = <-reached:
			case <-time.After(time.Minute):
				b.Fatalf("round %d: the consumer did not reach head %d within a minute", round, head)
			}
			cancel()
			<-done
			elapsed += end.Sub(first)
			read += head - firstLast
		}
		b.ReportMetric(float64(read)/elapsed.Seconds(), "events/s")
	})
}

var benchRound atomic.Int64

// BenchmarkWakeLatency appends one row every 5 ms (200/s) and measures the time from
// Write returning (commit durable) to the handler seeing the row, with LISTEN and
// with polling only (PollInterval 100 ms). Reports p50 and p99 in ms.
func BenchmarkWakeLatency(b *testing.B) {
	for _, listen := range []bool{true, false} {
		b.Run(fmt.Sprintf("listen=%v", listen), func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			var mu sync.Mutex
			committed := map[string]time.Time{} // when Write returned
			seen := map[string]time.Time{}      // when the handler got the row
			h := HandlerFunc(func(_ context.Context, _ Tx, rows []outbox.Row) error {
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rows {
					seen[r.EventID] = now
				}
				return nil
			})
			cfg := Config{Name: "wake-v1", DisableListen: !listen, PollInterval: 100 * time.Millisecond, MinPollInterval: 100 * time.Millisecond}
			if listen {
				cfg.PollInterval = time.Second
			}
			c, err := New(e.db.Pool, h, cfg)
			if err != nil {
				b.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- c.Run(cctx) }()
			time.Sleep(200 * time.Millisecond) // active and idle

			n := max(b.N, 1000)
			tick := time.NewTicker(5 * time.Millisecond)
			for i := range n {
				<-tick.C
				id := fmt.Sprint("w", i)
				_, err := e.writer.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) {
					return []outbox.Record{{Op: outbox.OpUpsert, EventID: id, TopicID: "t", Kind: 1, CreatedAt: 1}}, nil
				})
				mu.Lock()
				committed[id] = time.Now()
				mu.Unlock()
				if err != nil {
					b.Fatal(err)
				}
			}
			tick.Stop()
			deadline := time.Now().Add(5 * time.Second)
			for {
				mu.Lock()
				got := len(seen)
				mu.Unlock()
				if got >= n || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < n {
				b.Fatalf("only %d of %d rows reached the handler", len(seen), n)
			}
			// A handler can run a hair before Write returns (the NOTIFY goes out just
			// before); such a row counts as 0.
			lat := make([]time.Duration, 0, n)
			for id, at := range committed {
				lat = append(lat, max(seen[id].Sub(at), 0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
		})
	}
}
