package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// BenchmarkCatchUp measures index-v1 draining a backlog of kind-1 upsert rows
// (CN_BENCH_BACKLOG, default 200,000) from a cold start, with the production pool
// settings and the pending-list merger that Run starts. Run: go test ./internal/indexer -run '^$' -bench CatchUp -benchtime 1x -count 3
func BenchmarkCatchUp(b *testing.B) {
	backlog := testkit.EnvInt(b, "CN_BENCH_BACKLOG", 200_000)
	for _, batch := range []int{500, 2000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				db := pgtest.New(b)
				ctx := context.Background()
				if err := bulkLoad(ctx, db.Pool, newCorpus(1), backlog, true); err != nil {
					b.Fatal(err)
				}
				head, err := testkit.SetHead(ctx, db.Pool) // the loader COPYs the outbox rows
				if err != nil {
					b.Fatal(err)
				}
				pool, err := dbpool.Open(ctx, db.URL)
				if err != nil {
					b.Fatal(err)
				}
				c, err := consumer.New(pool, &Handler{Kinds: NewKinds(DefaultKinds)}, consumer.Config{Name: ConsumerName, BatchSize: batch})
				if err != nil {
					b.Fatal(err)
				}
				// CleanPending runs alongside, as Run starts it.
				total += testkit.CatchUp(b, pool, ConsumerName, head, c.Run, func(ctx context.Context) { CleanPending(ctx, pool, slog.New(slog.DiscardHandler)) })
				var docs int
				if err := pool.QueryRow(ctx, "SELECT count(*) FROM cn_index.documents").Scan(&docs); err != nil || docs != backlog {
					b.Fatalf("indexed %d documents of %d (err %v)", docs, backlog, err)
				}
				pool.Close()
			}
			b.ReportMetric(float64(backlog*b.N)/total.Seconds(), "events/s")
		})
	}
}

