package moderation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// benchRules are 20 rules: 10 regular expressions and 10 keyword lists, each
// with its own trigger words, plus the report rule.
func benchRules() string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - {name: regex-%d, kinds: [1], content_regex: '(?i)\\b(casino%d|jackpot%d)\\b', label: spam, action: label}\n", i, i, i)
	}
	for i := range 9 {
		fmt.Fprintf(&b, "  - {name: words-%d, keywords: [pills%d, 'cheap meds%d', crypto-giveaway%d], label: spam, action: label}\n", i, i, i, i)
	}
	b.WriteString("  - {name: reported-three-times, min_reports: 3, label: reported, action: hide}\n")
	return b.String()
}

var benchWords = strings.Fields(`the a of to and in is it you that he was for on are with as his they be at one
have this from or had by hot word but what some we can out other were all there when up use your how said an
each she which do their time if will way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my over know water than call first who
may down side been now find any new work part take get place made live where after back little only round man year
came show every good me give our under name very through just form sentence great think say help low line differ`)

// benchText is a note of 10-30 words; one in 100 carries a trigger word.
func benchText(rng *rand.Rand) string {
	n := 10 + rng.IntN(21)
	words := make([]string, n)
	for i := range words {
		words[i] = benchWords[rng.IntN(len(benchWords))]
	}
	if rng.IntN(100) == 0 {
		r := rng.IntN(19)
		if r < 10 {
			words[rng.IntN(n)] = fmt.Sprintf("CASINO%d", r)
		} else {
			words[rng.IntN(n)] = fmt.Sprintf("pills%d", r-10)
		}
	}
	return strings.Join(words, " ")
}

