package node_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
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
			c := testkit.Dial(t, "ws://"+cfg.Listen)
			// The cache answers once its fill is done and within its wait for
			// the outbox head (under load a REQ may read the database:
			// behind), so REQs are sent until one is a hit, for 20 s at most;
			// without a cache, three.
			deadline := time.Now().Add(20 * time.Second)
			for i := 0; ; i++ {
				evs, reason := c.Req("q"+strconv.Itoa(i), map[string]any{"kinds": []int{1}, "#t": []string{"cache"}, "limit": 10})
				require.Empty(t, reason)
				require.Empty(t, evs, "no stored events, then EOSE")
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
