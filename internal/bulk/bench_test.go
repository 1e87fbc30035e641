package bulk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// The import benchmarks read a corpus of pre-signed events from a file that is
// built once and kept: $CN_BENCH_IMPORT_DIR (default the system's temporary
// directory)/cn_import_<events>_<authors>_p.jsonl (the _p: top-level notes
// mention other authors; files built before that have no suffix and are not
// reused). CN_BENCH_IMPORT_EVENTS sets its size (default 100,000; the issue's
// figure is for 1,000,000).
func corpusFile(b *testing.B) (path string, events int) {
	b.Helper()
	events = testkit.EnvInt(b, "CN_BENCH_IMPORT_EVENTS", 100_000)
	authors := max(10, events/200)
	dir := os.Getenv("CN_BENCH_IMPORT_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	path = filepath.Join(dir, fmt.Sprintf("cn_import_%d_%d_p.jsonl", events, authors))
	if _, err := os.Stat(path); err == nil {
		return path, events
	}
	start := time.Now()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	require.NoError(b, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	require.NoError(b, writeCorpus(bw, events, authors, time.Now().Add(-time.Minute)))
	require.NoError(b, bw.Flush())
	require.NoError(b, f.Close())
	require.NoError(b, os.Rename(tmp, path))
	b.Logf("built %s in %s", path, time.Since(start).Round(time.Second))
	return path, events
}

// writeCorpus writes n signed events of a community as JSON Lines, oldest
// first, ending at end: each author's first event is a note with a t tag, then
// notes (55%; every top-level note also mentions 1-3 other authors in p tags,
// as `cnctl bench ingest`'s events do, so that REQs by #p can be sampled from
// the topic's events), replies that inherit their topic (20%), reactions (13%), profile
// updates (5%), follow lists (2%), articles with one of five d tags (3%) and
// deletions of the author's latest note (2%). Signing runs on every CPU.
func writeCorpus(w io.Writer, n, authors int, end time.Time) error {
	rng := rand.New(rand.NewPCG(1, 2))
	secrets, pubkeys := make([]string, authors), make([]string, authors)
	for i := range secrets {
		secrets[i] = nostr.GeneratePrivateKey()
		pk, err := nostr.GetPublicKey(secrets[i])
		if err != nil {
			return err
		}
		pubkeys[i] = pk
	}
	topics := []string{"go", "rust", "zig", "nostr", "postgres", "music", "books", "cooking", "travel", "photo",
		"garden", "cycling", "chess", "math", "physics", "history", "film", "games", "news", "art"}
	type ref struct{ id, author string }
	recent := make([]ref, 0, 50_000)
	posted := make([]bool, authors)
	lastNote := make([]string, authors)
	span := int64(max(n/20, 3600)) // seconds the corpus covers
	startAt := end.Unix() - span

	const chunk = 4096
	evs := make([]*nostr.Event, 0, chunk)
	owners := make([]int, 0, chunk)
	flush := func() error {
		var wg sync.WaitGroup
		errs := make([]error, runtime.GOMAXPROCS(0))
		for wkr := range errs {
			wg.Go(func() {
				for i := wkr; i < len(evs); i += len(errs) {
					if err := evs[i].Sign(secrets[owners[i]]); err != nil {
						errs[wkr] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		for _, ev := range evs {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		evs, owners = evs[:0], owners[:0]
		return nil
	}
	for i := range n {
		a := rng.IntN(authors)
		ev := &nostr.Event{PubKey: pubkeys[a], CreatedAt: nostr.Timestamp(startAt + int64(i)*span/int64(n)), Tags: nostr.Tags{}}
		r := rng.Float64()
		switch {
		case !posted[a] || r < 0.55 || len(recent) == 0:
			ev.Kind = 1
			ev.Tags = append(ev.Tags, nostr.Tag{"t", topics[rng.IntN(len(topics))]})
			if rng.IntN(4) == 0 {
				ev.Tags = append(ev.Tags, nostr.Tag{"t", topics[rng.IntN(len(topics))]})
			}
			for _, p := range mentions(rng, authors, a) {
				ev.Tags = append(ev.Tags, nostr.Tag{"p", pubkeys[p]})
			}
			ev.Content = fmt.Sprintf("note %d by %d: %s", i, a, filler(rng, 80+rng.IntN(300)))
			posted[a] = true
		case r < 0.75:
			to := recent[rng.IntN(len(recent))]
			ev.Kind = 1
			ev.Tags = append(ev.Tags, nostr.Tag{"e", to.id, "", "root"}, nostr.Tag{"p", to.author})
			ev.Content = fmt.Sprintf("reply %d: %s", i, filler(rng, 40+rng.IntN(200)))
		case r < 0.88:
			to := recent[rng.IntN(len(recent))]
			ev.Kind = 7
			ev.Tags = append(ev.Tags, nostr.Tag{"e", to.id}, nostr.Tag{"p", to.author})
			ev.Content = "+"
		case r < 0.93:
			ev.Kind = 0
			ev.Content = fmt.Sprintf(`{"name":"author %d","about":"version %d"}`, a, i)
		case r < 0.95:
			ev.Kind = 3
			for range 10 + rng.IntN(40) {
				ev.Tags = append(ev.Tags, nostr.Tag{"p", pubkeys[rng.IntN(authors)]})
			}
		case r < 0.98:
			ev.Kind = 30023
			ev.Tags = append(ev.Tags, nostr.Tag{"d", fmt.Sprintf("article-%d", rng.IntN(5))},
				nostr.Tag{"t", topics[rng.IntN(len(topics))]})
			ev.Content = filler(rng, 500+rng.IntN(1500))
		default:
			if lastNote[a] == "" {
				ev.Kind = 7
				to := recent[rng.IntN(len(recent))]
				ev.Tags = append(ev.Tags, nostr.Tag{"e", to.id}, nostr.Tag{"p", to.author})
				ev.Content = "+"
				break
			}
			ev.Kind = 5
			ev.Tags = append(ev.Tags, nostr.Tag{"e", lastNote[a]})
			lastNote[a] = ""
		}
		ev.ID = ev.GetID()
		if ev.Kind == 1 {
			if len(recent) < cap(recent) {
				recent = append(recent, ref{ev.ID, ev.PubKey})
			} else {
				recent[rng.IntN(len(recent))] = ref{ev.ID, ev.PubKey}
			}
			lastNote[a] = ev.ID
		}
		evs, owners = append(evs, ev), append(owners, a)
		if len(evs) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// mentions returns 1-3 distinct authors other than self (fewer when there are
// not that many others).
func mentions(rng *rand.Rand, authors, self int) []int {
	k := min(1+rng.IntN(3), authors-1)
	out := make([]int, 0, k)
	for len(out) < k {
		p := rng.IntN(authors)
		if p != self && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// cpu is the CPU time used so far by this process and by the database's
// backends serving pool (read from /proc: the server must run on this machine,
// else the second value is 0). Benchmarks report CPU per event because on a
// shared machine it varies far less than events/s.
func cpu(b *testing.B, pool *pgxpool.Pool) (self, backends time.Duration) {
	b.Helper()
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rows, err := pool.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var pid int
		require.NoError(b, rows.Scan(&pid))
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		backends += time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ 100
	}
	require.NoError(b, rows.Err())
	return self, backends
}

func reportCPU(b *testing.B, self0, pg0, self1, pg1 time.Duration, events int64) {
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(events), "go-cpu-µs/event")
	b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(events), "pg-cpu-µs/event")
}

var fillerWords = []string{"relay", "community", "topic", "garden", "river", "lantern", "copper", "meadow",
	"harbor", "thread", "circle", "orbit", "quiet", "silver", "forest", "ember", "puzzle", "canvas", "東京", "コーヒー"}

func filler(rng *rand.Rand, size int) string {
	b := make([]byte, 0, size+16)
	for len(b) < size {
		b = append(b, fillerWords[rng.IntN(len(fillerWords))]...)
		b = append(b, ' ')
	}
	return string(b)
}

// BenchmarkImport imports the corpus into a fresh database, as `cnctl import`
// does: parsing and signature checks on every CPU, store.Import batches on one
// connection, the outbox writer running. Run it with -benchtime 1x.
func BenchmarkImport(b *testing.B) {
	path, _ := corpusFile(b)
	batch := testkit.EnvInt(b, "CN_BENCH_IMPORT_BATCH", DefaultBatchSize)
	for b.Loop() {
		b.StopTimer()
		db := pgtest.New(b)
		l := protocol.DefaultLimits()
		writer := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = writer.Run(ctx); close(done) }()
		f, err := os.Open(path)
		require.NoError(b, err)
		im := &Importer{Store: store.New(db.Pool, writer, l.TopicRules), Pool: db.Pool, Limits: l, BatchSize: batch,
			ProgressEvery: 30 * time.Second, OnProgress: func(s Stats) {
				b.Logf("%s: %d lines, %.0f events/s", s.Elapsed.Round(time.Second), s.Lines, s.EventsPerSecond)
			}}
		// Connections the run will use, open before the first reading.
		for range 2 {
			_, err := db.Pool.Exec(context.Background(), "SELECT 1")
			require.NoError(b, err)
		}
		self0, pg0 := cpu(b, db.Pool)
		b.StartTimer()
		st, err := im.Run(context.Background(), f)
		b.StopTimer()
		require.NoError(b, err)
		self1, pg1 := cpu(b, db.Pool)
		reportCPU(b, self0, pg0, self1, pg1, st.Lines)
		_ = f.Close()
		cancel()
		<-done
		b.ReportMetric(st.EventsPerSecond, "events/s")
		b.ReportMetric(float64(st.Accepted), "accepted")
		b.ReportMetric(float64(st.Refused), "refused")
		b.Logf("%d lines in %s: %.0f events/s, accepted %d, duplicate %d, refused %d %v, retried %d",
			st.Lines, st.Elapsed.Round(time.Millisecond), st.EventsPerSecond, st.Accepted, st.Duplicates, st.Refused, st.Reasons, st.Retried)
		b.StartTimer()
	}
}

// BenchmarkImportCheck is the import's CPU side alone: reading, parsing and
// validating (id and signature included) the corpus on every CPU, no database.
func BenchmarkImportCheck(b *testing.B) {
	path, events := corpusFile(b)
	im := &Importer{Limits: protocol.DefaultLimits()}
	for b.Loop() {
		f, err := os.Open(path)
		require.NoError(b, err)
		var ru0 syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
		start := time.Now()
		tasks, ordered := make(chan *chunk, 4), make(chan *chunk, 64)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for c := range tasks {
					im.check(c, time.Now())
				}
			})
		}
		go func() {
			defer close(tasks)
			defer close(ordered)
			_ = readChunks(context.Background(), f, im.Limits.MaxMessageBytes, tasks, ordered)
		}()
		checked := 0
		for c := range ordered {
			<-c.done
			for _, l := range c.lines {
				if l.ev != nil {
					checked++
				}
			}
		}
		wg.Wait()
		_ = f.Close()
		require.Equal(b, events, checked)
		b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
		var ru1 syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
		used := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
		b.ReportMetric(float64(used)/1e3/float64(events), "go-cpu-µs/event")
	}
}

// corpusEvents reads the corpus (corpusFile) into memory, parsed.
func corpusEvents(b *testing.B) []*nostr.Event {
	path, _ := corpusFile(b)
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	var evs []*nostr.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ev := &nostr.Event{}
		require.NoError(b, json.Unmarshal(sc.Bytes(), ev))
		evs = append(evs, ev)
	}
	require.NoError(b, sc.Err())
	return evs
}

// BenchmarkImportStore is the import's database side alone: the corpus,
// parsed and checked beforehand, stored in batches on one connection, as the
// importer does: "copy" with store.Import (the new rows by COPY, what the
// importer uses), "insert" with store.Ingest (the relay's INSERT ... unnest),
// each on a fresh database, in turn.
func BenchmarkImportStore(b *testing.B) {
	batch := testkit.EnvInt(b, "CN_BENCH_IMPORT_BATCH", DefaultBatchSize)
	evs := corpusEvents(b)
	for _, mode := range []string{"insert", "copy"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := pgtest.New(b)
				l := protocol.DefaultLimits()
				writer := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = writer.Run(ctx); close(done) }()
				st := store.New(db.Pool, writer, l.TopicRules)
				ingest := st.Ingest
				if mode == "copy" {
					ingest = st.Import
				}
				self0, pg0 := cpu(b, db.Pool)
				b.StartTimer()
				start := time.Now()
				for from := 0; from < len(evs); from += batch {
					_, err := ingest(context.Background(), evs[from:min(from+batch, len(evs))])
					require.NoError(b, err)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				self1, pg1 := cpu(b, db.Pool)
				reportCPU(b, self0, pg0, self1, pg1, int64(len(evs)))
				cancel()
				<-done
				b.ReportMetric(float64(len(evs))/elapsed.Seconds(), "events/s")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkImportSignatures is the import's ceiling: the corpus, parsed
// beforehand, only checked on every CPU, with nothing else running in the
// process. "go-nostr" is Event.CheckID and Event.CheckSignature, as the import
// checked before it had protocol's own check; "validate" is
// protocol.ValidateEvent, every check the import makes on an event that needs
// no storage (signatures included).
func BenchmarkImportSignatures(b *testing.B) {
	evs := corpusEvents(b)
	l := protocol.DefaultLimits()
	for _, c := range []struct {
		name  string
		check func(*nostr.Event, time.Time) bool
	}{
		{"go-nostr", func(ev *nostr.Event, _ time.Time) bool {
			ok, err := ev.CheckSignature()
			return ev.CheckID() && ok && err == nil
		}},
		{"validate", func(ev *nostr.Event, now time.Time) bool { return protocol.ValidateEvent(ev, now, l) == "" }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var ru0, ru1 syscall.Rusage
				require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
				start, now := time.Now(), time.Now()
				var wg sync.WaitGroup
				workers := runtime.GOMAXPROCS(0)
				bad := make([]int, workers)
				for w := range workers {
					wg.Go(func() {
						for i := w; i < len(evs); i += workers {
							if !c.check(evs[i], now) {
								bad[w]++
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
				for _, n := range bad {
					require.Zero(b, n)
				}
				used := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
				b.ReportMetric(float64(len(evs))/elapsed.Seconds(), "events/s")
				b.ReportMetric(float64(used)/1e3/float64(len(evs)), "go-cpu-µs/event")
			}
		})
	}
}
