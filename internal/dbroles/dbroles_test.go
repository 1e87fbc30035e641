package dbroles_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// apply grants the default roles on db.
func apply(t *testing.T, db *pgtest.DB) {
	t.Helper()
	require.NoError(t, dbroles.Apply(context.Background(), db.Conn(t), dbroles.Config{}))
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// denied asserts that sql fails with insufficient_privilege (SQLSTATE 42501).
func denied(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	_, err := c.Exec(context.Background(), sql, args...)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want a permission error, got %v", sql, err)
	require.Equal(t, "42501", pgErr.Code, "%s: %v", sql, err)
}

func allowed(t *testing.T, c *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	tag, err := c.Exec(context.Background(), sql, args...)
	require.NoError(t, err, sql)
	return tag.RowsAffected()
}

const insertEvent = `INSERT INTO cn_relay.events (id, pubkey, kind, created_at, content, sig)
	VALUES (repeat('a', 64), repeat('b', 64), 1, 1, 'x', repeat('c', 128))`

// TestConsumerRolesKeepToTheirOwn shows what a consumer's role cannot do: move
// another consumer's offset (or rename its own row into another's), write
// cn_relay.events or another consumer's schema.
func TestConsumerRolesKeepToTheirOwn(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, last_seq)
		VALUES ('moderation-v1', 5), ('trust-v1', 7)`)
	require.NoError(t, err)
	apply(t, db)
	cfg := dbroles.Config{}

	ix := connect(t, db.LoginAs(t, cfg.Role(dbroles.Indexer), false))
	// Its own row: register, take the lease, advance.
	require.EqualValues(t, 1, allowed(t, ix, "INSERT INTO cn_relay.consumer_offsets (consumer) VALUES ('index-v1')"))
	require.EqualValues(t, 1, allowed(t, ix, "UPDATE cn_relay.consumer_offsets SET owner_id = 'me', owner_generation = owner_generation + 1 WHERE consumer = 'index-v1'"))
	allowed(t, ix, "SELECT cn_relay.consumer_advance('index-v1', 'me', 1, 0, 3, true)")
	// Everyone's offsets are readable (status, retention).
	var n int
	require.NoError(t, ix.QueryRow(ctx, "SELECT count(*) FROM cn_relay.consumer_offsets").Scan(&n))
	require.Equal(t, 3, n)
	// Not another consumer's.
	denied(t, ix, "UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'moderation-v1'")
	denied(t, ix, "UPDATE cn_relay.consumer_offsets SET last_seq = 0") // every row
	denied(t, ix, "INSERT INTO cn_relay.consumer_offsets (consumer) VALUES ('other-v1')")
	denied(t, ix, "UPDATE cn_relay.consumer_offsets SET consumer = 'index-v1' WHERE consumer = 'trust-v1'")
	denied(t, ix, "DELETE FROM cn_relay.consumer_offsets WHERE consumer = 'moderation-v1'")
	denied(t, ix, "INSERT INTO cn_relay.consumer_dead_letters (consumer, seq, op, event_id, topic_id, kind, created_at, ingested_at, error, attempts) VALUES ('moderation-v1', 1, 'upsert', 'e', 't', 1, 1, now(), 'x', 1)")
	_, err = ix.Exec(ctx, "SELECT cn_relay.consumer_advance('moderation-v1', 'me', 1, 5, 9, true)")
	require.Error(t, err)
	// Not the relay's tables, the outbox, or another consumer's schema.
	denied(t, ix, insertEvent)
	denied(t, ix, "UPDATE cn_relay.events SET deleted_at = now()")
	denied(t, ix, "INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at) VALUES ('x', 't', 1)")
	denied(t, ix, "INSERT INTO cn_relay.events_outbox (op, event_id, topic_id, kind, created_at) VALUES ('upsert', 'x', 't', 1, 1)")
	denied(t, ix, "DELETE FROM cn_moderation.labels")
	denied(t, ix, "SELECT cn_relay.outbox_ensure_partitions(2)")
	var offsets []int64
	rows, err := db.Pool.Query(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets ORDER BY consumer")
	require.NoError(t, err)
	offsets, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{3, 5, 7}, offsets, "index-v1 moved its own offset only")

	mod := connect(t, db.LoginAs(t, cfg.Role(dbroles.Moderator), false))
	require.EqualValues(t, 1, allowed(t, mod, "UPDATE cn_relay.consumer_offsets SET updated_at = now() WHERE consumer = 'moderation-v1'"))
	denied(t, mod, "UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'index-v1'")
	denied(t, mod, "DELETE FROM cn_index.documents")
	denied(t, mod, "UPDATE cn_admin.state SET version = version + 1")
	// The moderator publishes through the store path: that is a write to cn_relay.events.
	require.EqualValues(t, 1, allowed(t, mod, insertEvent))
	// It removes superseded versions of the node's own state (issue 47):
	// DELETE on events, not on their topic rows or the outbox.
	require.EqualValues(t, 1, allowed(t, mod, "DELETE FROM cn_relay.events WHERE id = repeat('a', 64)"))
	denied(t, mod, "DELETE FROM cn_relay.event_topics")
	denied(t, mod, "DELETE FROM cn_relay.events_outbox")
	denied(t, mod, "DELETE FROM cn_relay.members")
	// Blossom (schema 0038): the moderator hides reported blobs and logs it,
	// nothing more.
	require.EqualValues(t, 0, allowed(t, mod, "UPDATE cn_blossom.blobs SET hidden = 'x', hidden_at = now() WHERE hidden IS NULL"))
	require.EqualValues(t, 1, allowed(t, mod, "INSERT INTO cn_blossom.log (op, sha256) VALUES ('hide', '\\x00')"))
	denied(t, mod, "UPDATE cn_blossom.blobs SET size = 0")
	denied(t, mod, "DELETE FROM cn_blossom.owners")
	denied(t, mod, "DELETE FROM cn_blossom.blobs")

	dash := connect(t, db.LoginAs(t, cfg.Role(dbroles.Dashboard), false))
	require.NoError(t, dash.QueryRow(ctx, "SELECT count(*) FROM cn_relay.consumer_offsets").Scan(&n))
	require.Equal(t, 3, n)
	denied(t, dash, "UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'index-v1'")
	denied(t, dash, insertEvent)
	denied(t, dash, "DELETE FROM cn_relay.events")
	denied(t, dash, "SELECT count(*) FROM cn_admin.log")
	denied(t, dash, "SELECT count(*) FROM cn_admin.nip98_seen")
	denied(t, dash, "UPDATE cn_admin.state SET version = version + 1")
	require.NoError(t, dash.QueryRow(ctx, "SELECT count(*) FROM cn_admin.pubkeys").Scan(&n), "the console reads the NIP-86 lists")
	require.NoError(t, dash.QueryRow(ctx, "SELECT count(*) FROM cn_moderation.reports").Scan(&n), "the console reads the reports")
	require.NoError(t, dash.QueryRow(ctx, "SELECT count(*) FROM cn_trust.scores").Scan(&n), "the console reads trust ranks")

	relay := connect(t, db.LoginAs(t, cfg.Role(dbroles.Relay), false))
	denied(t, relay, "UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'index-v1'")
	require.EqualValues(t, 0, allowed(t, relay, "DELETE FROM cn_blossom.owners"), "the relay serves and writes Blossom")
	denied(t, dash, "DELETE FROM cn_blossom.owners")
	require.NoError(t, dash.QueryRow(ctx, "SELECT count(*) FROM cn_blossom.blobs").Scan(&n), "the console reads blobs")
	denied(t, relay, "DELETE FROM cn_relay.events_outbox")
	denied(t, relay, "INSERT INTO cn_index.documents (event_id) VALUES ('x')")
}

// TestApplyIsIdempotentAndConcurrent applies one fresh set of roles on several
// databases at once (the roles are cluster-wide, so the creations race) and again.
func TestApplyIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	var b [3]byte
	_, _ = rand.Read(b[:])
	cfg := dbroles.Config{Prefix: "cn_t" + hex.EncodeToString(b[:]) + "_"}
	keep := pgtest.New(t)
	// Runs after the databases below are dropped (cleanups run last-in first-out).
	t.Cleanup(func() {
		for _, s := range slices.Backward(dbroles.Services) {
			_, err := keep.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{cfg.Role(s)}.Sanitize())
			require.NoError(t, err)
		}
	})
	dbs := make([]*pgtest.DB, 4)
	for i := range dbs {
		dbs[i] = pgtest.New(t)
		t.Cleanup(func() { dbs[i].Drop(t) }) // before the roles that own their objects
	}
	var g errgroup.Group
	for _, db := range dbs {
		conn := db.Conn(t)
		g.Go(func() error { return dbroles.Apply(context.Background(), conn, cfg) })
	}
	require.NoError(t, g.Wait())
	dump := func() string {
		var s string
		require.NoError(t, dbs[0].Pool.QueryRow(context.Background(), `
			SELECT string_agg(c.oid::regclass::text || ' ' || c.relowner::regrole::text || ' ' || coalesce(c.relacl::text, ''), E'\n' ORDER BY c.oid::regclass::text)
			  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname LIKE 'cn\_%'`).Scan(&s))
		return s
	}
	first := dump()
	require.Contains(t, first, "cn_relay.events "+cfg.Role(dbroles.Operator))
	require.NoError(t, dbroles.Apply(context.Background(), dbs[0].Conn(t), cfg))
	require.Equal(t, first, dump(), "a second Apply changes nothing")
	require.Error(t, dbroles.Config{Prefix: "Bad-Prefix"}.Validate())
}

// TestApplyWhileTheNodeWrites runs Apply (`cnctl migrate` on a live node) on
// fresh databases while other sessions extend the outbox's partitions, as every
// relay and consumer writer does. Apply's ownership changes lock the outbox
// tables in another order than the partition function, so Postgres may abort it
// as a deadlock victim: Apply must retry its transaction and succeed.
func TestApplyWhileTheNodeWrites(t *testing.T) {
	t.Parallel()
	var b [3]byte
	_, _ = rand.Read(b[:])
	cfg := dbroles.Config{Prefix: "cn_w" + hex.EncodeToString(b[:]) + "_"}
	keep := pgtest.New(t)
	t.Cleanup(func() {
		for _, s := range slices.Backward(dbroles.Services) {
			_, err := keep.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{cfg.Role(s)}.Sanitize())
			require.NoError(t, err)
		}
	})
	for range 6 {
		db := pgtest.New(t)
		t.Cleanup(func() { db.Drop(t) }) // before the roles that own its objects
		ctx, cancel := context.WithCancel(context.Background())
		var g errgroup.Group
		var rounds atomic.Int64
		for range 2 {
			g.Go(func() error {
				for ctx.Err() == nil {
					// Errors here (a deadlock victim, a lock timeout) are what a
					// writer retries; only Apply's result is under test.
					_, _ = db.Pool.Exec(ctx, "SELECT cn_relay.outbox_ensure_partitions(2)")
					rounds.Add(1)
				}
				return nil
			})
		}
		for rounds.Load() == 0 {
			runtime.Gosched()
		}
		err := dbroles.Apply(context.Background(), db.Conn(t), cfg)
		cancel()
		require.NoError(t, g.Wait())
		require.NoError(t, err)
		var owner string
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			"SELECT relowner::regrole::text FROM pg_class WHERE oid = 'cn_relay.outbox_partitioning'::regclass").Scan(&owner))
		require.Equal(t, cfg.Role(dbroles.Operator), owner)
	}
}

// TestBridgeAndStreamPositionRoles: the bridge's role reads the outbox and the
// events and moves only its own offset; a stream consumer (the remote indexer)
// writes only its own stream position; the store path (publisher) no longer
// writes stream positions.
func TestBridgeAndStreamPositionRoles(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('index-v1', 5), ('trust-v1', 7)`)
	require.NoError(t, err)
	apply(t, db)
	cfg := dbroles.Config{}

	br := connect(t, db.LoginAs(t, cfg.Role(dbroles.Bridge), false))
	require.EqualValues(t, 1, allowed(t, br, "INSERT INTO cn_relay.consumer_offsets (consumer) VALUES ('bridge-v1')"))
	require.EqualValues(t, 1, allowed(t, br, "UPDATE cn_relay.consumer_offsets SET owner_id = 'me', owner_generation = owner_generation + 1 WHERE consumer = 'bridge-v1'"))
	allowed(t, br, "SELECT cn_relay.consumer_advance('bridge-v1', 'me', 1, 0, 3, true)")
	require.EqualValues(t, 1, allowed(t, br, "UPDATE cn_relay.consumer_offsets SET halted_at = now(), halted_reason = 'too large' WHERE consumer = 'bridge-v1'"))
	var n int
	require.NoError(t, br.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox").Scan(&n))
	require.NoError(t, br.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events").Scan(&n))
	denied(t, br, "UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'index-v1'")
	denied(t, br, "INSERT INTO cn_relay.consumer_offsets (consumer) VALUES ('other-v1')")
	denied(t, br, insertEvent)
	denied(t, br, "INSERT INTO cn_relay.events_outbox (op, event_id, topic_id, kind, created_at) VALUES ('upsert', 'x', 't', 1, 1)")
	denied(t, br, "DELETE FROM cn_relay.events_outbox")
	denied(t, br, "INSERT INTO cn_index.documents (event_id) VALUES ('x')")
	denied(t, br, "SELECT count(*) FROM cn_admin.pubkeys")
	denied(t, br, "SELECT cn_relay.outbox_ensure_partitions(2)")
	denied(t, br, "INSERT INTO cn_relay.consumer_stream_positions (consumer, stream, stream_seq, last_seq) VALUES ('index-v1', 'S', 1, 5)")

	ix := connect(t, db.LoginAs(t, cfg.Role(dbroles.Indexer), false))
	upsert := `INSERT INTO cn_relay.consumer_stream_positions (consumer, stream, stream_seq, last_seq) VALUES ($1, 'S', $2, 5)
		ON CONFLICT (consumer) DO UPDATE SET stream = excluded.stream, stream_seq = excluded.stream_seq,
			last_seq = excluded.last_seq, updated_at = now()`
	require.EqualValues(t, 1, allowed(t, ix, upsert, "index-v1", 1))
	require.EqualValues(t, 1, allowed(t, ix, upsert, "index-v1", 2), "the stream consumer's upsert of its own position")
	denied(t, ix, upsert, "trust-v1", 1)
	denied(t, ix, "UPDATE cn_relay.consumer_stream_positions SET consumer = 'trust-v1'")
	denied(t, ix, "DELETE FROM cn_relay.consumer_stream_positions")

	relay := connect(t, db.LoginAs(t, cfg.Role(dbroles.Relay), false))
	denied(t, relay, "UPDATE cn_relay.consumer_stream_positions SET stream_seq = 9")
	denied(t, relay, upsert, "trust-v1", 1)
	var pos int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT stream_seq FROM cn_relay.consumer_stream_positions WHERE consumer = 'index-v1'").Scan(&pos))
	require.EqualValues(t, 2, pos)
}
