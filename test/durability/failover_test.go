package durability_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgembed"
)

// TestEveryDaemonHealsAfterFailover: the relay, the indexer, the moderator,
// trust and the bridge run against a primary with a synchronous standby,
// each given both hosts (target_session_attrs=read-write), while four clients
// publish a fixed history, each event resent until it is answered OK true.
// Mid-stream the primary is stopped as a crash would (pg_ctl -m immediate)
// and the standby promoted. Then, with no daemon restarted:
//   - every event of the history is stored once, with no duplicate outbox row;
//   - every consumer (index-v1, moderation-v1, trust-v1, bridge-v1) reaches
//     the new head, and the node's canonical dump equals that of a node that
//     took the same history without a failover;
//   - the bridge's stream holds one message per outbox row, Nats-Msg-Id = seq,
//     across the jump of seq at the promotion (the standby's sequence resumes
//     from its WAL-logged value, up to 32 past the last value used);
//   - a live subscription open through it all is sent every live note once.
//
// It logs the unavailability: from the kill to the first OK true of an event
// committed on the new primary.
func TestEveryDaemonHealsAfterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("two clusters, five daemons and a baseline run: 85-110 s on a loaded 2-core machine; make test-long runs it")
	}
	const perClient = 300
	h := makeHistory(t, 4, perClient)
	keys := newNodeKeys(t, h)
	pubs := keys.pubs(t)
	base := baseDir(t)

	// The run with a failover.
	primary, standby := startSyncPair(t, base)
	setUpNode(t, primary)
	both := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write",
		primary.Port(), standby.Port(), dbName)
	ns := startNATS(t)
	d := startDaemons(t, both, ns, keys)
	live := subscribe(t, d.relay)
	var killed, released time.Time
	var headAtPromotion int64
	acked := publishAll(t, d.relay, h, h.size()*2/5, func() {
		killed = time.Now()
		require.NoError(t, primary.Crash(context.Background()))
		require.NoError(t, standby.Promote(context.Background()))
		// Before the failover manager lets commits through (they wait for
		// the inherited synchronous standby): the head the standby replayed.
		require.NoError(t, queryRow(t, standby.URL(dbName), "SELECT seq FROM cn_relay.outbox_head").Scan(&headAtPromotion))
		exec(t, standby.URL("postgres"), "ALTER SYSTEM RESET synchronous_standby_names")
		exec(t, standby.URL("postgres"), "SELECT pg_reload_conf()")
		released = time.Now()
	})
	url := standby.URL(dbName)
	head := quiesce(t, url)
	d.requireRunning()
	requireOnce(t, url, h, pubs)
	requireStreamEqualsOutbox(t, url, ns)

	// seq after the promotion, and the unavailability.
	var firstAfter int64
	require.NoError(t, queryRow(t, url, "SELECT min(seq) FROM cn_relay.events_outbox WHERE seq > $1", headAtPromotion).Scan(&firstAfter))
	ids := sortedKeys(acked)
	rows, err := pgxQueryPairs(t, url, `SELECT e.id, min(o.seq) FROM cn_relay.events_outbox o JOIN cn_relay.events e ON e.id = o.event_id
		WHERE e.id = ANY($1) GROUP BY e.id`, ids)
	require.NoError(t, err)
	var firstAccepted time.Time
	for id, seq := range rows {
		if seq > headAtPromotion && (firstAccepted.IsZero() || acked[id].Before(firstAccepted)) {
			firstAccepted = acked[id]
		}
	}
	require.False(t, firstAccepted.IsZero(), "events were accepted on the new primary")
	t.Logf("seq: head %d on the standby at its promotion, first seq on the new primary %d (%d values skipped); final head %d",
		headAtPromotion, firstAfter, firstAfter-headAtPromotion-1, head)
	t.Logf("unavailability: from the kill to the first event accepted on the new primary: %v (the kill, the promotion and the reset of synchronous_standby_names took %v of it)",
		firstAccepted.Sub(killed).Round(time.Millisecond), released.Sub(killed).Round(time.Millisecond))
	require.Greater(t, firstAfter, headAtPromotion)

	// The live subscription: every live note once (a deleted one may have
	// been skipped, if it was deleted before the relay loaded it).
	require.NoError(t, live.c.Err(), "the live subscription stays open through the failover")
	got := live.got()
	liveNotes, err := pgxQueryStrings(t, url, "SELECT id FROM cn_relay.events WHERE kind = 1 AND deleted_at IS NULL AND pubkey <> ALL($1)", pubs)
	require.NoError(t, err)
	var missed []string
	for _, id := range liveNotes {
		if got[id] != 1 {
			missed = append(missed, fmt.Sprintf("%s sent %d times", id, got[id]))
		}
	}
	require.Empty(t, missed, "live notes not sent exactly once to the live subscription")
	failover := canonicalDump(t, url, pubs)
	d.stop()

	// The same history without a failover.
	single := startServer(t, filepath.Join(base, "single"))
	createDB(t, single)
	setUpNode(t, single)
	ns2 := startNATS(t)
	d2 := startDaemons(t, single.URL(dbName), ns2, keys)
	publishAll(t, d2.relay, h, 0, nil)
	quiesce(t, single.URL(dbName))
	d2.requireRunning()
	requireStreamEqualsOutbox(t, single.URL(dbName), ns2)
	requireSameDump(t, canonicalDump(t, single.URL(dbName), pubs), failover, "the node after a failover equals the node without one")
}

// startSyncPair starts a primary (with the database and its schema) and a
// streaming standby that it waits for synchronously.
func startSyncPair(t *testing.T, base string) (primary, standby *pgembed.Server) {
	t.Helper()
	primary = startServer(t, filepath.Join(base, "primary"))
	createDB(t, primary)
	exec(t, primary.URL("postgres"), "ALTER SYSTEM SET synchronous_standby_names = '*'")
	exec(t, primary.URL("postgres"), "SELECT pg_reload_conf()")
	standbyDir := filepath.Join(base, "standby")
	require.NoError(t, primary.BaseBackup(context.Background(), standbyDir))
	conf, err := os.ReadFile("../../ops/replica/standby.conf")
	require.NoError(t, err)
	standby = startServer(t, standbyDir, string(conf))
	require.Eventually(t, func() bool {
		var state string
		err := queryRow(t, primary.URL("postgres"), "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication").Scan(&state)
		return err == nil && state == "sync"
	}, 2*time.Minute, 20*time.Millisecond, "the standby streams as a synchronous standby")
	return primary, standby
}

func pgxQueryPairs(t *testing.T, url, sql string, args ...any) (map[string]int64, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgxConnect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

func pgxQueryStrings(t *testing.T, url, sql string, args ...any) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgxConnect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
