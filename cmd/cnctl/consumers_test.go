package main

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// seeded is a database with 5 outbox rows and two consumers: index-v1 at 2 and
// trust-v1 at 5, plus one parked row for index-v1.
func seeded(t *testing.T) *pgtest.DB {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		_, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) {
			return []outbox.Record{{Op: outbox.OpUpsert, EventID: id, TopicID: "t", Kind: 1, CreatedAt: 1}}, nil
		})
		require.NoError(t, err)
	}
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('index-v1', 2), ('trust-v1', 5);
		INSERT INTO cn_relay.consumer_dead_letters (consumer, seq, op, event_id, topic_id, kind, created_at, ingested_at, error, attempts)
		VALUES ('index-v1', 1, 'upsert', 'a', 't', 1, 1, now(), 'boom', 5)`)
	require.NoError(t, err)
	return db
}

func TestStatusJSONIsStable(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	out, err := cnctl(t, "status", "--json", "--database-url", db.URL)
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.ElementsMatch(t, []string{"head_seq", "consumers", "pending_identity", "replication", "restore"}, keys(doc))
	var pending map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc["pending_identity"], &pending))
	require.ElementsMatch(t, []string{"events", "keys", "oldest_seconds"}, keys(pending))
	var st struct {
		HeadSeq   int64                        `json:"head_seq"`
		Consumers []map[string]json.RawMessage `json:"consumers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.EqualValues(t, 5, st.HeadSeq)
	require.Len(t, st.Consumers, 2)
	for _, c := range st.Consumers {
		require.ElementsMatch(t, []string{"consumer", "last_seq", "backlog", "lag_seconds", "owner", "dead_letters"}, keys(c))
	}
	require.JSONEq(t, `"index-v1"`, string(st.Consumers[0]["consumer"]))
	require.JSONEq(t, `3`, string(st.Consumers[0]["backlog"]))
	require.JSONEq(t, `1`, string(st.Consumers[0]["dead_letters"]))
	require.JSONEq(t, `null`, string(st.Consumers[0]["owner"]))

	text, err := cnctl(t, "status", "--database-url", db.URL)
	require.NoError(t, err)
	require.Contains(t, text, "outbox head seq: 5")
	require.Regexp(t, `index-v1\s+2\s+3\s+`, text)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lastSeq(t *testing.T, db *pgtest.DB, name string) int64 {
	var n int64
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1", name).Scan(&n))
	return n
}

func TestResetOffsetCommand(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	ctx := context.Background()

	out, err := cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-seq", "0")
	require.NoError(t, err)
	require.Contains(t, out, "would move index-v1 from seq 2 to 0: 2 retained rows will be applied again")
	require.Contains(t, out, "dry run")
	require.EqualValues(t, 2, lastSeq(t, db, "index-v1"), "a dry run changes nothing")

	out, err = cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-seq", "9")
	require.NoError(t, err)
	require.Contains(t, out, "warning: seq 9 is beyond the outbox head 5: rows appended until then will be skipped\n")
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.outbox_retention SET pruned_through = 1")
	require.NoError(t, err)
	out, err = cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-seq", "0")
	require.NoError(t, err)
	require.Contains(t, out, "warning: seq 0 is below the retention horizon 1: clamped; rows up to 1 are gone from the outbox")
	require.Contains(t, out, "would move index-v1 from seq 2 to 1: 1 retained rows will be applied again")
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.outbox_retention SET pruned_through = 0")
	require.NoError(t, err)

	out, err = cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-latest", "--execute")
	require.NoError(t, err)
	require.Contains(t, out, "3 rows will be skipped")
	require.EqualValues(t, 5, lastSeq(t, db, "index-v1"))

	// Active consumer: refused without --force.
	_, err = db.Pool.Exec(ctx, "UPDATE cn_relay.consumer_offsets SET owner_id = 'host:1:ab', lease_expires_at = now() + interval '1 minute' WHERE consumer = 'index-v1'")
	require.NoError(t, err)
	_, err = cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-earliest", "--execute")
	require.ErrorContains(t, err, "consumer is active: host:1:ab holds index-v1 (stop it, or use --force)")
	require.Equal(t, 1, exitCode(err))
	require.EqualValues(t, 5, lastSeq(t, db, "index-v1"))
	_, err = cnctl(t, "reset-offset", "--database-url", db.URL, "--consumer", "index-v1", "--to-earliest", "--execute", "--force")
	require.NoError(t, err)
	require.EqualValues(t, 0, lastSeq(t, db, "index-v1"))

	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.consumer_offset_resets WHERE consumer = 'index-v1'").Scan(&n))
	require.Equal(t, 2, n, "each executed reset is recorded")

	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--consumer", "index-v1"}, "exactly one of", 2},
		{[]string{"--consumer", "index-v1", "--to-seq", "1", "--to-latest"}, "exactly one of", 2},
		{[]string{"--consumer", "index-v1", "--to-time", "yesterday"}, "RFC 3339", 2},
		{[]string{"--to-latest"}, "consumer", 2},
		{[]string{"--consumer", "nobody-v1", "--to-latest"}, `unknown consumer "nobody-v1"`, 1},
	} {
		_, err := cnctl(t, append([]string{"reset-offset", "--database-url", db.URL}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, oneLine(err), tc.want, "%v", tc.args)
		require.Equal(t, tc.code, exitCode(err), "%v", tc.args)
	}
}

