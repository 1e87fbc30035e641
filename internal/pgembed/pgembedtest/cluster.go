// Package pgembedtest starts Postgres clusters of their own for tests that
// need servers, not only databases (read replicas, failover): a primary with
// the node's schema and streaming replicas made as ops/runbook.md says. A
// machine that cannot start them (no initdb, pg_ctl, pg_basebackup) fails the
// test: it never skips.
package pgembedtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/schema"
)

// Cluster is a primary whose database DB holds the node's schema, and the
// replicas added to it; each server stops when the test ends.
type Cluster struct {
	Primary *pgembed.Server
	DB      string
	base    string
}

// Start starts a primary (initdb on a free port) and creates database db on
// it with the node's schema (schema.Migrate).
func Start(t testing.TB, db string) *Cluster {
	t.Helper()
	ctx := context.Background()
	c := &Cluster{DB: db, base: baseDir(t)}
	var err error
	c.Primary, err = pgembed.Start(ctx, pgembed.Config{DataDir: filepath.Join(c.base, "primary"), Ephemeral: true})
	if err != nil {
		t.Fatalf("start the primary (the test needs the Postgres server binaries: initdb, pg_ctl, pg_basebackup): %v", err)
	}
	t.Cleanup(func() { stop(t, c.Primary) })
	exec := func(url, sql string) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect %s: %v", db, err)
		}
		defer conn.Close(ctx)
		if sql == "" {
			_, err = schema.Migrate(ctx, conn)
		} else {
			_, err = conn.Exec(ctx, sql)
		}
		if err != nil {
			t.Fatalf("prepare %s: %v", db, err)
		}
	}
	exec(c.Primary.URL("postgres"), "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	exec(c.Primary.URL(db), "")
	return c
}

// AddReplica starts a streaming replica of the primary as ops/runbook.md
// says (pg_basebackup -R, ops/replica/standby.conf), with settings after
// those (the later of two lines wins), and checks that it runs as a standby.
func (c *Cluster) AddReplica(t testing.TB, name string, settings ...string) *pgembed.Server {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(c.base, name)
	if err := c.Primary.BaseBackup(ctx, dir); err != nil {
		t.Fatalf("base backup for replica %s: %v", name, err)
	}
	conf, err := os.ReadFile(RepoFile("ops/replica/standby.conf"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pgembed.Start(ctx, pgembed.Config{DataDir: dir, Ephemeral: true, Settings: append([]string{string(conf)}, settings...)})
	if err != nil {
		t.Fatalf("start replica %s: %v", name, err)
	}
	t.Cleanup(func() { stop(t, r) })
	conn, err := pgx.Connect(ctx, r.URL(c.DB))
	if err != nil {
		t.Fatalf("connect to replica %s: %v", name, err)
	}
	defer conn.Close(ctx)
	var inRecovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil || !inRecovery {
		t.Fatalf("replica %s does not run as a standby (in recovery %v, %v)", name, inRecovery, err)
	}
	return r
}

// RepoFile is the path of rel, a path from the repository's root.
func RepoFile(rel string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", rel)
}

// baseDir returns a 0755 directory the run-as account can traverse
// (t.TempDir is 0700 and, as root, owned by root).
func baseDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cluster-test-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func stop(t testing.TB, s *pgembed.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("stop postgres: %v", err)
	}
}
