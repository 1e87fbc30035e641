// Package pgtest gives every test its own migrated Postgres database.
//
// A test binary calls Main from TestMain. Main finds a server once per process, in
// this order: CN_TEST_DATABASE_URL (a superuser URL; its database is used only to
// create and drop others); a reachable Docker daemon (a testcontainers-go Postgres;
// set CN_TEST_DOCKER=0 to skip); otherwise a private embedded Postgres in a temporary
// directory (internal/pgembed), stopped and removed when the tests end.
//
// On that server, Main makes sure a template database holding the current migrations
// exists (its name carries schema.Fingerprint, so a changed migration gets a new
// template). New then creates a fresh database from the template for one test and
// drops it when the test ends, so tests can run in parallel and never see each
// other's rows or notifications.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/schema"
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "CN_TEST_DATABASE_URL"

var (
	adminURL string
	admin    *pgxpool.Pool
	template string
)

// Main prepares the server and template, runs the tests and exits.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	serverURL, stop, err := resolveServer(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	defer stop()

	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminURL = serverURL
	if admin, err = pgxpool.New(ctx, adminURL); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: connect %s: %v\n", redact(adminURL), err)
		return 1
	}
	defer admin.Close()
	if template, err = ensureTemplate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	return m.Run()
}

// resolveServer returns a superuser URL and a function that releases the server.
func resolveServer(ctx context.Context) (string, func(), error) {
	if u := os.Getenv(EnvURL); u != "" {
		fmt.Fprintf(os.Stderr, "pgtest: using %s from %s\n", redact(u), EnvURL)
		return u, func() {}, nil
	}
	if os.Getenv("CN_TEST_DOCKER") != "0" {
		if u, stop, ok := dockerServer(ctx); ok {
			fmt.Fprintln(os.Stderr, "pgtest: using a testcontainers Postgres")
			return u, stop, nil
		}
	}
	fmt.Fprintln(os.Stderr, "pgtest: using an embedded Postgres")
	dir, err := os.MkdirTemp("", "cn-pgtest-")
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: %w", err)
	}
	srv, err := pgembed.Start(ctx, pgembed.Config{DataDir: dir, Ephemeral: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("no %s, no Docker, and the embedded postgres failed: %w", EnvURL, err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(ctx)
		_ = os.RemoveAll(dir)
	}
	return srv.URL("postgres"), stop, nil
}

// ensureTemplate creates the migrated template database if this server lacks it.
// Concurrent test binaries serialise on an advisory lock; the template appears under
// its final name only once fully migrated.
func ensureTemplate(ctx context.Context) (string, error) {
	fp, err := schema.Fingerprint()
	if err != nil {
		return "", err
	}
	name := "cn_tmpl_" + fp
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("acquire admin connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock("+schema.TemplateLockSQL+")"); err != nil {
		return "", fmt.Errorf("lock template: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock("+schema.TemplateLockSQL+")")
	}()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := fmt.Sprintf("%s_building_%d", name, os.Getpid())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("drop stale template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	mc, err := pgx.Connect(ctx, databaseURL(building))
	if err != nil {
		return "", fmt.Errorf("connect template: %w", err)
	}
	_, err = schema.Migrate(ctx, mc)
	_ = mc.Close(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
		pgx.Identifier{building}.Sanitize(), pgx.Identifier{name}.Sanitize())); err != nil {
		return "", fmt.Errorf("publish template: %w", err)
	}
	return name, nil
}

// DB is one test's private, migrated database.
type DB struct {
	Name string
	URL  string
	Pool *pgxpool.Pool
}

// New creates a database for t from the migrated template and drops it when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	if admin == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cn_t_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	db := &DB{Name: name, URL: databaseURL(name)}
	t.Cleanup(func() {
		if db.Pool != nil {
			db.Pool.Close()
		}
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("pgtest: parse url: %v", err)
	}
	cfg.MaxConns = 16
	dbpool.SessionDefaults(cfg)
	if db.Pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatalf("pgtest: connect %s: %v", name, err)
	}
	return db
}

// ForExample creates a database from the migrated template for a runnable
// Example, which has no testing.TB: it returns the database's URL and a
// function that drops it. The binary's TestMain must call Main.
func ForExample() (url string, drop func()) {
	if admin == nil {
		panic("pgtest: call pgtest.Main(m) from TestMain")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cn_x_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(context.Background(), fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		panic(fmt.Sprintf("pgtest: create database: %v", err))
	}
	return databaseURL(name), func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
}

// Conn opens a dedicated connection to the database, closed when t ends.
func (db *DB) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), db.URL)
	if err != nil {
		t.Fatalf("pgtest: connect %s: %v", db.Name, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// EmptyDatabase creates an unmigrated database and returns its URL; it is dropped
// when t ends. For testing migrations themselves.
func EmptyDatabase(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cn_e_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return databaseURL(name)
}

// databaseURL is adminURL with its database replaced by name.
func databaseURL(name string) string {
	u, err := url.Parse(adminURL)
	if err != nil || u.Scheme == "" {
		// Keyword/value DSNs: append dbname, the last occurrence wins.
		return adminURL + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable url)"
	}
	return u.Redacted()
}

// Fixture returns a migrated database that outlives the test process, for
// benchmark data that takes minutes to build. Its name is key plus the migration
// fingerprint; when it does not exist yet, fill builds it in a scratch database
// that is renamed to the final name only after fill succeeded, so a crashed or
// failed fill never leaves a half-built fixture behind. Drop fixtures with
// `DROP DATABASE` (they are named cn_fx_*). The pool is closed when t ends.
func Fixture(t testing.TB, key string, fill func(db *DB) error) *DB {
	t.Helper()
	if admin == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	ctx := context.Background()
	name := "cn_fx_" + key + "_" + template[len(template)-8:]
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("pgtest: look up fixture %s: %v", name, err)
	}
	if !exists {
		scratch := New(t) // dropped when t ends unless renamed below
		if err := fill(scratch); err != nil {
			t.Fatalf("pgtest: fill fixture %s: %v", name, err)
		}
		scratch.Pool.Close()
		scratch.Pool = nil
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
			pgx.Identifier{scratch.Name}.Sanitize(), pgx.Identifier{name}.Sanitize())); err != nil {
			t.Fatalf("pgtest: keep fixture %s: %v", name, err)
		}
	}
	db := &DB{Name: name, URL: databaseURL(name)}
	var err error
	if db.Pool, err = pgxpool.New(ctx, db.URL); err != nil {
		t.Fatalf("pgtest: connect %s: %v", name, err)
	}
	t.Cleanup(db.Pool.Close)
	return db
}
