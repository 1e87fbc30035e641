package durability_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/restore"
	"github.com/kukuri/communitynode/internal/store"
)

// TestRestoreDrill: a node (relay and bridge) with WAL archiving takes
// events; a base backup (pg_basebackup) is taken while it runs; more events,
// then a named restore point (pg_create_restore_point) and more events, all
// published to the bridge's stream. The server is lost; the base backup plus
// the archive are restored to the restore point into a new cluster. Then:
//   - cnctl export of the restored node equals the export of the original
//     at the restore point;
//   - the consumers' offsets in the restored database are not ahead of its
//     outbox (they are restored with it), but the bridge's stream is: it
//     holds the rows published after the restore point (restore.Check finds
//     them, as cnctl status and cnctl outbox after-restore do);
//   - after the repair (restore.Advance: cnctl outbox after-restore
//     --execute) the relay and the bridge run on the restored node, new
//     events are accepted and each of their rows reaches the stream once,
//     with a seq no message of the stream had: no seq is handed out twice.
func TestRestoreDrill(t *testing.T) {
	ctx := context.Background()
	base := baseDir(t)
	archive := filepath.Join(base, "archive")
	require.NoError(t, os.Mkdir(archive, 0o777))
	require.NoError(t, os.Chmod(archive, 0o777)) // (the server may run as another account)
	primary := startServer(t, filepath.Join(base, "primary"),
		"archive_mode = on", fmt.Sprintf("archive_command = 'cp %%p %s/%%f'", archive))
	createDB(t, primary)
	ns := startNATS(t)
	h := makeHistory(t, 2, 160)
	part := func(from, to int) history { // events [from, to) of each client
		var p history
		p.keys = h.keys
		for _, evs := range h.clients {
			p.clients = append(p.clients, evs[from:to])
		}
		return p
	}
	keys := newNodeKeys(t, h)
	d := startDaemons(t, primary.URL(dbName), ns, keys, "relay", "bridge")
	publishAll(t, d.relay, part(0, 50), 0, nil)

	// The base backup, taken while the node runs.
	backup := filepath.Join(base, "restored")
	require.NoError(t, primary.BaseBackup(ctx, backup))
	publishAll(t, d.relay, part(50, 100), 0, nil)
	quiesce(t, primary.URL(dbName), "bridge-v1")

	// The point to restore to: nothing is written between the export and the
	// restore point (the clients are done, the bridge only moves its offset).
	atPoint := export(t, primary.URL(dbName))
	var pointLSN string
	require.NoError(t, queryRow(t, primary.URL(dbName), "SELECT pg_create_restore_point('drill')::text").Scan(&pointLSN))
	headAtPoint := quiesce(t, primary.URL(dbName), "bridge-v1")

	// After it: rows the stream gets and the restored node will not have.
	publishAll(t, d.relay, part(100, 160), 0, nil)
	lost := quiesce(t, primary.URL(dbName), "bridge-v1")
	streamBefore := streamIDs(t, ns)
	var segment string
	require.NoError(t, queryRow(t, primary.URL(dbName), "SELECT pg_walfile_name(pg_switch_wal())").Scan(&segment))
	require.Eventually(t, func() bool {
		var archived string
		err := queryRow(t, primary.URL(dbName), "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver").Scan(&archived)
		return err == nil && archived >= segment
	}, 2*time.Minute, 50*time.Millisecond, "the WAL up to the restore point is archived")
	d.stop()
	require.NoError(t, primary.Crash(ctx)) // the server is lost

	// Restore: the base backup, recovery from the archive to the restore point.
	require.NoError(t, os.Remove(filepath.Join(backup, "standby.signal")))
	require.NoError(t, os.WriteFile(filepath.Join(backup, "recovery.signal"), nil, 0o644))
	restored := startServer(t, backup,
		fmt.Sprintf("restore_command = 'cp %s/%%f %%p'", archive),
		"recovery_target_name = 'drill'", "recovery_target_action = 'promote'")
	require.Eventually(t, func() bool {
		var inRecovery bool
		err := queryRow(t, restored.URL(dbName), "SELECT pg_is_in_recovery()").Scan(&inRecovery)
		return err == nil && !inRecovery
	}, 2*time.Minute, 50*time.Millisecond, "the restored cluster ends its recovery at the restore point")
	url := restored.URL(dbName)
	require.Equal(t, atPoint, export(t, url), "cnctl export of the restored node = export of the original at the restore point")

	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	stream, closeNATS, err := restore.OpenStream(ctx, ns.url(), testStream)
	require.NoError(t, err)
	defer closeNATS()
	r, err := restore.Check(ctx, pool, stream, 0)
	require.NoError(t, err)
	t.Logf("restored: head %d (original: %d at the point, %d at the end), next seq %d; stream last %d, %d messages ahead",
		r.Head, headAtPoint, lost, r.Next, r.StreamLast, r.StreamAhead)
	require.Equal(t, headAtPoint, r.Head, "the restored outbox ends at the restore point")
	require.Empty(t, r.Consumers, "offsets restored with the outbox are not ahead of it")
	require.Equal(t, lost, r.StreamLast, "the stream holds the rows published after the restore point")
	require.Positive(t, r.StreamAhead)
	require.True(t, r.NeedsRepair(), "the restored sequence would hand out seqs the stream already holds")

	// The repair (cnctl outbox after-restore --execute), before the relay.
	before, after, err := restore.Advance(ctx, pool, r.Floor)
	require.NoError(t, err)
	t.Logf("the outbox sequence advanced: next seq %d -> %d", before, after)
	r2, err := restore.Check(ctx, pool, stream, 0)
	require.NoError(t, err)
	require.False(t, r2.NeedsRepair(), "after the repair")

	// The node runs again on the restored database, with the same stream.
	d2 := startDaemons(t, url, ns, keys, "relay", "bridge")
	var fresh history
	for c := 0; c < 3; c++ {
		sk := fixedKey(500 + c)
		fresh.keys = append(fresh.keys, sk)
		var evs []*nostr.Event
		for j := 0; j < 10; j++ {
			ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1_770_000_000 + j), Tags: nostr.Tags{{"t", "restored"}},
				Content: fmt.Sprintf("client %d note %d after the restore", c, j)}
			require.NoError(t, ev.Sign(sk))
			evs = append(evs, ev)
		}
		fresh.clients = append(fresh.clients, evs)
	}
	publishAll(t, d2.relay, fresh, 0, nil)
	quiesce(t, url, "bridge-v1")
	d2.requireRunning()

	// Every new row is in the stream, once, after what it held, with a seq no
	// message of the stream had.
	newSeqs, err := pgxQuery(t, url, "SELECT seq FROM cn_relay.events_outbox WHERE seq > $1 ORDER BY seq", r.Head)
	require.NoError(t, err)
	require.NotEmpty(t, newSeqs)
	want := slices.Clone(streamBefore)
	for _, s := range newSeqs {
		require.Greater(t, s, r.StreamLast, "a new row's seq is above every seq the stream holds")
		want = append(want, strconv.FormatInt(s, 10))
	}
	require.Equal(t, want, streamIDs(t, ns), "the stream: what it held, then every new row once, in order")
	d2.stop()
}

// export is what `cnctl export` writes: every visible event, oldest first.
func export(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var buf bytes.Buffer
	n, err := bulk.Export(ctx, store.NewReader(pool), nostr.Filter{}, &buf)
	require.NoError(t, err)
	require.Positive(t, n)
	return buf.String()
}
