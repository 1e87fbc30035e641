package relay

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
)

// bigEvents stores n events of about 115 KB in topic "big" and returns the
// relay's store.
func bigEvents(t *testing.T, db *pgtest.DB, n int) pgStore {
	t.Helper()
	st := pgStore{store.New(db.Pool, startWriter(t, db), DefaultConfig().Limits.TopicRules)}
	k := newKey(t)
	for i := 0; i < n; i += 20 {
		var batch []*nostr.Event
		for j := i; j < min(n, i+20); j++ {
			batch = append(batch, k.note(t, strings.Repeat("x", 64000), func(ev *nostr.Event) {
				ev.Tags = nostr.Tags{{"t", "big"}, {"alt", strings.Repeat(strconv.Itoa(j%10), 50000)}}
				ev.CreatedAt -= nostr.Timestamp(j)
			}))
		}
		res, err := st.Ingest(context.Background(), batch)
		require.NoError(t, err)
		for _, r := range res {
			require.True(t, r.OK, r.Message)
		}
	}
	return st
}

// memSampler records the peak Go heap and RSS of this process while it runs.
type memSampler struct {
	baseHeap, baseRSS uint64
	peakHeap, peakRSS uint64
	stop              chan struct{}
	done              chan struct{}
}

func startSampler() *memSampler {
	debug.FreeOSMemory() // (a GC that also returns freed memory, for the RSS baseline)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := &memSampler{baseHeap: ms.HeapAlloc, baseRSS: rssBytes(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(10 * time.Millisecond) // a sampling period, not a synchronisation
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			s.peakHeap = max(s.peakHeap, ms.HeapAlloc)
			s.peakRSS = max(s.peakRSS, rssBytes())
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling and returns the peak growth of the heap and of RSS.
func (s *memSampler) finish() (heap, rss int64) {
	close(s.stop)
	<-s.done
	return int64(s.peakHeap) - int64(s.baseHeap), int64(s.peakRSS) - int64(s.baseRSS)
}

// rssBytes is this process's resident set size (VmRSS), 0 where /proc is missing.
func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// dialNeverReading opens a WebSocket with a 4 KiB receive buffer whose messages
// are never read.
func dialNeverReading(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{ReadBufferSize: 4096, NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}}
	ws, _, err := d.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// startBudgetRelay serves a relay with the real store on st, logging into logs.
func startBudgetRelay(t *testing.T, db *pgtest.DB, st pgStore, logs *testkit.Buffer, edit func(*Config)) *testRelay {
	t.Helper()
	cfg := testConfig()
	cfg.WriteTimeout = 2 * time.Second
	edit(&cfg)
	reg := prometheus.NewRegistry()
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}))
	require.NoError(t, err)
	tr := serveRelay(t, r)
	tr.reg = reg
	return tr
}

// TestNeverReadingClient: a client with a 4 KiB receive buffer asks twelve
// times for 120 stored events of ~115 KB (14 MB each time) and never reads
// (twelve, not four, so that the answers surely exceed what the kernel's socket
// buffers absorb, up to 4 MiB here). The relay holds at most its connection
// budget for it (4 MiB by default), not the answers (168 MB); it disconnects
// the client as too slow once a write times out, counts and logs it. Not
// parallel: it measures this process's heap and RSS.
func TestNeverReadingClient(t *testing.T) {
	db := pgtest.New(t)
	st := bigEvents(t, db, 120)
	var logs testkit.Buffer
	tr := startBudgetRelay(t, db, st, &logs, func(*Config) {})

	mem := startSampler()
	ws := dialNeverReading(t, tr.url)
	for i := range 12 {
		require.NoError(t, ws.WriteMessage(websocket.TextMessage,
			[]byte(`["REQ","again`+strconv.Itoa(i)+`",{"#t":["big"],"limit":500}]`)))
	}
	// (The counter moves just before the log line is written: wait for both.)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(tr.m.slowDisconnects) == 1 && strings.Contains(logs.String(), "client too slow; disconnecting")
	}, 30*time.Second, 20*time.Millisecond, "the client is disconnected as too slow, counted and logged")
	heap, rss := mem.finish()
	t.Logf("never-reading client, 12 x REQ limit 500 over 120 events of ~115 KB: peak heap +%.1f MiB, peak RSS +%.1f MiB",
		float64(heap)/(1<<20), float64(rss)/(1<<20))
	require.Less(t, heap, int64(24<<20), "the heap grew by %d bytes", heap)
	require.Eventually(t, func() bool { return tr.mem.Held() == 0 }, 10*time.Second, 10*time.Millisecond,
		"everything held for the client is given back")
}