// BenchmarkSearch measures searches over CN_BENCH_SEARCH_DOCS documents (default
// 1,000,000) of the synthetic corpus, topic filter and limit 20, through Search
// (the HTTP API's query, snippets included) and through the relay's NIP-50 query.
// The corpus is built once per schema version and kept in a cn_fx_* database.
// Run: go test ./internal/indexer -run '^$' -bench Search -benchtime 1x -count 3
func BenchmarkSearch(b *testing.B) {
	docs := testkit.EnvInt(b, "CN_BENCH_SEARCH_DOCS", 1_000_000)
	db := pgtest.Fixture(b, fmt.Sprintf("search_%d", docs), func(db *pgtest.DB) error {
		ctx := context.Background()
		start := time.Now()
		if err := bulkLoad(ctx, db.Pool, newCorpus(2), docs, false); err != nil {
			return err
		}
		b.Logf("loaded %d events in %s", docs, time.Since(start).Round(time.Second))
		start = time.Now()
		res, err := Rebuild(ctx, db.Pool, RebuildOptions{RequestedBy: "bench"})
		if err != nil {
			return err
		}
		b.Logf("indexed %d documents by Rebuild in %s", res.Documents, time.Since(start).Round(time.Second))
		return nil
	})
	ctx := context.Background()
	pool, err := dbpool.Open(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	st := store.NewReader(pool)

	english := englishWords[40:50] // mid-frequency words of the Zipf vocabulary (ranks 41-50 of 215)
	var japanese []string          // mid-frequency two-character words (ranks 11-30 of 62)
	for _, w := range japaneseWords[10:30] {
		if len([]rune(w)) == 2 && len(japanese) < 10 {
			japanese = append(japanese, w)
		}
	}
	tokyo := []string{"東京"} // rank 4: in most Japanese notes
	shapes := []struct {
		name  string
		words []string
		topic bool
		nip50 bool
	}{
		{"en-word/topic/api", english, true, false},
		{"ja-2chars/topic/api", japanese, true, false},
		{"ja-東京/topic/api", tokyo, true, false},
		{"en-word/topic/nip50", english, true, true},
		{"ja-2chars/topic/nip50", japanese, true, true},
		{"en-word/no-topic/api", english, false, false},
	}
	const queries = 200
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			var lat []time.Duration
			var hits int
			for range b.N {
				for i := range queries {
					word := sh.words[i%len(sh.words)]
					topic := ""
					if sh.topic {
						topic = fmt.Sprintf("topic%d", i%50)
					}
					start := time.Now()
					if sh.nip50 {
						f := nostr.Filter{Search: word, Limit: 20}
						if topic != "" {
							f.Tags = nostr.TagMap{"t": {topic}}
						}
						evs, err := st.Query(ctx, []nostr.Filter{f}, protocol.Viewer{})
						if err != nil {
							b.Fatal(err)
						}
						hits += len(evs)
					} else {
						q, err := textsearch.ParseQuery(word)
						if err != nil {
							b.Fatal(err)
						}
						res, _, err := Search(ctx, pool, SearchParams{Query: q, Topic: topic, Limit: 20}, time.Now())
						if err != nil {
							b.Fatal(err)
						}
						hits += len(res)
					}
					lat = append(lat, time.Since(start))
				}
			}
			if hits == 0 {
				b.Fatal("no hits: the benchmark measures nothing")
			}
			// How many documents the queries matched (before the limit), on average.
			var matched int64
			for i := range 10 {
				q, _ := textsearch.ParseQuery(sh.words[i%len(sh.words)])
				sql, args := "SELECT count(*) FROM cn_index.documents WHERE tsv @@ $1::tsquery", []any{q.TSQuery()}
				if sh.topic {
					sql += " AND tsv @@ $2::tsquery"
					args = append(args, textsearch.TopicQuery([]string{fmt.Sprintf("topic%d", i%50)}))
				}
				var n int64
				if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
					b.Fatal(err)
				}
				matched += n
			}
			b.ReportMetric(float64(matched)/10, "matches/query")
			reportPercentiles(b, lat)
			b.ReportMetric(float64(hits)/float64(len(lat)), "hits/query")
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkPublishToSearchable measures the time from a committed publish (store
// Ingest returned) to the document being in the index, at 200 events/s, with the
// outbox NOTIFY wake-up path (writer notifier + consumer LISTEN) as in production.
// Run: go test ./internal/indexer -run '^$' -bench PublishToSearchable -benchtime 1x -count 3
func BenchmarkPublishToSearchable(b *testing.B) {
	const rate, events = 200, 1000
	var lat []time.Duration
	for range b.N {
		b.StopTimer()
		db := pgtest.New(b)
		ctx, cancel := context.WithCancel(context.Background())
		pool, err := dbpool.Open(ctx, db.URL)
		if err != nil {
			b.Fatal(err)
		}
		writer := outbox.NewWriter(pool, outbox.WriterConfig{})
		st := store.New(pool, writer, protocol.DefaultTopicRules())
		c, err := consumer.New(pool, &Handler{Kinds: NewKinds(DefaultKinds)}, consumer.Config{Name: ConsumerName})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = writer.Run(ctx) })
		wg.Go(func() { _ = c.Run(ctx) })
		wg.Go(func() { CleanPending(ctx, pool, slog.New(slog.DiscardHandler)) }) // as Run does
		key := nostr.GeneratePrivateKey()
		evs := make([]*nostr.Event, events)
		for i := range evs {
			evs[i] = &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1_700_000_000 + i), Tags: nostr.Tags{{"t", "bench"}},
				Content: fmt.Sprintf("東京 meetup number %d", i)}
			if err := evs[i].Sign(key); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond) // the consumer holds its lease and listens

		published := make([]time.Time, events)
		var mu sync.Mutex
		seen := make([]time.Duration, events)
		pollDone := make(chan struct{})
		b.StartTimer()
		go func() { // watches the index: the moment each document appears
			defer close(pollDone)
			found := 0
			idx := map[string]int{}
			for i, ev := range evs {
				idx[ev.ID] = i
			}
			for found < events {
				rows, err := pool.Query(ctx, "SELECT event_id FROM cn_index.documents")
				if err != nil {
					return
				}
				now := time.Now()
				for rows.Next() {
					var id string
					_ = rows.Scan(&id)
					i := idx[id]
					mu.Lock()
					if seen[i] == 0 && !published[i].IsZero() {
						seen[i] = now.Sub(published[i])
						found++
					}
					mu.Unlock()
				}
				rows.Close()
				time.Sleep(500 * time.Microsecond)
			}
		}()
		tick := time.NewTicker(time.Second / rate)
		for i, ev := range evs {
			<-tick.C
			if _, err := st.Ingest(ctx, []*nostr.Event{ev}); err != nil {
				b.Fatal(err)
			}
			mu.Lock()
			published[i] = time.Now()
			mu.Unlock()
		}
		tick.Stop()
		select {
		case <-pollDone:
		case <-time.After(10 * time.Second):
			b.Fatal("not every event became searchable within 10 s")
		}
		b.StopTimer()
		lat = append(lat, seen...)
		cancel()
		wg.Wait()
		pool.Close()
	}
	reportPercentiles(b, lat)
}
