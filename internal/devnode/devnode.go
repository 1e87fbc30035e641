// Package devnode is the dev node (cnctl dev, make run): the whole community
// node on one machine, each daemon built by internal/node's entry points as
// its own binary builds it, plus an embedded Postgres (pgembed), an embedded
// nats-server with JetStream and the status page. It lives apart from
// internal/node so that only cmd/cnctl links those servers: the daemons'
// binaries (cmd/relay, cmd/indexer, ...) import internal/node and never this
// package (TestDaemonsDoNotLinkTheDevServers checks it).
package devnode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/bridge"
	"github.com/kukuri/communitynode/internal/console"
	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/dashboard"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgembed"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/storerules"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/schema"
)

// DatabaseName is the database the dev node's embedded server holds the
// node's data in.
const DatabaseName = "communitynode"

// Options is what the dev node needs: where it keeps its data and where its
// daemons listen (each empty address takes its default, node.DefaultRelayListen...).
type Options struct {
	// DatabaseURL, when set, is used as is and no embedded server is started.
	DatabaseURL string
	// DataDir holds the embedded server's cluster; it is reused across runs.
	DataDir string
	// Port for the embedded server; 0 reuses the last one or picks a free one.
	Port int
	// RelayListen is where the relay serves WebSocket, NIP-11, NIP-86 and /healthz.
	RelayListen string
	// RelayPublicURLs are the relay's URLs as clients see them (a tunnel or a
	// proxy in front of the dev node); empty: RelayListen, which must then be
	// loopback (relay.Config.PublicURLs).
	RelayPublicURLs []string
	// RelayMetricsListen is the private address of the relay's /metrics, which
	// the status page reads.
	RelayMetricsListen string
	// IndexerListen is where the indexer serves /v1/search, /healthz and /metrics.
	IndexerListen string
	// ModeratorListen is where the moderator serves /healthz and /metrics.
	ModeratorListen string
	// TrustListen is where the trust daemon serves /v1/trust/{pubkey}, /healthz and /metrics.
	TrustListen string
	// NodeKeyFile holds the node's key; it is created on the first run.
	NodeKeyFile string
	// AdminPubkeys may manage the relay through NIP-86 (hex); they are trust's
	// seeds when Seeds is empty.
	AdminPubkeys []string
	// Seeds are trust's seed pubkeys (hex).
	Seeds []string
	// Rules are the store's rules the relay applies (nil: storerules.Default).
	Rules *storerules.Config
	// Membership is the relay's NIP-43 mode (zero: open), as relay
	// --membership. The dev node always has a node key, so NIP-43 is on
	// (join and leave requests, the NIP-86 membership methods) either way.
	Membership membership.Mode
	// DashboardListen is where the status page is served (loopback).
	DashboardListen string
	// NATSListen is where the embedded NATS server (JetStream, its store next
	// to DataDir) listens; node.DefaultDevNATSListen when "", port 0 picks a free one.
	// Unused when NATSURL is set or NoBridge.
	NATSListen string
	// NATSURL, when set, is an external NATS server the bridge publishes to and
	// no embedded one is started.
	NATSURL string
	// BridgeListen is where the bridge serves /healthz and /metrics.
	BridgeListen string
	// NoBridge starts neither the bridge nor the embedded NATS server.
	NoBridge bool
	// Reload rebuilds these options on SIGHUP (cnctl dev): the relay applies
	// the live ones (its store rules, the admins), as relay does on SIGHUP
	// (node.RelayOptions.Reload); the other daemons take none (zero: no
	// reloads).
	Reload daemon.Source[Options]
	// BlossomDir holds the relay's Blossom blobs (it serves Blossom on its
	// address); "": node.DefaultDevBlossomDir beside DataDir, or under .cn
	// without one.
	BlossomDir string
	Logger     *slog.Logger
	// Out receives the lines a developer reads: URLs and what is running.
	Out io.Writer
}

