package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// The commit -> remote consumer applied benchmark's load.
const (
	latencyFor     = 25 * time.Second // measured
	latencyWorkers = 8                // concurrent store.Ingest callers
)

// latencyRate is the offered load in events/s: 2,000 (the figure), or
// CN_BENCH_LATENCY_RATE.
var latencyRate = func() int {
	if n, err := strconv.Atoi(os.Getenv("CN_BENCH_LATENCY_RATE")); err == nil && n > 0 {
		return n
	}
	return 2000
}()

// appliedRecorder is a minimal remote consumer: it writes each upsert's event
// id and seq into its own database in the transaction that moves its offset,
// and stamps the time when that transaction has committed (AfterCommit).
type appliedRecorder struct {
	pending []string // event ids of the batch being committed
	pstream []uint64 // and their stream sequences
	mu      sync.Mutex
	applied map[string]time.Time
	sseq    map[string]uint64
}

func (h *appliedRecorder) HandleMessages(ctx context.Context, tx consumer.Tx, msgs []consumer.Message) error {
	ids, seqs := make([]string, 0, len(msgs)), make([]int64, 0, len(msgs))
	for _, m := range msgs {
		if m.Op == outbox.OpUpsert {
			ids, seqs = append(ids, m.EventID), append(seqs, m.Seq)
			h.pstream = append(h.pstream, m.StreamSeq)
		}
	}
	h.pstream = h.pstream[len(h.pstream)-len(ids):]
	if _, err := tx.Exec(ctx, `INSERT INTO bench_applied (event_id, seq) SELECT * FROM unnest($1::text[], $2::bigint[])`, ids, seqs); err != nil {
		return err
	}
	h.pending = ids
	return nil
}

func (h *appliedRecorder) AfterCommit() {
	now := time.Now()
	h.mu.Lock()
	for i, id := range h.pending {
		h.applied[id] = now
		h.sseq[id] = h.pstream[i]
	}
	h.mu.Unlock()
	h.pending, h.pstream = nil, h.pstream[:0]
}

func (h *appliedRecorder) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.applied)
}

