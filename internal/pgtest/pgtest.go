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
// template). New then creates a fresh database from the template for one test, so
// tests can run in parallel and never see each other's rows or notifications.
//
// The databases a test binary creates are dropped when the binary ends, all at
// once, not as each test ends: Postgres 15 makes every DROP DATABASE take an
// immediate checkpoint and wait for it (1-2 s here), and after a checkpoint every
// first write of a page logs the whole page, for every database on the server.
// Dropped one per test, the relay package's ~170 databases cost it minutes;
// concurrent drops share their checkpoints. A binary that dies leaves its
// databases behind; their names carry its pid, and the next binary on the same
// machine drops those whose process is gone.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/schema"
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "CN_TEST_DATABASE_URL"

var (
	adminURL string
	admin    *pgxpool.Pool
	template string

	createdMu sync.Mutex
	created   []string // databases this binary created, dropped when it ends
)

// newName returns a database name with prefix ("cn_t", "cn_e", "cn_x") that
// carries this process's pid, and remembers it for dropAll.
func newName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s_%d_%s", prefix, os.Getpid(), hex.EncodeToString(b[:]))
	createdMu.Lock()
	created = append(created, name)
	createdMu.Unlock()
	return name
}

// dropConcurrency bounds the drops in flight; they share checkpoints.
const dropConcurrency = 16

// dropAll drops names (WITH (FORCE): connections a test left are ended),
// dropConcurrency at a time, and reports the ones it could not drop.
func dropAll(ctx context.Context, names []string) {
	sem := make(chan struct{}, dropConcurrency)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: drop database %s: %v\n", name, err)
			}
		}()
	}
	wg.Wait()
}

var pidName = regexp.MustCompile(`^cn_[tex]_([0-9]+)_[0-9a-f]+$`)

// dropOrphans drops the test databases of processes on this machine that are
// gone (a binary that was killed or timed out), when the server is local: a
// remote server's databases may belong to another machine's tests.
func dropOrphans(ctx context.Context) {
	if !localServer(adminURL) {
		return
	}
	rows, err := admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname ~ '^cn_[tex]_[0-9]+_'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	var orphans []string
	for _, name := range names {
		m := pidName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			orphans = append(orphans, name)
		}
	}
	dropAll(ctx, orphans)
}

// localServer reports whether url names a server on this machine (a loopback
// address or a Unix socket).
func localServer(u string) bool {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return false
	}
	if len(cfg.Host) > 0 && cfg.Host[0] == '/' {
		return true
	}
	if cfg.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(cfg.Host)
	return ip != nil && ip.IsLoopback()
}

// Main prepares the server and template, runs the tests and exits.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// ServerURL is the superuser URL of the server the tests use, once Main or
// Run has found it: what a child test process is given as EnvURL.
func ServerURL() string { return adminURL }

// Run is Main without the exit: it returns the code to exit with, for a
// TestMain that checks more once the tests have run.
func Run(m *testing.M) int { return run(m) }

func run(m *testing.M) int {
	flag.Parse()
	armWatchdog()
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
	acfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: parse %s: %v\n", redact(adminURL), err)
		return 1
	}
	acfg.MaxConns = dropConcurrency
	if admin, err = pgxpool.NewWithConfig(ctx, acfg); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: connect %s: %v\n", redact(adminURL), err)
		return 1
	}
	defer admin.Close()
	if template, err = ensureTemplate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	dropOrphans(ctx)
	code := m.Run()
	createdMu.Lock()
	names := created
	createdMu.Unlock()
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer dcancel()
	dropAll(dctx, names)
	return code
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

// New creates a database for t from the migrated template; its pool is closed
// when t ends and the database dropped when the test binary ends.
func New(t testing.TB) *DB {
	t.Helper()
	if admin == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	ctx := context.Background()
	name := newName("cn_t")
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	db := &DB{Name: name, URL: databaseURL(name)}
	t.Cleanup(func() {
		if db.Pool != nil {
			closePool(t, db.Pool)
		}
		// Dropped when the binary ends (see the package comment).
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

// Drop closes db's pool and drops db now, not when the binary ends: for a
// test that must remove cluster-wide objects its databases depend on (a role
// that owns objects in them). Each drop costs a checkpoint.
func (db *DB) Drop(t testing.TB) {
	t.Helper()
	if db.Pool != nil {
		db.Pool.Close()
	}
	if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", db.Name, err)
	}
}

// ForExample creates a database from the migrated template for a runnable
// Example, which has no testing.TB: it returns the database's URL and a
// function to call when done (the database is dropped when the binary ends).
// The binary's TestMain must call Main.
func ForExample() (url string, drop func()) {
	if admin == nil {
		panic("pgtest: call pgtest.Main(m) from TestMain")
	}
	name := newName("cn_x")
	if _, err := admin.Exec(context.Background(), fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		panic(fmt.Sprintf("pgtest: create database: %v", err))
	}
	return databaseURL(name), func() {} // dropped when the binary ends (see the package comment)
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
// when the test binary ends. For testing migrations themselves.
func EmptyDatabase(t testing.TB) string {
	t.Helper()
	name := newName("cn_e")
	if _, err := admin.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return databaseURL(name) // dropped when the binary ends (see the package comment)
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
	t.Cleanup(func() { closePool(t, db.Pool) })
	return db
}

// closePoolWait bounds closePool.
const closePoolWait = 30 * time.Second

// closePool closes pool as t ends. pgxpool's Close waits for every acquired
// connection to come back, so a test that failed while a transaction or a
// stuck goroutine held one would hang the whole binary until go test's
// timeout, whose dump does not name the test; after closePoolWait this fails t
// instead, by name, and leaves the pool to close in the background.
func closePool(t testing.TB, pool *pgxpool.Pool) {
	done := make(chan struct{})
	go func() {
		pool.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closePoolWait):
		t.Errorf("pgtest: %s's pool did not close within %s: a connection is still acquired (an open transaction, or a goroutine the test did not stop)", t.Name(), closePoolWait)
	}
}
