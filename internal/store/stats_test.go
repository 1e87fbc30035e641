package store

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/schema"
)

// insertPlain inserts n regular events straight into cn_relay.events from conn,
// whose activity counters reach pg_stat_all_tables as soon as it is idle.
func insertPlain(t *testing.T, conn *pgx.Conn, from, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := conn.Exec(ctx, `
		WITH ins AS (
		    INSERT INTO cn_relay.events (id, pubkey, kind, created_at, content, sig)
		    SELECT encode(sha256(('id' || i)::bytea), 'hex'), encode(sha256(('pk' || i % 7)::bytea), 'hex'), 1,
		           1700000000 + i, 'x', repeat('ab', 64)
		    FROM generate_series($1::int, $1 + $2 - 1) AS i RETURNING 1)
		SELECT count(*), pg_stat_force_next_flush() FROM ins`, from, n)
	require.NoError(t, err)
}

func TestAnalyzeStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	conn := f.db.Conn(t)
	analysed := func() bool {
		var ok bool
		require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_all_tables
			WHERE relid = 'cn_relay.events'::regclass`).Scan(&ok))
		return ok
	}

	// Never analysed: the first statistics once more than 100 rows changed.
	insertPlain(t, conn, 0, 100)
	done, err := f.store.AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Empty(t, done, "100 changed rows are not more than the first threshold")
	require.False(t, analysed())

	insertPlain(t, conn, 100, 10)
	done, err = f.store.AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Len(t, done, 1)
	require.Equal(t, "cn_relay.events", done[0].Table)
	require.True(t, done[0].Never)
	require.EqualValues(t, 110, done[0].Changed)
	require.True(t, analysed())
	var tuples float64
	require.NoError(t, f.db.Pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'cn_relay.events'::regclass").Scan(&tuples))
	require.EqualValues(t, 110, tuples)

	// Stale again only after 1000 + 10% of 110 more changes.
	insertPlain(t, conn, 110, 1000)
	done, err = f.store.AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Empty(t, done, "1000 changed rows are below 1000 + 11")
	insertPlain(t, conn, 1110, 12)
	// Another relay analysing: this one leaves it alone.
	other := f.db.Conn(t)
	_, err = other.Exec(ctx, "SELECT pg_advisory_lock($1)", schema.StatsLock)
	require.NoError(t, err)
	done, err = f.store.AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Empty(t, done)
	_, err = other.Exec(ctx, "SELECT pg_advisory_unlock($1)", schema.StatsLock)
	require.NoError(t, err)
	done, err = f.store.AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Len(t, done, 1)
	require.False(t, done[0].Never)
	require.EqualValues(t, 1012, done[0].Changed)
	require.False(t, done[0].NotOwner)

}

// TestAnalyzeStaleUnderTheRelayRole: under the least-privilege roles the
// operator owns the tables, and the relay still keeps their statistics (through
// cn_relay.analyze_query_table, schema 0014).
func TestAnalyzeStaleUnderTheRelayRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cfg := dbroles.Config{}
	require.NoError(t, dbroles.Apply(ctx, f.db.Conn(t), cfg))
	pool, err := pgxpool.New(ctx, f.db.LoginAs(t, cfg.Role(dbroles.Relay), false))
	require.NoError(t, err)
	defer pool.Close()
	insertPlain(t, f.db.Conn(t), 0, 1100)
	done, err := NewReader(pool).AnalyzeStale(ctx)
	require.NoError(t, err)
	require.Len(t, done, 1)
	require.False(t, done[0].NotOwner)
	var ok bool
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_all_tables
		WHERE relid = 'cn_relay.events'::regclass`).Scan(&ok))
	require.True(t, ok, "analysed under the relay's role")
	_, err = pool.Exec(ctx, "SELECT cn_relay.analyze_query_table('cn_trust.sets')")
	require.ErrorContains(t, err, "not a query table")
}
