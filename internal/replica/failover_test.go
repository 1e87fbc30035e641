package replica_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// answer sends a REQ and waits until the subscription has EOSE and every
// event of want (stored, or live after EOSE), failing on CLOSED or after
// 20 s.
func answer(t *testing.T, cl *testkit.Client, id string, f nostr.Filter, want []string) testkit.SubState {
	t.Helper()
	require.NoError(t, req(cl, id, f))
	var s testkit.SubState
	require.Eventually(t, func() bool {
		s = cl.Sub(id).State()
		require.Empty(t, s.Reason, "REQ %s closed", id)
		if !s.EOSE {
			return false
		}
		got := map[string]bool{}
		for _, ev := range append(s.Stored, s.Live...) {
			require.False(t, got[ev.ID], "REQ %s: event twice", id)
			got[ev.ID] = true
		}
		for _, w := range want {
			if !got[w] {
				return false
			}
		}
		return true
	}, 20*time.Second, 5*time.Millisecond, "REQ %s answered in full", id)
	require.NoError(t, cl.Send("CLOSE", id))
	return s
}

// resume resumes a replica's replay. The statement itself may be cancelled
// by the replay it resumes (max_standby_streaming_delay = 0): it is
// retried until replay runs.
func resume(t *testing.T, url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), "SELECT pg_wal_replay_resume()")
		var paused bool
		return conn.QueryRow(context.Background(), "SELECT pg_is_wal_replay_paused()").Scan(&paused) == nil && !paused
	}, 20*time.Second, 10*time.Millisecond, "replay resumed")
}

