package schema_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestOutboxAndConsumerDDL: the DDL that pkg/outbox and pkg/consumer ship
// (outbox.Schema, consumer.Schema), applied to an empty database, defines
// exactly the objects that the node's migrations leave in cn_relay for them:
// the same columns, defaults, constraints, comments, indexes, partitions,
// view, sequence, functions and seed rows.
func TestOutboxAndConsumerDDL(t *testing.T) {
	ctx := context.Background()
	fresh, err := pgx.Connect(ctx, pgtest.EmptyDatabase(t))
	require.NoError(t, err)
	defer fresh.Close(ctx)
	_, err = fresh.Exec(ctx, outbox.Schema)
	require.NoError(t, err, "outbox.Schema")
	_, err = fresh.Exec(ctx, consumer.Schema)
	require.NoError(t, err, "consumer.Schema")

	var names []string
	rows, err := fresh.Query(ctx, `SELECT relname::text FROM pg_class WHERE relnamespace = 'cn_relay'::regnamespace
		UNION ALL SELECT proname::text FROM pg_proc WHERE pronamespace = 'cn_relay'::regnamespace ORDER BY 1`)
	require.NoError(t, err)
	names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, want := range []string{"events_outbox", "events_outbox_default", "events_outbox_seq_seq", "outbox_partitioning",
		"outbox_partitions", "outbox_ensure_partitions", "outbox_retention", "outbox_head", "consumer_offsets", "consumer_dead_letters",
		"consumer_offset_resets", "consumer_advance", "consumer_stream_positions"} {
		require.Contains(t, names, want)
	}

	migrated := pgtest.New(t).Conn(t)
	require.Equal(t, describe(t, fresh, names), describe(t, migrated, names))
}

// notValid is a constraint's validation state, not its definition: migration
// 0015 replaced constraints NOT VALID on tables that already had rows.
var notValid = regexp.MustCompile(` NOT VALID$`)

// describe lists the definitions of the cn_relay objects named, one fact per line.
func describe(t *testing.T, conn *pgx.Conn, names []string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	add := func(sql string, args ...any) {
		rows, err := conn.Query(ctx, sql, args...)
		require.NoError(t, err, sql)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			line := strings.TrimSuffix(fmt.Sprintln(vals...), "\n")
			out = append(out, notValid.ReplaceAllString(line, ""))
		}
		require.NoError(t, rows.Err())
	}
	const rel = `c.relnamespace = 'cn_relay'::regnamespace AND c.relname = ANY($1)`
	add(`SELECT 'relation ', c.relname::text, c.relkind::text, c.relispartition, coalesce(pg_get_expr(c.relpartbound, c.oid), '')
		FROM pg_class c WHERE `+rel+` ORDER BY 2`, names)
	add(`SELECT 'column ', c.relname::text, a.attnum, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
		       coalesce(pg_get_expr(d.adbin, d.adrelid), ''), coalesce(col_description(c.oid, a.attnum), '')
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		WHERE `+rel+` AND c.relkind IN ('r', 'p', 'v') ORDER BY 2, 3`, names)
	add(`SELECT 'constraint ', c.relname::text, k.conname::text, pg_get_constraintdef(k.oid)
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE `+rel+` ORDER BY 2, 3`, names)
	add(`SELECT 'index ', c.relname::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE `+rel+` ORDER BY 2, 3`, names)
	add(`SELECT 'view ', c.relname::text, pg_get_viewdef(c.oid) FROM pg_class c WHERE `+rel+` AND c.relkind = 'v' ORDER BY 2`, names)
	add(`SELECT 'sequence ', c.relname::text, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax,
		       s.seqcache, s.seqcycle
		FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid WHERE `+rel+` ORDER BY 2`, names)
	add(`SELECT 'function ', p.proname::text, pg_get_functiondef(p.oid)
		FROM pg_proc p WHERE p.pronamespace = 'cn_relay'::regnamespace AND p.proname = ANY($1) ORDER BY 2`, names)
	add(`SELECT 'outbox_partitioning ', partition_size FROM cn_relay.outbox_partitioning`)
	add(`SELECT 'outbox_retention ', pruned_through, pruned_at IS NULL FROM cn_relay.outbox_retention`)
	add(`SELECT 'outbox_head ', seq FROM cn_relay.outbox_head`)
	return out
}