// TestRelayWideBudget: eight never-reading clients with 4 MiB budgets each (32
// MiB together) cannot make the relay hold more than its own budget (8 MiB
// here): database queries stop reading when it is full, and the client holding
// the most is shed. Answered from the event cache (which holds no memory per
// answer; its messages take the budget as they are queued), the same bound
// holds and every client ends disconnected as too slow.
func TestRelayWideBudget(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cached), func(t *testing.T) { testRelayWideBudget(t, cached) })
	}
}

func testRelayWideBudget(t *testing.T, cached bool) {
	db := pgtest.New(t)
	st := bigEvents(t, db, 120)
	var logs testkit.Buffer
	const total = 8 << 20
	tr := startBudgetRelay(t, db, st, &logs, func(c *Config) {
		c.TotalQueueBytes = total
		if !cached {
			c.CacheBytes = 0
		}
	})

	mem := startSampler()
	var peakHeld int64
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond) // a sampling period, not a synchronisation
		defer tick.Stop()
		for {
			peakHeld = max(peakHeld, tr.mem.Held())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const clients = 8
	var conns []*websocket.Conn
	for c := range clients {
		ws := dialNeverReading(t, tr.url)
		conns = append(conns, ws)
		for i := range 12 {
			require.NoError(t, ws.WriteMessage(websocket.TextMessage,
				[]byte(`["REQ","c`+strconv.Itoa(c)+`q`+strconv.Itoa(i)+`",{"#t":["big"],"limit":500}]`)))
		}
	}
	if cached {
		// Every answer is ready at once: each client blocks its four query
		// slots on a full send queue until it is shed or its write times out.
		for deadline := time.Now().Add(60 * time.Second); testutil.ToFloat64(tr.m.slowDisconnects) != clients; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%v of %d clients disconnected as too slow after 60 s; the relay holds %d bytes; its log:\n%s",
					testutil.ToFloat64(tr.m.slowDisconnects), clients, tr.mem.Held(), logs.String())
			}
		}
		require.Positive(t, cacheAnswers(tr.Relay, "hit"))
	} else {
		// Every query has run (each is observed once, stopped at a budget or
		// not), and the relay shed or timed out at least one client.
		require.Eventually(t, func() bool { return reqQueries(t, tr) == clients*12 && testutil.ToFloat64(tr.m.slowDisconnects) >= 1 },
			60*time.Second, 20*time.Millisecond)
	}
	close(stop)
	<-sampled
	heap, rss := mem.finish()
	t.Logf("8 never-reading clients (4 MiB budgets, 8 MiB relay budget): peak held %.1f MiB, peak heap +%.1f MiB, peak RSS +%.1f MiB",
		float64(peakHeld)/(1<<20), float64(heap)/(1<<20), float64(rss)/(1<<20))
	require.LessOrEqual(t, peakHeld, int64(total))
	// The heap also holds garbage awaiting collection (GOGC=100 lets it reach
	// twice the live heap) and the database connections' read buffers; without
	// the budgets, these answers would be 8 x 12 x 14 MB.
	require.Less(t, heap, int64(96<<20), "the heap grew by %d bytes", heap)
	// (The counter moves just before the log line is written.)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "client too slow; disconnecting") },
		10*time.Second, 10*time.Millisecond, "the disconnection is logged")
	for _, ws := range conns {
		_ = ws.Close()
	}
	require.Eventually(t, func() bool { return tr.mem.Held() == 0 }, 10*time.Second, 10*time.Millisecond,
		"what was held for the clients is given back when they leave")
}

// reqQueries returns how many REQ queries the relay has run.
func reqQueries(t *testing.T, tr *testRelay) uint64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, tr.m.querySeconds.WithLabelValues("req").(prometheus.Histogram).Write(m))
	return m.GetHistogram().GetSampleCount()
}
