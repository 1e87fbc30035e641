package devnode

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunMigratesAndStopsOnCancel(t *testing.T) {
	url := pgtest.EmptyDatabase(t)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{DatabaseURL: url, Out: &out, RelayListen: "127.0.0.1:0", IndexerListen: "127.0.0.1:0",
			ModeratorListen: "127.0.0.1:0", TrustListen: "127.0.0.1:0", DashboardListen: "127.0.0.1:0", NodeKeyFile: keyFile})
	}()
	require.Eventually(t, func() bool { return bytes.Contains([]byte(out.String()), []byte("node is up")) },
		30*time.Second, 20*time.Millisecond)
	require.Contains(t, out.String(), "applied migration 0001_outbox_foundation")
	require.Contains(t, out.String(), "created the node key "+keyFile)
	require.Contains(t, out.String(), "moderator: http://")
	require.Contains(t, out.String(), "trust: http://")
	require.Contains(t, out.String(), "dashboard: http://")

	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM cn_meta.schema_migrations").Scan(&n))
	all, err := schema.Migrations()
	require.NoError(t, err)
	require.Equal(t, len(all), n, "every migration applied")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("dev node did not stop")
	}
}

func TestConfigValidate(t *testing.T) {
	require.Error(t, Config{}.Validate())
	require.Error(t, Config{DataDir: "x", Port: 70000}.Validate())
	require.NoError(t, Config{DataDir: "x"}.Validate())
}
