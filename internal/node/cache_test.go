package node_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// cacheHits is the relay's cn_relay_cache_answers_total{result="hit"}.
func cacheHits(t *testing.T, metricsURL string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, `cn_relay_cache_answers_total{result="hit"}`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err, line)
			sum += v
		}
	}
	require.NoError(t, sc.Err())
	return sum
}

// TestRelayComposesTheCache: node.Relay puts the event cache in front of the
// database's reads when --cache-bytes > 0 (a REQ it holds is answered from
// it: cn_relay_cache_answers_total counts the hit), and leaves it out at 0
// (every REQ reads the database; nothing is counted).
func TestRelayComposesTheCache(t *testing.T) {
	for _, bytes := range []int{64 << 20, 0} {
		t.Run(strconv.Itoa(bytes), func(t *testing.T) {
			db := pgtest.New(t)
			cfg := nodetest.RelayConfig(t)
			cfg.CacheBytes = bytes
			nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler)}, false)
			metrics := "http://" + cfg.MetricsListen + "/metrics"
			// A plain WebSocket client: go-nostr's QuerySync leaves a goroutine
			// spinning per query, and its Close races with its reader (the race
			// detector reports it).
			ws, _, err := websocket.DefaultDialer.Dial("ws://"+cfg.Listen, nil)
			require.NoError(t, err)
			defer ws.Close()
			// The cache answers once its fill is done and within its wait for
			// the outbox head (under load a REQ may read the database:
			// behind), so REQs are sent until one is a hit, for 20 s at most;
			// without a cache, three.
			deadline := time.Now().Add(20 * time.Second)
			for i := 0; ; i++ {
				sub := "q" + strconv.Itoa(i)
				require.NoError(t, ws.WriteJSON([]any{"REQ", sub, map[string]any{"kinds": []int{1}, "#t": []string{"cache"}, "limit": 10}}))
				require.NoError(t, ws.SetReadDeadline(time.Now().Add(30*time.Second)))
				for { // (the relay's AUTH challenge may come first)
					var msg []any
					require.NoError(t, ws.ReadJSON(&msg))
					if len(msg) > 0 && msg[0] == "AUTH" {
						continue
					}
					require.Equal(t, []any{"EOSE", sub}, msg, "no stored events, then EOSE")
					break
				}
				require.NoError(t, ws.WriteJSON([]any{"CLOSE", sub}))
				if cacheHits(t, metrics) > 0 || time.Now().After(deadline) || (bytes == 0 && i >= 2) {
					break
				}
			}
			if bytes > 0 {
				require.Positive(t, cacheHits(t, metrics), "no REQ was answered from the cache")
			} else {
				require.Zero(t, cacheHits(t, metrics), "a REQ was answered from a cache that is off")
			}
		})
	}
}
