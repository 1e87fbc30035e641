package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/oneline"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// exitCode and oneLine are what daemon.Main, cnctl's main, makes of an error.
func exitCode(err error) int   { return daemon.ExitCode(err) }
func oneLine(err error) string { return oneline.Error(err) }

func cnctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"cnctl"}, args...), &out, &errOut)
	return out.String() + errOut.String(), err
}

// schemaDump describes every object the migrations create, in a stable order.
func schemaDump(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT 'column ' || table_schema || '.' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		  FROM information_schema.columns WHERE table_schema LIKE 'cn\_%'
		UNION ALL
		SELECT 'index ' || schemaname || '.' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname LIKE 'cn\_%'
		UNION ALL
		SELECT 'sequence ' || schemaname || '.' || sequencename || ' cache ' || cache_size FROM pg_sequences WHERE schemaname LIKE 'cn\_%'
		UNION ALL
		SELECT 'function ' || n.nspname || '.' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname LIKE 'cn\_%'
		UNION ALL
		SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace::regnamespace::text LIKE 'cn\_%'
		ORDER BY 1`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

func TestMigrateTwiceOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyDatabase(t)

	out, err := cnctl(t, "migrate", "status", "--database-url", url)
	require.NoError(t, err)
	require.Contains(t, out, "pending")

	out, err = cnctl(t, "--database-url", url, "migrate")
	require.NoError(t, err)
	require.Contains(t, out, "applied 0001_outbox_foundation")
	first := schemaDump(t, url)
	require.Contains(t, first, "cn_relay.events_outbox_seq_seq cache 1")
	require.Contains(t, first, "column cn_relay.consumer_offsets.last_seq")

	out, err = cnctl(t, "--database-url", url, "migrate")
	require.NoError(t, err)
	require.Contains(t, out, "schema is up to date")
	require.NotContains(t, out, "applied")
	require.Equal(t, first, schemaDump(t, url), "a second migrate changes nothing")

	out, err = cnctl(t, "--database-url", url, "migrate", "status")
	require.NoError(t, err)
	require.Regexp(t, `0001\s+outbox_foundation\s+\d{4}-\d\d-\d\dT`, out)
	require.NotContains(t, out, "pending")
}

func TestErrorsAreOneLineWithExitCodes(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"migrate"}, "no database: set DATABASE_URL", 2},
		{[]string{"no-such-command"}, `unknown command "no-such-command"`, 2},
		{[]string{"--no-such-flag"}, "flag provided but not defined", 2},
		{[]string{"migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "connect to database", 1},
		{[]string{"migrate", "--database-url", "::not a url"}, "bad database URL", 2},
	} {
		_, err := cnctl(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, oneLine(err), tc.want, "%v", tc.args)
		require.NotContains(t, oneLine(err), "\n")
		require.Equal(t, tc.code, exitCode(err), "%v", tc.args)
	}
}