// Validate reports options Run cannot use.
func (c Options) Validate() error {
	if c.DatabaseURL == "" && c.DataDir == "" {
		return errors.New("dev node: need a database URL or a data directory")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("dev node: port %d out of range", c.Port)
	}
	if c.NATSListen != "" {
		if _, _, err := natsHostPort(c.NATSListen); err != nil {
			return fmt.Errorf("dev node: NATS listen address: %w", err)
		}
	}
	if c.Membership != "" {
		if _, err := membership.ParseMode(string(c.Membership)); err != nil {
			return fmt.Errorf("dev node: %w", err)
		}
	}
	if c.Rules != nil {
		if err := c.Rules.Validate(); err != nil {
			return fmt.Errorf("dev node: %w", err)
		}
	}
	return nil
}

// Run runs the whole community node on one machine for development: a database
// (the given URL, or an embedded Postgres kept in the working tree), its
// migrations, and every daemon the node has, each built as node.Relay, node.Indexer,
// node.Moderator, node.Trust and node.Bridge build it, plus the status page. Unless NoBridge,
// the bridge publishes the outbox to a NATS server: NATSURL, or an embedded
// nats-server with JetStream that Run starts. It blocks until ctx is done or a
// daemon fails, then stops everything it started, the embedded servers last.
func Run(ctx context.Context, cfg Options) (err error) {
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
	d, err := build(cfg, dbURL, key)
	if err != nil {
		return err
	}
	d.relay.Reload = relayReload(cfg.Reload, dbURL, key)
	demo, err := ensureDemoGroup(ctx, dbURL, key, d.relay.Relay.Limits.TopicRules, d.relayURL())
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	relayUp := make(chan struct{})
	var upOnce sync.Once
	d.relay.Serving = func() { upOnce.Do(func() { close(relayUp) }) }
	g.Go(func() error { return node.Relay(gctx, d.relay) })
	fmt.Fprintf(cfg.Out, "relay: %s (NIP-11, NIP-86 and /healthz on the same address; /metrics on http://%s/metrics)\n",
		d.relayURL(), d.relay.Relay.MetricsListen)
	fmt.Fprintf(cfg.Out, "blossom: %s/upload (media for members: BUD-01/02/06 on the relay's address; blobs in %s; docs/media.md)\n",
		d.blossomURL(), d.relay.Blossom.Dir)
	fmt.Fprintf(cfg.Out, "membership: %s (NIP-43; --membership; docs/membership.md)\n", cmp.Or(d.relay.Membership, membership.Open))
	printDemoGroup(cfg.Out, demo)
	g.Go(func() error { return node.Indexer(gctx, d.indexer) })
	fmt.Fprintf(cfg.Out, "indexer: http://%s/v1/search?q=... (consumer %s; /healthz and /metrics on the same address)\n", d.indexer.Listen, indexer.ConsumerName)
	g.Go(func() error { return node.Moderator(gctx, d.moderator) })
	fmt.Fprintf(cfg.Out, "moderator: http://%s/metrics (consumer %s; labels signed by %s)\n", d.moderator.Listen, moderation.ConsumerName, key.Npub())
	g.Go(func() error { return node.Trust(gctx, d.trust) })
	fmt.Fprintf(cfg.Out, "trust: http://%s/v1/trust/{pubkey} (consumer %s; NIP-85 assertions by a key derived from the node key)\n", d.trust.Listen, trust.ConsumerName)
	if d.bridge == nil {
		fmt.Fprintln(cfg.Out, "bridge: off (--no-bridge); no NATS server")
	} else {
		if d.bridge.NATSURL == "" {
			ns, stop, err := startNATS(cfg)
			if err != nil {
				return err
			}
			defer func() {
				stop()
				fmt.Fprintln(cfg.Out, "embedded nats-server stopped")
			}()
			d.bridge.NATSURL = ns.ClientURL()
			fmt.Fprintf(cfg.Out, "nats: %s (embedded nats-server %s with JetStream, store in %s)\n", ns.ClientURL(), server.VERSION, ns.StoreDir())
		}
		g.Go(func() error { return node.Bridge(gctx, *d.bridge) })
		fmt.Fprintf(cfg.Out, "bridge: stream %s on %s, subjects %s.<topic token> (consumer %s; /healthz and /metrics on http://%s)\n",
			d.bridge.Stream, d.bridge.NATSURL, d.bridge.SubjectPrefix, bridge.ConsumerName, d.bridge.Listen)
	}
	dashListen := d.dashboardListen
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
	cons := console.New(console.Config{Pool: dashPool, RelayURL: d.relayURL(), Logger: cfg.Logger.With("daemon", "console")})
	dash := dashboard.New(dashboard.Config{Pool: dashPool, Listen: dashLn.Addr().String(),
		RelayMetrics: []string{"http://" + d.relay.Relay.MetricsListen + "/metrics"}, Console: cons.Handler("/console/")})
	g.Go(func() error { return dashboard.Serve(gctx, dashLn, dash, "") })
	fmt.Fprintf(cfg.Out, "dashboard: http://%s/ (read-only status page)\n", dashLn.Addr())
	fmt.Fprintf(cfg.Out, "console: http://%s/console/ (groups, members, reports, bans, backlog; sign in with a NIP-07 extension or a NIP-46 bunker as an admin: --admin-pubkeys)\n", dashLn.Addr())
	fmt.Fprintf(cfg.Out, "topic policy: %s (NIP-11 topic_policy; docs/clients.md)\n", d.relay.Relay.Limits.TopicRules.Summary())
	// "node is up" means the relay accepts connections, as a script that
	// waits for the line expects (and its Blossom directory exists).
	select {
	case <-relayUp:
		fmt.Fprintln(cfg.Out, "node is up; press Ctrl-C to stop")
	case <-gctx.Done():
	}
	<-gctx.Done()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// daemons is what Run starts, each daemon's options built from the Options
// alone (TestEveryDevOptionReachesADaemon checks that none is dropped).
type daemons struct {
	relay           node.RelayOptions
	indexer         node.IndexerOptions
	moderator       node.ModeratorOptions
	trust           node.TrustOptions
	bridge          *node.BridgeOptions // nil: no bridge; NATSURL "": Run starts an embedded server
	dashboardListen string
}

// relayURL is the URL the dev node prints for its relay, the one apps, the
// console and the demo group's links use: the first public URL, else the
// listen address (loopback; see relay.Config.PublicURLs).
func (d daemons) relayURL() string {
	if len(d.relay.Relay.PublicURLs) > 0 {
		return d.relay.Relay.PublicURLs[0]
	}
	return console.LocalRelayURL(d.relay.Relay.Listen)
}

// blossomDir is where the dev node keeps blobs: BlossomDir, else "blobs"
// beside the database's data directory (.cn/blobs by default).
func blossomDir(cfg Options) string {
	if cfg.BlossomDir != "" {
		return cfg.BlossomDir
	}
	parent := ".cn"
	if cfg.DataDir != "" {
		parent = filepath.Dir(filepath.Clean(cfg.DataDir))
	}
	return filepath.Join(parent, node.DefaultDevBlossomDir)
}

// blossomURL is the relay's URL over http(s): where Blossom answers.
func (d daemons) blossomURL() string {
	u := d.relayURL()
	if rest, ok := strings.CutPrefix(u, "wss://"); ok {
		return "https://" + strings.TrimRight(rest, "/")
	}
	return "http://" + strings.TrimRight(strings.TrimPrefix(u, "ws://"), "/")
}

// build turns cfg into the daemons' options, on the database dbURL with the
// node key.
func build(cfg Options, dbURL string, key nodekey.Key) (daemons, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	relayCfg := relay.DefaultConfig()
	relayCfg.Info.Self = key.PubKey
	relayCfg.Listen = cmp.Or(cfg.RelayListen, node.DefaultRelayListen)
	relayCfg.MetricsListen = cmp.Or(cfg.RelayMetricsListen, node.DefaultRelayMetricsListen)
	relayCfg.PublicURLs = slices.Clone(cfg.RelayPublicURLs)
	rules := storerules.Default()
	if cfg.Rules != nil {
		rules = *cfg.Rules
	}
	relayCfg.Limits = rules.Limits(relayCfg.Limits)
	if err := relayCfg.Validate(); err != nil {
		return daemons{}, err
	}
	var br *node.BridgeOptions
	if !cfg.NoBridge {
		br = &node.BridgeOptions{DatabaseURL: dbURL, NATSURL: cfg.NATSURL, Stream: node.DefaultBridgeStream,
			SubjectPrefix: node.DefaultBridgeSubjectPrefix, Listen: cmp.Or(cfg.BridgeListen, node.DefaultBridgeListen),
			Logger: logger.With("daemon", "bridge")}
	}
	return daemons{
		bridge: br,
		relay: node.RelayOptions{DatabaseURL: dbURL, Relay: relayCfg, SweepInterval: node.DefaultSweepInterval,
			StatsInterval: node.DefaultStatsInterval, AdminPubkeys: cfg.AdminPubkeys, Pending: rules.Pending, NodeKey: key,
			MembershipKey: key, Membership: cfg.Membership, Logger: logger.With("daemon", "relay"),
			Blossom: &node.BlossomOptions{Dir: blossomDir(cfg)}},
		indexer: node.IndexerOptions{DatabaseURL: dbURL, Listen: cmp.Or(cfg.IndexerListen, node.DefaultIndexerListen),
			Logger: logger.With("daemon", "indexer")},
		moderator: node.ModeratorOptions{DatabaseURL: dbURL, Listen: cmp.Or(cfg.ModeratorListen, node.DefaultModeratorListen), Key: key,
			Logger: logger.With("daemon", "moderator")},
		trust: node.TrustOptions{DatabaseURL: dbURL, Listen: cmp.Or(cfg.TrustListen, node.DefaultTrustListen), NodeKey: key,
			Admins: cfg.AdminPubkeys, Seeds: cfg.Seeds, Logger: logger.With("daemon", "trust")},
		dashboardListen: cmp.Or(cfg.DashboardListen, node.DefaultDashboardListen),
	}, nil
}

// relayReload is the relay's reload source in the dev node: the dev
// command's options parsed again, turned into the relay's options as build
// does.
func relayReload(src daemon.Source[Options], dbURL string, key nodekey.Key) daemon.Source[node.RelayOptions] {
	if src.Parse == nil {
		return daemon.Source[node.RelayOptions]{}
	}
	return daemon.Source[node.RelayOptions]{Requests: src.Requests, Running: src.Running, Live: src.Live, Level: src.Level,
		Parse: func(ctx context.Context) (node.RelayOptions, daemon.Values, error) {
			o, values, err := src.Parse(ctx)
			if err == nil {
				err = o.Validate()
			}
			if err != nil {
				return node.RelayOptions{}, nil, err
			}
			d, err := build(o, dbURL, key)
			return d.relay, values, err
		}}
}

// startNATS starts the dev node's embedded nats-server with JetStream on
// cfg.NATSListen, its store in the directory "nats" next to the Postgres data
// directory (.cn/nats by default), or in a fresh temporary directory when there
// is no data directory (removed by stop). stop shuts the server down.
func startNATS(cfg Options) (s *server.Server, stop func(), err error) {
	host, port, err := natsHostPort(cmp.Or(cfg.NATSListen, node.DefaultDevNATSListen))
	if err != nil {
		return nil, nil, err
	}
	dir, cleanup := "", func() {}
	if cfg.DataDir != "" {
		dir = filepath.Join(filepath.Dir(filepath.Clean(cfg.DataDir)), "nats")
	} else {
		if dir, err = os.MkdirTemp("", "cn-dev-nats-"); err != nil {
			return nil, nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	s, err = server.NewServer(&server.Options{ServerName: "cn-dev", Host: host, Port: port,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	s.Start()
	stop = func() {
		s.Shutdown()
		s.WaitForShutdown()
		cleanup()
	}
	if !s.ReadyForConnections(10 * time.Second) {
		stop()
		return nil, nil, fmt.Errorf("embedded nats-server on %s:%d did not start (port in use? --nats-listen, or --nats-url for a server of your own)", host, port)
	}
	return s, stop, nil
}

// natsHostPort splits a listen address for nats-server, whose port 0 means
// 4222: port 0 becomes server.RANDOM_PORT.
func natsHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q out of range", p)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
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