// loadBacklog writes n kind-1 events (2,000 authors, 20 topics) and their
// upsert rows straight into the tables, as the relay would have.
func loadBacklog(ctx context.Context, pool *pgxpool.Pool, n int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	sig := strings.Repeat("ab", 64)
	now := time.Now()
	authors := make([]string, 2000)
	for i := range authors {
		sum := sha256.Sum256([]byte("author " + strconv.Itoa(i)))
		authors[i] = hex.EncodeToString(sum[:])
	}
	const chunk = 50_000
	for start := 0; start < n; start += chunk {
		var events, topics, rows [][]any
		for i := start; i < min(start+chunk, n); i++ {
			sum := sha256.Sum256([]byte("event " + strconv.Itoa(i)))
			id := hex.EncodeToString(sum[:])
			at := int64(1_700_000_000 + i)
			topic := "topic" + strconv.Itoa(rng.IntN(20))
			pubkey := authors[rng.IntN(len(authors))]
			events = append(events, []any{id, pubkey, int32(1), at, `[["t","` + topic + `"]]`, benchText(rng), sig, now})
			topics = append(topics, []any{id, topic, at, pubkey, int32(1)})
			rows = append(rows, []any{"upsert", id, topic, int32(1), at, now})
		}
		for _, c := range []struct {
			table string
			cols  []string
			rows  [][]any
		}{
			{"events", []string{"id", "pubkey", "kind", "created_at", "tags", "content", "sig", "ingested_at"}, events},
			{"event_topics", []string{"event_id", "topic_id", "created_at", "pubkey", "kind"}, topics},
			{"events_outbox", []string{"op", "event_id", "topic_id", "kind", "created_at", "ingested_at"}, rows},
		} {
			if _, err := pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
				return fmt.Errorf("copy %s: %w", c.table, err)
			}
		}
	}
	if _, err := pool.Exec(ctx, "SELECT cn_relay.outbox_ensure_partitions()"); err != nil {
		return err
	}
	for _, table := range []string{"cn_relay.events", "cn_relay.event_topics"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkCatchUp measures moderation-v1 draining a backlog of kind-1 upsert
// rows (CN_BENCH_BACKLOG, default 200,000; about 1% match one of the 20 rules and
// get a label) from a cold start, with the production pool settings. Run:
// go test ./internal/moderation -run '^$' -bench CatchUp -benchtime 1x -count 3
func BenchmarkCatchUp(b *testing.B) {
	backlog := testkit.EnvInt(b, "CN_BENCH_BACKLOG", 200_000)
	rules, err := ParseFile([]byte(benchRules()))
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for range b.N {
		b.StopTimer()
		db := pgtest.New(b)
		ctx := context.Background()
		if err := loadBacklog(ctx, db.Pool, backlog); err != nil {
			b.Fatal(err)
		}
		if _, err := ApplyRules(ctx, db.Pool, rules, "bench", true); err != nil {
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
		key, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
		if err != nil {
			b.Fatal(err)
		}
		mod := New(Config{Key: key, Store: store.NewPublisher()})
		c, err := consumer.New(pool, mod, consumer.Config{Name: ConsumerName, BatchSize: DefaultBatchSize})
		if err != nil {
			b.Fatal(err)
		}
		total += testkit.CatchUp(b, pool, ConsumerName, head, c.Run)
		var labels int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM cn_moderation.labels").Scan(&labels); err != nil || labels < backlog/200 {
			b.Fatalf("%d labels for %d events (err %v): about 1%% should match", labels, backlog, err)
		}
		b.ReportMetric(float64(labels), "labels")
		pool.Close()
	}
	b.ReportMetric(float64(backlog*b.N)/total.Seconds(), "events/s")
}

// BenchmarkPublishToLabel publishes matching notes through the store at 200
// events/s (CN_BENCH_EVENTS, default 1,000) with the moderator running as
// cmd/moderator runs it (LISTEN + poll, NOTIFY after its commits), and measures
// the time from the publish's commit to the label's visibility. Run:
// go test ./internal/moderation -run '^$' -bench PublishToLabel -benchtime 1x -count 3
func BenchmarkPublishToLabel(b *testing.B) {
	events := testkit.EnvInt(b, "CN_BENCH_EVENTS", 1000)
	rules, err := ParseFile([]byte(benchRules()))
	if err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	for range b.N {
		b.StopTimer()
		db := pgtest.New(b)
		ctx, cancel := context.WithCancel(context.Background())
		pool, err := dbpool.Open(ctx, db.URL)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ApplyRules(ctx, pool, rules, "bench", true); err != nil {
			b.Fatal(err)
		}
		key, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
		if err != nil {
			b.Fatal(err)
		}
		writer := outbox.NewWriter(pool, outbox.WriterConfig{})
		notifier := outbox.NewNotifier(pool, 0, nil, nil)
		st := store.New(pool, writer, protocol.DefaultTopicRules())
		mod := New(Config{Key: key, Store: st.Publisher(), Notifier: notifier})
		c, err := consumer.New(pool, mod, consumer.Config{Name: ConsumerName})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, run := range []func(context.Context) error{writer.Run, notifier.Run, c.Run} {
			wg.Add(1)
			go func() { defer wg.Done(); _ = run(ctx) }()
		}

		// Watch for labels: wake on NOTIFY, read the new label rows.
		var mu sync.Mutex
		published := map[string]time.Time{}
		var latencies []time.Duration
		seen := make(chan struct{}, 1)
		wake := make(chan struct{}, 1)
		lcfg, err := pgx.ParseConfig(db.URL)
		if err != nil {
			b.Fatal(err)
		}
		go outbox.Listen(ctx, lcfg, func(outbox.Wake) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}, nil)
		go func() {
			var last int64
			for ctx.Err() == nil {
				select {
				case <-wake:
				case <-time.After(50 * time.Millisecond):
				case <-ctx.Done():
					return
				}
				rows, err := pool.Query(ctx, `SELECT o.seq, l.target_id FROM cn_relay.events_outbox o
					JOIN cn_moderation.labels l ON l.label_id = o.event_id WHERE o.seq > $1 AND o.kind = 1985 ORDER BY o.seq`, last)
				if err != nil {
					continue
				}
				now := time.Now()
				for rows.Next() {
					var target string
					if rows.Scan(&last, &target) == nil {
						mu.Lock()
						if at, ok := published[target]; ok {
							latencies = append(latencies, now.Sub(at))
						}
						mu.Unlock()
					}
				}
				rows.Close()
				select {
				case seen <- struct{}{}:
				default:
				}
			}
		}()

		sk := nostr.GeneratePrivateKey()
		tick := time.NewTicker(5 * time.Millisecond) // 200 events/s
		b.StartTimer()
		for i := range events {
			<-tick.C
			ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "bench"}},
				Content: fmt.Sprintf("hot jackpot%d tonight %d", i%10, i)}
			if err := ev.Sign(sk); err != nil {
				b.Fatal(err)
			}
			res, err := st.Ingest(ctx, []*nostr.Event{ev})
			if err != nil || !res[0].OK {
				b.Fatalf("ingest: %v %v", err, res)
			}
			mu.Lock()
			published[ev.ID] = time.Now()
			mu.Unlock()
		}
		tick.Stop()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			n := len(latencies)
			mu.Unlock()
			if n >= events {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d labels seen", n, events)
			}
			<-seen
		}
		b.StopTimer()
		cancel()
		wg.Wait()
		pool.Close()
		all = append(all, latencies...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
