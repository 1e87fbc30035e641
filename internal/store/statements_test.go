package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestIngestWritesNewRowsInOneStatementPlannedOnce: a batch's new rows (the
// events, their topics and their tags) go in with one statement, and no
// statement of an ingest is planned again for each batch: each runs on the
// plan its connection made once (pg_prepared_statements of the store's one
// connection: generic plans only, the insert's once per batch).
func TestIngestWritesNewRowsInOneStatementPlannedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1 // one session: its prepared statements are the store's
	dbpool.SessionDefaults(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny
	s := New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), rules)

	const batches = 3
	key := nostr.GeneratePrivateKey()
	for b := range batches {
		var evs []*nostr.Event
		for i := range 4 {
			ev := &nostr.Event{Kind: 1, CreatedAt: base + nostr.Timestamp(b*10+i), Content: fmt.Sprintf("note %d.%d", b, i),
				Tags: nostr.Tags{topic("go"), {"p", strings.Repeat("ab", 32)}}}
			require.NoError(t, ev.Sign(key))
			evs = append(evs, ev)
		}
		res, err := s.Ingest(ctx, evs)
		require.NoError(t, err)
		for _, r := range res {
			require.Equal(t, protocol.Verdict{OK: true}, r)
		}
	}

	rows, err := pool.Query(ctx, "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
	require.NoError(t, err)
	defer rows.Close()
	var inserts []string
	for rows.Next() {
		var sql string
		var generic, custom int64
		require.NoError(t, rows.Scan(&sql, &generic, &custom))
		require.Zero(t, custom, "planned for each batch: %s", sql)
		for _, table := range []string{"cn_relay.events ", "cn_relay.event_topics ", "cn_relay.event_tags "} {
			if strings.Contains(sql, "INSERT INTO "+table) {
				inserts = append(inserts, sql)
				require.EqualValues(t, batches, generic, "one insert per batch, on its generic plan: %s", sql)
				break
			}
		}
	}
	require.NoError(t, rows.Err())
	require.Len(t, inserts, 1, "the new rows of a batch go in with one statement: %q", inserts)
}
