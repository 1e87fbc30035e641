package relay

import (
	"context"
	"encoding/json"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// BenchmarkNegentropyRelaySession: one NIP-77 session through a relay over
// Postgres and a real WebSocket, CN_BENCH_NEG_ITEMS events on the relay
// (default 100,000; MaxSyncEvents is raised to fit), the client holding the
// same set but 1% of it, plus 1% of its own, at the relay's default frame
// limit (60,000) on both sides; the differences are spread at random. The
// events are written by COPY (unsigned: only NIP-77 reads them) and the
// table vacuumed, as a live node's would be.
//
// CN_BENCH_NEG_MODE=tree (the default): the events have a topic (an
// event_topics row each), a relay started after they were written fills its
// fingerprint tree (the bench waits until it is ready) and the session, {}
// by an anonymous reader, is served from it. CN_BENCH_NEG_MODE=items: the
// session's filter names the author, so the relay reads the items from the
// database (the path of the filters the tree does not cover).
//
// It reports the session's wall time (NEG-OPEN to the last NEG-MSG, item
// reading included), the bytes exchanged (both ways, as sent), the rounds,
// the bytes the relay charged the session, the process's CPU time during the
// session (relay and client: both are in this process) and the client's
// share of it (client-cpu-s: the CPU of the thread running it, its wall
// time in Reconcile calls client-s; relay-cpu-s is the difference, the
// WebSocket's work on both sides included), the Go heap in use at the session's end above the one before,
// and in tree mode the heap the tree took (tree-heap-bytes, after a GC) and
// the time to fill it (tree-fill-s). Run with -benchtime 1x.
func BenchmarkNegentropyRelaySession(b *testing.B) {
	tree := os.Getenv("CN_BENCH_NEG_MODE") != "items"
	n := 100_000
	if s := os.Getenv("CN_BENCH_NEG_ITEMS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(b, err)
		n = v
	}
	for range b.N {
		b.StopTimer()
		e := newNegEnvTB(b, func(cfg *Config) {
			cfg.MaxSyncEvents = n + 1
			cfg.QueryTimeout = 10 * time.Minute
			cfg.NegIdleTimeout = 10 * time.Minute
		})
		pubkey := randomHex(32)
		all := make([]negentropy.Item, n+n/100)
		for i := range all {
			all[i] = negentropy.Item{CreatedAt: nostr.Timestamp(1_700_000_000 + i/10), ID: randomHex(32)}
		}
		// The differences spread over the whole range, not in one block.
		mrand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		relaySide, clientSide := all[:n], all[n/100:]
		ctx := context.Background()
		rows := make([][]any, 0, 10_000)
		sig := strings.Repeat("0", 128)
		for i, it := range relaySide {
			rows = append(rows, []any{it.ID, pubkey, int32(1), int64(it.CreatedAt), "", sig})
			if len(rows) == cap(rows) || i == len(relaySide)-1 {
				_, err := e.db.Pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "events"},
					[]string{"id", "pubkey", "kind", "created_at", "content", "sig"}, pgx.CopyFromRows(rows))
				require.NoError(b, err)
				rows = rows[:0]
			}
		}
		if tree {
			rows = rows[:0]
			for i, it := range relaySide {
				rows = append(rows, []any{it.ID, "go", int64(it.CreatedAt), pubkey, int32(1)})
				if len(rows) == cap(rows) || i == len(relaySide)-1 {
					_, err := e.db.Pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "event_topics"},
						[]string{"event_id", "topic_id", "created_at", "pubkey", "kind"}, pgx.CopyFromRows(rows))
					require.NoError(b, err)
					rows = rows[:0]
				}
			}
		}
		_, err := e.db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events, cn_relay.event_topics")
		require.NoError(b, err)
		url, served := e.relay.url, e.relay.Relay
		filter := map[string]any{"authors": []string{pubkey}}
		var treeHeap int64
		var treeFill time.Duration
		if tree {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			began := time.Now()
			tr := e.another(func(cfg *Config) {
				cfg.CacheBytes = 0 // (the tree's heap and fill time alone)
				cfg.MaxSyncEvents = n + 1
				cfg.QueryTimeout = 10 * time.Minute
				cfg.NegIdleTimeout = 10 * time.Minute
			})
			_, ok := tr.Relay.negTree.snapshot(0, 10*time.Minute, nil) // (ready)
			require.True(b, ok)
			treeFill = time.Since(began)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			treeHeap = int64(m1.HeapInuse) - int64(m0.HeapInuse)
			url, served, filter = tr.url, tr.Relay, map[string]any{}
		}

		cl, err := negentropy.NewClient(clientSide, 60_000)
		require.NoError(b, err)
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		require.NoError(b, err)
		_, challenge, err := ws.ReadMessage() // the NIP-42 challenge, sent on connect by default
		require.NoError(b, err)
		require.Contains(b, string(challenge), `["AUTH",`)
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var peakHeld atomic.Int64
		stop := make(chan struct{})
		go func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if h := negHeld(served); h > peakHeld.Load() {
						peakHeld.Store(h)
					}
				}
			}
		}()
		b.StartTimer()
		runtime.LockOSThread() // (the client's CPU is this thread's)
		cpu0, client0 := processCPU(b), threadCPU(b)
		var clientTime time.Duration
		start := time.Now()
		msg, err := cl.Start()
		require.NoError(b, err)
		send := func(parts ...any) int {
			data, err := json.Marshal(parts)
			require.NoError(b, err)
			require.NoError(b, ws.WriteMessage(websocket.TextMessage, data))
			return len(data)
		}
		wire := send("NEG-OPEN", "bench", filter, msg)
		rounds := 0
		for {
			_, data, err := ws.ReadMessage()
			require.NoError(b, err)
			wire += len(data)
			var m []string
			require.NoError(b, json.Unmarshal(data, &m), string(data[:min(len(data), 200)]))
			require.Equal(b, "NEG-MSG", m[0], m)
			rounds++
			began := time.Now()
			next, done, err := cl.Reconcile(m[2])
			clientTime += time.Since(began)
			require.NoError(b, err)
			if done {
				break
			}
			wire += send("NEG-MSG", "bench", next)
		}
		took := time.Since(start)
		cpu, clientCPU := processCPU(b)-cpu0, threadCPU(b)-client0
		runtime.UnlockOSThread()
		b.StopTimer()
		if tree {
			require.Equal(b, 1, negTreeSessions(&testRelay{Relay: served}), "served from the tree")
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		close(stop)
		have, need := cl.Result()
		cl.Close()
		require.Len(b, have, n/100)
		require.Len(b, need, n/100)
		send("NEG-CLOSE", "bench")
		_ = ws.Close()
		b.ReportMetric(took.Seconds(), "session-s")
		b.ReportMetric(float64(wire), "wire-bytes")
		b.ReportMetric(float64(rounds), "rounds")
		b.ReportMetric(float64(peakHeld.Load()), "relay-charged-bytes")
		b.ReportMetric(cpu.Seconds(), "process-cpu-s")
		b.ReportMetric(clientTime.Seconds(), "client-s")
		b.ReportMetric(clientCPU.Seconds(), "client-cpu-s")
		b.ReportMetric((cpu - clientCPU).Seconds(), "relay-cpu-s")
		if tree {
			b.ReportMetric(float64(treeHeap), "tree-heap-bytes")
			b.ReportMetric(treeFill.Seconds(), "tree-fill-s")
		}
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse)), "heap-growth-bytes")
		b.StartTimer()
	}
}

// threadCPU is the CPU time (user and system) the calling OS thread has used
// (RUSAGE_THREAD).
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(1, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
