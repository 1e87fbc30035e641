// Package dbpool opens the node's Postgres connection pools with the session
// settings every service of the node wants.
package dbpool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultMaxConns is the pool size unless the URL sets pool_max_conns.
const defaultMaxConns = 16

// Open parses url, applies the node's session defaults (unless url sets them),
// opens the pool and waits up to 10 s for the database to answer.
//
// The defaults: short OLTP queries only, so no JIT (compiling a plan costs far
// more than running it; seen here: 11 ms of JIT for a 1 ms topic query whose
// generic plan looked big), and every statement planned with its parameters and
// the tables' current sizes (plan_cache_mode=force_custom_plan): a generic plan
// cached while a table was small (a fresh node, before autovacuum analysed it)
// kept choosing sequential scans as the table grew (seen here: relay ingest fell
// from 1,500 to 400 events/s within 60,000 events).
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := OpenLazy(url)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// OpenLazy is Open without the wait: the pool connects on first use, so a
// database that is down now (a read replica) does not stop the caller.
func OpenLazy(url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	// pgxpool's default (4 on a 2-CPU machine) is too few for a daemon whose
	// ingest slots, follower, LISTEN, consumers and queries all hold connections.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	SessionDefaults(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	return pool, nil
}

// SessionDefaults applies the node's session settings (see Open) to cfg,
// unless its URL sets them. Test pools use it too, so that tests run with the
// settings the daemons run with (a test pool with JIT on spent ~0.5 s
// compiling each outbox append).
func SessionDefaults(cfg *pgxpool.Config) {
	for param, value := range map[string]string{"jit": "off", "plan_cache_mode": "force_custom_plan"} {
		if _, set := cfg.ConnConfig.RuntimeParams[param]; !set {
			cfg.ConnConfig.RuntimeParams[param] = value
		}
	}
}