// BenchmarkCommitToRemoteApplied measures, for each event, the time from the
// relay's commit (store.Ingest returning: the event and its outbox row are
// committed) to a remote stream consumer's commit of its effect and offset in
// its own database, through the bridge (defaults: LISTEN/NOTIFY, batch 2000)
// and an embedded JetStream server (file store). Events are offered at a
// steady latencyRate for latencyFor by latencyWorkers concurrent
// store.Ingest calls of one event each. Run it explicitly:
//
//	go test -run '^$' -bench CommitToRemoteApplied -benchtime 1x ./internal/bridge/
func BenchmarkCommitToRemoteApplied(b *testing.B) {
	ctx := context.Background()
	primary := pgtest.New(b)
	remote := pgtest.New(b)
	if _, err := remote.Pool.Exec(ctx, `CREATE TABLE bench_applied (event_id text PRIMARY KEY, seq bigint NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	ns := startNATS(b)
	// The relay's store and its outbox writer, whose Run sends the NOTIFY that
	// wakes the bridge (without it the bridge only polls: 50 ms to 1 s).
	w := outbox.NewWriter(primary.Pool, outbox.WriterConfig{})
	st := store.New(primary.Pool, w, protocol.DefaultTopicRules())
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	go func() { _ = w.Run(wctx) }()
	cfg := testConfig()
	cfg.DuplicateWindow = DefaultDuplicateWindow
	// Warnings (a lost lease, a failed publish) explain a tail.
	warn := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Logger = warn
	startBridge(b, primary.Pool, ns.url(), cfg, consumer.Config{BatchSize: DefaultBatchSize, Logger: warn.With("consumer", ConsumerName)})
	js, err := jetstream.New(connect(b, ns.url()))
	if err != nil {
		b.Fatal(err)
	}
	stream, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		b.Fatal(err)
	}
	h := &appliedRecorder{applied: map[string]time.Time{}, sseq: map[string]uint64{}}
	c, err := consumer.NewStream(remote.Pool, h, consumer.Config{Name: "bench-remote", BatchSize: DefaultBatchSize, Logger: warn.With("consumer", "bench-remote")}, stream)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && runCtx.Err() == nil {
			b.Error(err)
		}
	}()

	n := latencyRate * int(latencyFor/time.Second)
	warm := 200
	evs := signedEvents(b, warm+n)
	waitApplied := func(want int) {
		deadline := time.Now().Add(2 * time.Minute)
		for h.count() < want {
			if time.Now().After(deadline) {
				b.Fatalf("the remote consumer applied %d of %d events", h.count(), want)
			}
			time.Sleep(5 * time.Millisecond) // polling for completion, not synchronising
		}
	}
	// Warm up: both consumers lead and the stream exists before the clock runs.
	ingestOne := func(ev *nostr.Event) {
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		if err != nil || !res[0].OK {
			b.Errorf("ingest: %v %v", err, res)
		}
	}
	for _, ev := range evs[:warm] {
		ingestOne(ev)
	}
	waitApplied(warm)

	b.ResetTimer()
	for range b.N {
		evs := evs[warm:]
		committed := make([]time.Time, n)
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range latencyWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(latencyRate)))) // pacing the offered load
					ingestOne(evs[i])
					committed[i] = time.Now()
				}
			}()
		}
		wg.Wait()
		offered := time.Since(start)
		waitApplied(warm + n)
		b.StopTimer()
		lat := make([]time.Duration, n)
		h.mu.Lock()
		for i, ev := range evs {
			lat[i] = h.applied[ev.ID].Sub(committed[i])
		}
		h.mu.Unlock()
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[min(n-1, int(p*float64(n)))] }
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		var stored int
		if err := remote.Pool.QueryRow(ctx, `SELECT count(*) FROM bench_applied`).Scan(&stored); err != nil {
			b.Fatal(err)
		}
		if stored != warm+n {
			b.Fatalf("bench_applied holds %d rows, want %d", stored, warm+n)
		}
		rate := float64(n) / offered.Seconds()
		b.ReportMetric(rate, "events/s")
		b.ReportMetric(ms(pct(0.50)), "p50_ms")
		b.ReportMetric(ms(pct(0.95)), "p95_ms")
		b.ReportMetric(ms(pct(0.99)), "p99_ms")
		b.ReportMetric(ms(lat[n-1]), "max_ms")
		b.ReportMetric(0, "ns/op")
		// Where the time goes, on a sample of 1 in 100: commit -> stored in
		// the stream (the bridge; the message's timestamp) and stored ->
		// applied (the remote consumer).
		var toStream, toApplied []time.Duration
		for i := 0; i < n; i += 100 {
			h.mu.Lock()
			sq, at := h.sseq[evs[i].ID], h.applied[evs[i].ID]
			h.mu.Unlock()
			m, err := stream.GetMsg(ctx, sq)
			if err != nil {
				b.Fatal(err)
			}
			toStream, toApplied = append(toStream, m.Time.Sub(committed[i])), append(toApplied, at.Sub(m.Time))
		}
		slices.Sort(toStream)
		slices.Sort(toApplied)
		q := func(l []time.Duration, p float64) float64 { return ms(l[min(len(l)-1, int(p*float64(len(l))))]) }
		b.Logf("sample of %d: commit -> in stream p50 %.1f p99 %.1f ms; in stream -> applied p50 %.1f p99 %.1f ms",
			len(toStream), q(toStream, 0.5), q(toStream, 0.99), q(toApplied, 0.5), q(toApplied, 0.99))
		b.Logf("%d events at %.0f events/s: commit -> remote applied p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms",
			n, rate, ms(pct(0.50)), ms(pct(0.95)), ms(pct(0.99)), ms(lat[n-1]))
	}
}

// signedEvents returns n kind-1 events on several topics, signed on two
// goroutines.
func signedEvents(b *testing.B, n int) []*nostr.Event {
	evs := make([]*nostr.Event, n)
	key := nostr.GeneratePrivateKey()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", testTopics[i%len(testTopics)]}},
					Content: fmt.Sprintf("latency %d", i)}
				if err := ev.Sign(key); err != nil {
					panic(err)
				}
				evs[i] = ev
			}
		}()
	}
	wg.Wait()
	return evs
}
