package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestCleanPendingStopsWithoutOwnership: a role that does not own the index gets
// one warning and the loop ends, instead of failing ten times a second.
func TestCleanPendingStopsWithoutOwnership(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	role := "cn_reader_" + db.Name[len(db.Name)-6:]
	_, err := db.Pool.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'; GRANT USAGE ON SCHEMA cn_index TO %s; GRANT SELECT ON ALL TABLES IN SCHEMA cn_index TO %s", role, role, role, role))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %s", role, role))
	})
	// The same server and database as this role (password = name, for servers
	// that do not trust local connections).
	connString := db.URL + fmt.Sprintf(" user=%s password=%s", role, role)
	if u, err := url.Parse(db.URL); err == nil && u.Scheme != "" {
		u.User = url.UserPassword(role, role)
		connString = u.String()
	}
	pool, err := pgxpool.New(ctx, connString)
	require.NoError(t, err)
	defer pool.Close()

	var logs testkit.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		CleanPending(ctx, pool, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the merger kept going without ownership")
	}
	require.Contains(t, logs.String(), "not the index's owner")
}
