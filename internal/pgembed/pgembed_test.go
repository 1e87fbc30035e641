package pgembed

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// baseDir returns a 0755 directory that the run-as account can traverse
// (t.TempDir is 0700 and, as root, owned by root).
func baseDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgembed-test-*")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func query(t *testing.T, ctx context.Context, url, sql string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

func TestStartReuseStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := Config{DataDir: filepath.Join(baseDir(t), "data"), Ephemeral: true, Logger: testLogger(t)}

	s, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	require.NotZero(t, s.Port())
	require.Equal(t, "postgres://postgres@127.0.0.1:"+strconv.Itoa(s.Port())+"/postgres?sslmode=disable", s.URL("postgres"))
	require.Equal(t, 1, query(t, ctx, s.URL("postgres"), "SELECT 1"))

	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE DATABASE app")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	conn, err = pgx.Connect(ctx, s.URL("app"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	// Listens on 127.0.0.1 only, no Unix socket.
	require.Equal(t, 4, query(t, ctx, s.URL("postgres"), `SELECT count(*)::int FROM pg_settings WHERE
		(name = 'listen_addresses' AND setting = '127.0.0.1') OR (name = 'unix_socket_directories' AND setting = '') OR
		(name = 'fsync' AND setting = 'off') OR (name = 'max_connections' AND setting = '200')`))

	// A second server on the same DataDir is refused.
	_, err = Start(ctx, cfg)
	require.Error(t, err)
	require.Contains(t, err.Error(), "is in use by pid")

	firstPort := s.Port()
	require.NoError(t, s.Stop(ctx))
	require.NoError(t, s.Stop(ctx), "second Stop is a no-op")

	// Reuse: no initdb, data still there, same port (still free).
	pgVersion, err := os.Stat(filepath.Join(cfg.DataDir, "PG_VERSION"))
	require.NoError(t, err)
	s2, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Stop(context.Background()) })
	again, err := os.Stat(filepath.Join(cfg.DataDir, "PG_VERSION"))
	require.NoError(t, err)
	require.Equal(t, pgVersion.ModTime(), again.ModTime(), "initdb must not run again")
	require.Equal(t, firstPort, s2.Port())
	require.Equal(t, 42, query(t, ctx, s2.URL("app"), "SELECT n FROM kept"))
	require.NoError(t, s2.Stop(ctx))

	// A stale postmaster.pid (dead pid) does not block a start.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := strconv.Itoa(dead.Process.Pid) + "\n" + cfg.DataDir + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "postmaster.pid"), []byte(stale), 0o644))

	// Reuse with an explicit, different port.
	port, err := freePort()
	require.NoError(t, err)
	cfg.Port = port
	s3, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s3.Stop(context.Background()) })
	require.Equal(t, port, s3.Port())
	require.Equal(t, 42, query(t, ctx, s3.URL("app"), "SELECT n FROM kept"))
	require.NoError(t, s3.Stop(ctx))
}

func TestRootNeedsTraversableParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only relevant when running as root")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	_, err := Start(context.Background(), Config{DataDir: filepath.Join(dir, "data")})
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot traverse "+dir)
}

func TestFetchBinaries(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz not installed")
	}
	// A fake Maven repository serving a jar that holds a .txz with stub tools,
	// laid out like the zonky embedded-postgres-binaries artifacts.
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, name := range []string{"bin/initdb", "bin/pg_ctl", "bin/postgres"} {
		body := "#!/bin/sh\necho stub >&2\nexit 1\n"
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	xzCmd := exec.Command("xz", "-c", "--check=crc32")
	xzCmd.Stdin = &tarBuf
	txz, err := xzCmd.Output()
	require.NoError(t, err)
	var jar bytes.Buffer
	zw := zip.NewWriter(&jar)
	w, err := zw.Create("postgres-linux-x86_64.txz")
	require.NoError(t, err)
	_, err = w.Write(txz)
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".jar") {
			_, _ = w.Write(jar.Bytes())
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()

	root := t.TempDir()
	bin, err := fetchBinaries(root, srv.URL, testLogger(t))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "pg-"+string(fetchVersion), "bin"), bin)
	require.True(t, hasTools(bin))

	// Cached: no server needed the second time.
	srv.Close()
	bin2, err := fetchBinaries(root, srv.URL, testLogger(t))
	require.NoError(t, err)
	require.Equal(t, bin, bin2)

	// Unreachable repository and empty cache: clear error.
	_, err = fetchBinaries(t.TempDir(), srv.URL, testLogger(t))
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), "no PostgreSQL binaries found")
	require.Contains(t, err.Error(), "apt install postgresql")
}

func TestNewestWithTools(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9", "15", "16", "100"} {
		dir := filepath.Join(root, v, "bin")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		if v == "100" {
			continue // no tools: must be skipped
		}
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o755))
		}
	}
	require.Equal(t, filepath.Join(root, "16", "bin"), newestWithTools(filepath.Join(root, "*", "bin")))
}

func TestStartFailureShowsServerLog(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cfg := Config{DataDir: filepath.Join(baseDir(t), "data"), Ephemeral: true, Port: l.Addr().(*net.TCPAddr).Port}
	_, err = Start(context.Background(), cfg)
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), "server log")
	require.Contains(t, err.Error(), "could not bind")
}
