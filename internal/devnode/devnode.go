// Package devnode runs the whole community node on one machine for development:
// a database (the given URL, or an embedded Postgres kept in the working tree), its
// migrations, and every daemon the node has, until the context ends.
package devnode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/dashboard"
	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relaynode"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/schema"
)

// DatabaseName is the database the embedded server holds the node's data in.
const DatabaseName = "communitynode"

// Config says where the dev node keeps its data.
type Config struct {
	// DatabaseURL, when set, is used as is and no embedded server is started.
	DatabaseURL string
	// DataDir holds the embedded server's cluster; it is reused across runs.
	DataDir string
	// Port for the embedded server; 0 reuses the last one or picks a free one.
	Port int
	// RelayListen is where the relay serves WebSocket, NIP-11, /healthz and /metrics.
	RelayListen string
	// IndexerListen is where the indexer serves /v1/search, /healthz and /metrics.
	IndexerListen string
	// ModeratorListen is where the moderator serves /healthz and /metrics.
	ModeratorListen string
	// TrustListen is where the trust daemon serves /v1/trust/{pubkey}, /healthz and /metrics.
	TrustListen string
	// NodeKeyFile holds the node's key; it is created on the first run.
	NodeKeyFile string
	// AdminPubkeys may manage the relay through NIP-86 (hex).
	AdminPubkeys []string
	// DashboardListen is where the status page is served (loopback).
	DashboardListen string
	Logger          *slog.Logger
	// Out receives the lines a developer reads: URLs and what is running.
	Out io.Writer
}

// Validate reports a configuration Run cannot use.
func (c Config) Validate() error {
	if c.DatabaseURL == "" && c.DataDir == "" {
		return errors.New("dev node: need a database URL or a data directory")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("dev node: port %d out of range", c.Port)
	}
	return nil
}

// Run starts the node and blocks until ctx is done or a daemon fails, then stops
// everything it started, the embedded server last.
func Run(ctx context.Context, cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	dbURL := cfg.DatabaseURL
	if dbURL == "" {
		srv, err := pgembed.Start(ctx, pgembed.Config{DataDir: cfg.DataDir, Port: cfg.Port, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("start embedded postgres: %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if stopErr := srv.Stop(stopCtx); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("stop embedded postgres: %w", stopErr))
			}
			fmt.Fprintln(cfg.Out, "embedded postgres stopped")
		}()
		if err := ensureDatabase(ctx, srv.URL("postgres"), DatabaseName); err != nil {
			return err
		}
		dbURL = srv.URL(DatabaseName)
		fmt.Fprintf(cfg.Out, "embedded postgres (data in %s)\n", cfg.DataDir)
	}
	fmt.Fprintf(cfg.Out, "DATABASE_URL=%s\n", dbURL)

	if err := migrate(ctx, dbURL, cfg.Out); err != nil {
		return err
	}
	keyFile := cmp.Or(cfg.NodeKeyFile, nodekey.DefaultFile)
	key, created, err := nodekey.LoadOrGenerate(keyFile)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(cfg.Out, "created the node key %s\n", keyFile)
	}
	fmt.Fprintf(cfg.Out, "node pubkey %s (%s)\n", key.PubKey, key.Npub())

	// Every daemon of the node runs here, each with Run(ctx) error; the first that
	// fails stops the others.
	g, gctx := errgroup.WithContext(ctx)
	relayCfg := relay.DefaultConfig()
	relayCfg.Info.Self = key.PubKey
	if cfg.RelayListen != "" {
		relayCfg.Listen = cfg.RelayListen
	}
	g.Go(func() error {
		return relaynode.Run(gctx, relaynode.Options{DatabaseURL: dbURL, Relay: relayCfg,
			SweepInterval: 30 * time.Second, StatsInterval: relaynode.DefaultStatsInterval, AdminPubkeys: cfg.AdminPubkeys, Logger: cfg.Logger.With("daemon", "relay")})
	})
	fmt.Fprintf(cfg.Out, "relay: ws://%s (NIP-11, /healthz and /metrics on the same address)\n", relayCfg.Listen)
	indexerListen := cfg.IndexerListen
	if indexerListen == "" {
		indexerListen = "127.0.0.1:7780"
	}
	g.Go(func() error {
		return indexer.Run(gctx, indexer.Options{DatabaseURL: dbURL, Listen: indexerListen, Logger: cfg.Logger.With("daemon", "indexer")})
	})
	fmt.Fprintf(cfg.Out, "indexer: http://%s/v1/search?q=... (consumer %s; /healthz and /metrics on the same address)\n", indexerListen, indexer.ConsumerName)
	moderatorListen := cmp.Or(cfg.ModeratorListen, "127.0.0.1:7781")
	g.Go(func() error {
		return moderation.Run(gctx, moderation.Options{DatabaseURL: dbURL, Listen: moderatorListen, Key: key,
			Logger: cfg.Logger.With("daemon", "moderator")})
	})
	fmt.Fprintf(cfg.Out, "moderator: http://%s/metrics (consumer %s; labels signed by %s)\n", moderatorListen, moderation.ConsumerName, key.Npub())
	trustListen := cmp.Or(cfg.TrustListen, "127.0.0.1:7782")
	g.Go(func() error {
		return trust.Run(gctx, trust.Options{DatabaseURL: dbURL, Listen: trustListen, NodeKey: key, Admins: cfg.AdminPubkeys,
			Logger: cfg.Logger.With("daemon", "trust")})
	})
	fmt.Fprintf(cfg.Out, "trust: http://%s/v1/trust/{pubkey} (consumer %s; NIP-85 assertions by a key derived from the node key)\n", trustListen, trust.ConsumerName)
	dashListen := cmp.Or(cfg.DashboardListen, "127.0.0.1:7790")
	if err := dashboard.CheckExposure(dashListen, ""); err != nil {
		return err
	}
	dashPool, err := dbpool.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer dashPool.Close()
	dashLn, err := net.Listen("tcp", dashListen)
	if err != nil {
		return fmt.Errorf("dashboard listener: %w", err)
	}
	dash := dashboard.New(dashboard.Config{Pool: dashPool, Listen: dashLn.Addr().String(),
		RelayMetrics: []string{"http://" + relayCfg.Listen + "/metrics"}})
	g.Go(func() error { return dashboard.Serve(gctx, dashLn, dash, "") })
	fmt.Fprintf(cfg.Out, "dashboard: http://%s/ (read-only status page)\n", dashLn.Addr())
	fmt.Fprintln(cfg.Out, "node is up; press Ctrl-C to stop")
	<-gctx.Done()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func migrate(ctx context.Context, dbURL string, out io.Writer) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	applied, err := schema.Migrate(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		fmt.Fprintf(out, "applied migration %04d_%s\n", m.Version, m.Name)
	}
	return nil
}

func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to embedded postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}
