package relay

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/loadgen"
	"github.com/kukuri/communitynode/internal/negentropy"
)

// burstKinds are the kinds of BenchmarkNegentropyBurst's events, with their
// share of them (per 100): one session per kind, as an app opens one per
// filter.
var burstKinds = []struct{ kind, share int }{
	{1, 50}, {7, 20}, {6, 5}, {16, 5}, {1111, 5}, {20, 3}, {21, 2}, {22, 2}, {1063, 2}, {1068, 2}, {9802, 2}, {30023, 2},
}

// BenchmarkNegentropyBurst: CN_BENCH_BURST_CONNS connections (default 100)
// each open one NIP-77 session per kind of burstKinds (12) at the same
// instant, on a relay at the default --max-sync-loads (2) over Postgres
// holding CN_BENCH_BURST_EVENTS events (default 100,000, written by COPY,
// unsigned, then vacuumed; the kinds' shares as burstKinds). Each session's
// filter is {"kinds":[k]} (the tree does not serve it: its items are read),
// its initial message an empty client's; once its first NEG-MSG comes, the
// client closes it (NEG-CLOSE). Meanwhile another connection sends the same
// REQ ({"kinds":[7],"limit":50}, the event cache off: read from Postgres)
// one after another; before the burst it sent it 50 times alone.
//
// It fails unless every session gets its NEG-MSG (none refused), and
// reports: the sessions answered and refused, the time from a session's
// NEG-OPEN to its first NEG-MSG (p50, p99, max), the burst's wall time (the
// first NEG-OPEN to the last answer), the REQ's time to EOSE without and
// during the burst (p50, p99), and the load average before and after. Run
// with -benchtime 1x.
func BenchmarkNegentropyBurst(b *testing.B) {
	conns := envInt("CN_BENCH_BURST_CONNS", 100)
	events := envInt("CN_BENCH_BURST_EVENTS", 100_000)
	for range b.N {
		b.StopTimer()
		e := newNegEnvTB(b, func(cfg *Config) {
			cfg.CacheBytes = 0 // (the REQ reads Postgres, as the sessions do)
			cfg.MaxConnsPerIP = conns + 10
		})
		require.Equal(b, 2, e.relay.cfg.MaxSyncLoads)
		ctx := context.Background()
		pubkey, sig := randomHex(32), strings.Repeat("0", 128)
		rows := make([][]any, 0, 10_000)
		kindOf := make([]int, 0, 100)
		for _, k := range burstKinds {
			for range k.share {
				kindOf = append(kindOf, k.kind)
			}
		}
		for i := range events {
			rows = append(rows, []any{randomHex(32), pubkey, int32(kindOf[i%len(kindOf)]), int64(1_700_000_000 + i/10), "", sig})
			if len(rows) == cap(rows) || i == events-1 {
				_, err := e.db.Pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "events"},
					[]string{"id", "pubkey", "kind", "created_at", "content", "sig"}, pgx.CopyFromRows(rows))
				require.NoError(b, err)
				rows = rows[:0]
			}
		}
		_, err := e.db.Pool.Exec(ctx, "VACUUM ANALYZE cn_relay.events")
		require.NoError(b, err)
		cl, err := negentropy.NewClient(nil, 60_000)
		require.NoError(b, err)
		initial, err := cl.Start()
		require.NoError(b, err)
		cl.Close()

		req := burstDial(b, e.relay.url)
		reqOnce := func() time.Duration {
			start := time.Now()
			burstSend(b, req, "REQ", "r", map[string]any{"kinds": []int{7}, "limit": 50})
			for {
				m := burstRead(b, req)
				if m[0] == "EOSE" {
					took := time.Since(start)
					burstSend(b, req, "CLOSE", "r")
					return took
				}
			}
		}
		var alone []time.Duration
		for range 50 {
			alone = append(alone, reqOnce())
		}

		sockets := make([]*websocket.Conn, conns)
		for i := range sockets {
			sockets[i] = burstDial(b, e.relay.url)
		}
		load0 := loadAverage()
		var (
			mu      sync.Mutex
			firsts  []time.Duration
			refused []string
			wg      sync.WaitGroup
		)
		go_ := make(chan struct{})
		for _, ws := range sockets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-go_
				sent := map[string]time.Time{}
				for _, k := range burstKinds {
					id := "k" + strconv.Itoa(k.kind)
					sent[id] = time.Now()
					burstSend(b, ws, "NEG-OPEN", id, map[string]any{"kinds": []int{k.kind}}, initial)
				}
				for range burstKinds {
					m := burstRead(b, ws)
					took := time.Since(sent[m[1]])
					mu.Lock()
					switch m[0] {
					case "NEG-MSG":
						firsts = append(firsts, took)
					default:
						refused = append(refused, strings.Join(m, " "))
					}
					mu.Unlock()
					burstSend(b, ws, "NEG-CLOSE", m[1])
				}
			}()
		}
		done := make(chan struct{})
		b.StartTimer()
		began := time.Now()
		close(go_)
		go func() { wg.Wait(); close(done) }()
		var during []time.Duration
	reqs:
		for {
			select {
			case <-done:
				break reqs
			default:
				during = append(during, reqOnce())
			}
		}
		wall := time.Since(began)
		b.StopTimer()
		load1 := loadAverage()
		for _, ws := range sockets {
			_ = ws.Close()
		}
		_ = req.Close()
		f, a, d := loadgen.Summarize(firsts), loadgen.Summarize(alone), loadgen.Summarize(during)
		b.ReportMetric(float64(len(firsts)), "sessions-answered")
		b.ReportMetric(float64(len(refused)), "sessions-refused")
		b.ReportMetric(f.Min.Seconds()*1000, "first-msg-min-ms")
		b.ReportMetric(f.P50.Seconds()*1000, "first-msg-p50-ms")
		b.ReportMetric(f.P99.Seconds()*1000, "first-msg-p99-ms")
		b.ReportMetric(f.Max.Seconds()*1000, "first-msg-max-ms")
		b.ReportMetric(wall.Seconds(), "burst-s")
		b.ReportMetric(a.P50.Seconds()*1000, "req-alone-p50-ms")
		b.ReportMetric(a.P99.Seconds()*1000, "req-alone-p99-ms")
		b.ReportMetric(d.P50.Seconds()*1000, "req-burst-p50-ms")
		b.ReportMetric(d.P99.Seconds()*1000, "req-burst-p99-ms")
		b.ReportMetric(float64(d.Count), "req-burst-count")
		b.ReportMetric(load0, "loadavg-before")
		b.ReportMetric(load1, "loadavg-after")
		if len(refused) > 0 {
			b.Errorf("%d sessions refused, the first: %s", len(refused), refused[0])
		}
		require.Len(b, firsts, conns*len(burstKinds), "every session answered")
		b.StartTimer()
	}
}

// loadAverage is the 1-minute load average (0 where /proc has none).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return v
}

// burstDial connects and reads the NIP-42 challenge sent on connect.
func burstDial(b *testing.B, url string) *websocket.Conn {
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(b, err)
	require.Equal(b, "AUTH", burstRead(b, ws)[0])
	return ws
}

func burstSend(b *testing.B, ws *websocket.Conn, parts ...any) {
	data, err := json.Marshal(parts)
	if err == nil {
		err = ws.WriteMessage(websocket.TextMessage, data)
	}
	if err != nil {
		b.Error(err)
	}
}

// burstRead reads one message: its first three elements as strings (the
// type, the subscription id, and an EVENT's or a NEG-ERR's third).
func burstRead(b *testing.B, ws *websocket.Conn) []string {
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Minute))
	_, data, err := ws.ReadMessage()
	if err != nil {
		b.Error(err)
		return []string{"error", "", err.Error()}
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		b.Error(err)
		return []string{"error", "", err.Error()}
	}
	out := make([]string, 3)
	for i := range min(3, len(raw)) {
		if json.Unmarshal(raw[i], &out[i]) != nil {
			out[i] = string(raw[i])
		}
	}
	return out
}