// TestReplicaFailures: a replica whose queries WAL replay cancels, one far
// behind, one down: every REQ is answered in full from elsewhere, and the
// relay keeps serving.
func TestReplicaFailures(t *testing.T) {
	c := startCluster(t)
	rep := c.AddReplica(t, "fast", "max_standby_streaming_delay = 0", "hot_standby_feedback = off")
	r := startRelay(t, c, time.Second, rep)
	name := replicaLabel(rep)
	usable := `cn_relay_replica_usable{replica="` + name + `"}`
	r.waitMetric(t, usable, func(v float64) bool { return v == 1 }, "the replica serves")

	sk := nostr.GeneratePrivateKey()
	pub := testkit.Dial(t, r.ws)
	var want []string
	publish := func(n int) {
		for range n {
			ev := testkit.SignNow(t, sk, 1, nostr.Tags{{"t", "failover"}}, fmt.Sprintf("event %d", len(want)))
			require.NoError(t, publishOK(pub, ev))
			want = append(want, ev.ID)
		}
	}
	publish(50)
	filter := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"failover"}}, Limit: 5000}
	var reqs atomic.Int64
	reqID := func() string { return fmt.Sprintf("q%d", reqs.Add(1)) }

	t.Run("cancelled by WAL replay", func(t *testing.T) {
		// Exclusive locks taken on the primary are replayed on the replica,
		// which (max_standby_streaming_delay = 0) cancels the queries that
		// hold the table at once: SQLSTATE 40001.
		ctx, stop := context.WithCancel(context.Background())
		lockErr := make(chan error, 1)
		go func() {
			conn, err := pgx.Connect(ctx, c.Primary.URL(dbName))
			if err != nil {
				lockErr <- err
				return
			}
			defer conn.Close(context.Background())
			for ctx.Err() == nil {
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "LOCK TABLE cn_relay.events IN ACCESS EXCLUSIVE MODE")
					return err
				})
				if err != nil && ctx.Err() == nil {
					lockErr <- err
					return
				}
			}
			lockErr <- nil
		}()
		var wg sync.WaitGroup
		for range 4 {
			cl := testkit.Dial(t, r.ws)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					answer(t, cl, reqID(), filter, want)
				}
			}()
		}
		r.waitMetric(t, `cn_relay_read_retries_total{reason="conflict"}`, func(v float64) bool { return v >= 1 }, "a replica query cancelled by WAL replay was retried")
		stop()
		wg.Wait()
		require.NoError(t, <-lockErr)
		require.Equal(t, 1.0, r.metric(t, usable), "a conflict does not mark the replica down")
	})

	t.Run("replaced on the primary", func(t *testing.T) {
		// A profile replaced on the primary while the replica (replay
		// paused, not yet lagging past --max-replica-lag) still has the old
		// version: the REQ reads the replica, and the handoff leaves the old
		// version out and puts the new one in the stored part, as the
		// primary would answer.
		v1 := testkit.SignNow(t, sk, 0, nil, `{"name":"v1"}`)
		v1.CreatedAt -= 10
		require.NoError(t, v1.Sign(sk))
		require.NoError(t, publishOK(pub, v1))
		require.Eventually(t, func() bool {
			var n int
			err := queryRow(t, rep.URL(dbName), "SELECT count(*) FROM cn_relay.events WHERE id = $1", v1.ID).Scan(&n)
			if recoveryConflict(err) {
				return false // WAL replay cancelled the check itself: ask again
			}
			require.NoError(t, err)
			return n == 1
		}, 20*time.Second, 10*time.Millisecond, "the replica has the first version")
		exec(t, rep.URL(dbName), "SELECT pg_wal_replay_pause()")
		v2 := testkit.SignNow(t, sk, 0, nil, `{"name":"v2"}`)
		require.NoError(t, publishOK(pub, v2))
		before := r.metric(t, `cn_relay_read_seconds_count{op="req",pool="`+name+`"}`)
		s := answer(t, testkit.Dial(t, r.ws), reqID(), nostr.Filter{Kinds: []int{0}, Authors: []string{v1.PubKey}}, []string{v2.ID})
		require.Equal(t, before+1, r.metric(t, `cn_relay_read_seconds_count{op="req",pool="`+name+`"}`), "the replica answered")
		for _, ev := range append(s.Stored, s.Live...) {
			require.NotEqual(t, v1.ID, ev.ID, "the replaced version is not sent")
		}
		require.Len(t, s.Stored, 1, "the stored part is the primary's answer")
		require.Equal(t, v2.ID, s.Stored[0].ID, "the stored part is the primary's answer")
		resume(t, rep.URL(dbName))
		r.waitMetric(t, usable, func(v float64) bool { return v == 1 }, "the replica serves")
	})

	t.Run("far behind", func(t *testing.T) {
		exec(t, rep.URL(dbName), "SELECT pg_wal_replay_pause()")
		publish(20)
		r.waitMetric(t, usable, func(v float64) bool { return v == 0 }, "a replica more than --max-replica-lag behind is skipped")
		before := r.metric(t, `cn_relay_read_seconds_count{op="req",pool="primary"}`)
		s := answer(t, testkit.Dial(t, r.ws), reqID(), filter, want)
		require.Len(t, s.Stored, len(want), "the primary answers the stored part in full")
		require.Equal(t, before+1, r.metric(t, `cn_relay_read_seconds_count{op="req",pool="primary"}`))
		resume(t, rep.URL(dbName))
		r.waitMetric(t, usable, func(v float64) bool { return v == 1 }, "the replica serves again once it caught up")
	})

	t.Run("down", func(t *testing.T) {
		cl := testkit.Dial(t, r.ws)
		answer(t, cl, reqID(), filter, want) // (a replica connection in the pool)
		stop(t, rep)
		for range 20 {
			answer(t, cl, reqID(), filter, want)
		}
		r.waitMetric(t, usable, func(v float64) bool { return v == 0 }, "a replica that is down is skipped")
		publish(5)
		s := answer(t, cl, reqID(), filter, want)
		require.Len(t, s.Stored, len(want))
		require.True(t, slices.ContainsFunc(s.Stored, func(e *nostr.Event) bool { return e.ID == want[len(want)-1] }))
	})
}
