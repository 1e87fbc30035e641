package node

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadmeStatesTheDefaults: README's table of environment variables gives
// each default declared in defaults.go, so the docs cannot drift from the
// flags.
func TestReadmeStatesTheDefaults(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	rows := map[string]string{} // env var -> its row in the table
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| `CN_") {
			name := strings.Trim(strings.SplitN(line, "|", 3)[1], " `")
			rows[name] = line
		}
	}
	// short writes a duration as the README does: 10m, not 10m0s.
	short := func(d time.Duration) string {
		s := d.String()
		for _, zero := range []string{"m0s", "h0m"} {
			if strings.HasSuffix(s, zero) {
				s = strings.TrimSuffix(s, zero[1:])
			}
		}
		return s
	}
	for env, want := range map[string]string{
		"CN_RELAY_LISTEN":             "default `" + DefaultRelayListen + "`",
		"CN_RELAY_METRICS_LISTEN":     "default `" + DefaultRelayMetricsListen + "`",
		"CN_INDEXER_LISTEN":           "default `" + DefaultIndexerListen + "`",
		"CN_MODERATOR_LISTEN":         "default `" + DefaultModeratorListen + "`",
		"CN_TRUST_LISTEN":             "default `" + DefaultTrustListen + "`",
		"CN_DASHBOARD_LISTEN":         "default `" + DefaultDashboardListen + "`",
		"CN_DEV_NATS_LISTEN":          "default `" + DefaultDevNATSListen + "`",
		"CN_INDEXER_BATCH_SIZE":       fmt.Sprintf("(default %d)", DefaultIndexerBatchSize),
		"CN_MODERATOR_BATCH_SIZE":     fmt.Sprintf("(default %d)", DefaultModeratorBatchSize),
		"CN_TRUST_BATCH_SIZE":         fmt.Sprintf("(default %d)", DefaultTrustBatchSize),
		"CN_TRUST_RECOMPUTE_INTERVAL": "(default " + short(DefaultRecomputeInterval) + ")",
		"CN_TRUST_PUBLISH_INTERVAL":   "(default " + short(DefaultPublishInterval) + ")",
		"CN_TRUST_ASSERT_MIN_RANK":    fmt.Sprintf("(default %d)", DefaultAssertMinRank),
		"CN_BRIDGE_LISTEN":            "default `" + DefaultBridgeListen + "`",
		"CN_RELAY_MAX_REPLICA_LAG":    "(default " + short(DefaultMaxReplicaLag) + ")",
		"CN_BRIDGE_BATCH_SIZE":        fmt.Sprintf("(default %d)", DefaultBridgeBatchSize),
		"CN_BRIDGE_STREAM":            "default `" + DefaultBridgeStream + "`",
		"CN_BRIDGE_SUBJECT_PREFIX":    "default `" + DefaultBridgeSubjectPrefix + "`",
	} {
		row, ok := rows[env]
		require.True(t, ok, "README has no row for %s", env)
		require.Contains(t, row, want, "README's row for %s", env)
	}
}
