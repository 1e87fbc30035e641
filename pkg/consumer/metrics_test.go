package consumer

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestMetricsFollowTheConsumer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const name = "metrics-v1"
	reg := prometheus.NewRegistry()
	r := start(t, e.db.Pool, HandlerFunc(record), Config{Name: name, Registerer: reg, PollInterval: time.Hour, MinPollInterval: time.Hour})
	// Active, and its LISTEN connection is up (it wakes once on connecting): from
	// here on only a NOTIFY can wake it within the test.
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.c.m.active) == 1 && testutil.ToFloat64(r.c.m.wakeups.WithLabelValues(wakeReconnect)) >= 1
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // let it finish the read the reconnect triggered

	e.append(t, "a", "b")
	e.append(t, "c")
	e.waitCaughtUp(t, name, 5*time.Second)
	head := e.head(t)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.c.m.processed) == 3 && testutil.ToFloat64(r.c.m.lastSeq) == float64(head) &&
			testutil.ToFloat64(r.c.m.backlog) == 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Positive(t, testutil.ToFloat64(r.c.m.wakeups.WithLabelValues(wakeNotify)), "woken by NOTIFY, not by the hour-long poll")
	require.Zero(t, testutil.ToFloat64(r.c.m.wakeups.WithLabelValues(wakePoll)))
	require.Positive(t, testutil.CollectAndCount(reg, "cn_consumer_batch_duration_seconds"))
	n, err := testutil.GatherAndCount(reg, "cn_consumer_last_seq", "cn_consumer_backlog", "cn_consumer_lag_seconds",
		"cn_consumer_processed_total", "cn_consumer_failed_total", "cn_consumer_parked_total", "cn_consumer_wakeups_total")
	require.NoError(t, err)
	require.Equal(t, 9, n) // six single series plus three wake-up sources

	require.NoError(t, r.stop())
	require.Zero(t, testutil.ToFloat64(r.c.m.active))
}