// TestHaltsAreShown: a consumer that halted (the bridge on a row it can never
// publish) is named with its reason by cnctl status and cnctl dlq list.
func TestHaltsAreShown(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	_, err := db.Pool.Exec(context.Background(), `UPDATE cn_relay.consumer_offsets
		SET halted_at = now(), halted_reason = 'seq 3 (event c): too large
for max_payload' WHERE consumer = 'trust-v1'`)
	require.NoError(t, err)
	out, err := cnctl(t, "status", "--database-url", db.URL)
	require.NoError(t, err)
	require.Contains(t, out, "trust-v1 is HALTED after seq 5: seq 3 (event c): too large for max_payload\n")
	require.NotContains(t, out, "index-v1 is HALTED")
	out, err = cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "trust-v1")
	require.NoError(t, err)
	require.Contains(t, out, "no parked rows for trust-v1\ntrust-v1 is HALTED after seq 5: seq 3 (event c): too large for max_payload\n")
	out, err = cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "index-v1")
	require.NoError(t, err)
	require.NotContains(t, out, "HALTED")
}

func TestDLQCommands(t *testing.T) {
	t.Parallel()
	db := seeded(t)
	out, err := cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "index-v1")
	require.NoError(t, err)
	require.Regexp(t, `1\s+upsert\s+a\s+5\s+`, out)
	require.Contains(t, out, "boom")

	out, err = cnctl(t, "dlq", "retry", "--database-url", db.URL, "--consumer", "index-v1", "--seq", "1")
	require.NoError(t, err)
	require.Contains(t, out, "1 parked rows of index-v1 marked for retry")
	out, err = cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "index-v1", "--json")
	require.NoError(t, err)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.NotNil(t, d["retry_requested_at"])
	require.Equal(t, "a", d["event_id"])

	_, err = cnctl(t, "dlq", "drop", "--database-url", db.URL, "--consumer", "index-v1")
	require.ErrorContains(t, err, "--seq")
	require.Equal(t, 2, exitCode(err))
	_, err = cnctl(t, "dlq", "drop", "--database-url", db.URL, "--consumer", "index-v1", "--seq", "4")
	require.ErrorContains(t, err, "not parked rows")
	out, err = cnctl(t, "dlq", "drop", "--database-url", db.URL, "--consumer", "index-v1", "--all")
	require.NoError(t, err)
	require.Contains(t, out, "1 parked rows of index-v1 dropped")
	out, err = cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "index-v1")
	require.NoError(t, err)
	require.Contains(t, out, "no parked rows")

	_, err = cnctl(t, "dlq", "list", "--database-url", db.URL, "--consumer", "nobody-v1")
	require.ErrorContains(t, err, `unknown consumer "nobody-v1"`)
	require.Equal(t, 1, exitCode(err))
}
