package node

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/nodekey"
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
		done <- Dev(ctx, DevOptions{DatabaseURL: url, Out: &out, RelayListen: "127.0.0.1:0", RelayMetricsListen: "127.0.0.1:0", IndexerListen: "127.0.0.1:0",
			ModeratorListen: "127.0.0.1:0", TrustListen: "127.0.0.1:0", DashboardListen: "127.0.0.1:0", NodeKeyFile: keyFile})
	}()
	require.Eventually(t, func() bool { return bytes.Contains([]byte(out.String()), []byte("node is up")) },
		30*time.Second, 20*time.Millisecond)
	require.Contains(t, out.String(), "applied migration 0001_outbox_foundation")
	require.Contains(t, out.String(), "created the node key "+keyFile)
	require.Contains(t, out.String(), "moderator: http://")
	require.Contains(t, out.String(), "trust: http://")
	require.Contains(t, out.String(), "dashboard: http://")
	require.Contains(t, out.String(), "topic policy: posts need a t tag", "the URLs are followed by the topic policy a client author must know")

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

func TestDevOptionsValidate(t *testing.T) {
	require.Error(t, DevOptions{}.Validate())
	require.Error(t, DevOptions{DataDir: "x", Port: 70000}.Validate())
	require.NoError(t, DevOptions{DataDir: "x"}.Validate())
}

// TestEveryDevOptionReachesADaemon sets each DevOptions field in turn and
// checks that the daemons' options change: a field that no daemon receives (as
// --admin-pubkeys and --dashboard-listen once were) fails here.
func TestEveryDevOptionReachesADaemon(t *testing.T) {
	t.Parallel()
	key, err := nodekey.Generate(filepath.Join(t.TempDir(), "node.key"))
	require.NoError(t, err)
	pk := strings.Repeat("ab", 32)
	samples := map[string]any{
		"RelayListen":        "127.0.0.1:1",
		"RelayMetricsListen": "127.0.0.1:6",
		"IndexerListen":      "127.0.0.1:2",
		"ModeratorListen":    "127.0.0.1:3",
		"TrustListen":        "127.0.0.1:4",
		"DashboardListen":    "127.0.0.1:5",
		"AdminPubkeys":       []string{pk},
		"Seeds":              []string{pk},
		"DefaultTopic":       "general",
	}
	// Dev itself consumes these before it builds the daemons.
	consumedByRun := map[string]bool{"DatabaseURL": true, "DataDir": true, "Port": true, "NodeKeyFile": true, "Logger": true, "Out": true}
	strip := func(d daemons) daemons {
		d.relay.Logger, d.indexer.Logger, d.moderator.Logger, d.trust.Logger = nil, nil, nil, nil
		return d
	}
	base, err := build(DevOptions{}, "postgres://x", key)
	require.NoError(t, err)
	fields := reflect.TypeFor[DevOptions]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		if consumedByRun[name] {
			continue
		}
		sample, ok := samples[name]
		require.True(t, ok, "DevOptions.%s: add a sample value here (and make sure a daemon receives it)", name)
		var cfg DevOptions
		reflect.ValueOf(&cfg).Elem().Field(i).Set(reflect.ValueOf(sample))
		got, err := build(cfg, "postgres://x", key)
		require.NoError(t, err, name)
		require.NotEqual(t, strip(base), strip(got), "DevOptions.%s reaches no daemon", name)
	}
}
