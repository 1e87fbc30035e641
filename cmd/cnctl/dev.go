package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/devnode"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/storerules"
)

// devCommand runs the whole node (`make run`). Every flag maps onto a field of
// devnode.Options in devOptions, and TestDevFlagsReachTheNode fails when one
// does not.
func devCommand() *cli.Command {
	return command[devnode.Options]{
		Name:   "dev",
		Config: "dev",
		Usage:  "run the whole node locally (embedded Postgres unless DATABASE_URL is set) until Ctrl-C",
		Flags: append([]cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "data-dir", Value: ".cn/pg", EnvVars: []string{"CN_DEV_DATA_DIR"},
				Usage: "where the embedded Postgres keeps its data (reused across runs)"},
			&cli.IntFlag{Name: "pg-port", EnvVars: []string{"CN_DEV_PG_PORT"},
				Usage: "port of the embedded Postgres (0: last used, else a free one)"},
			&cli.StringFlag{Name: "relay-listen", Value: node.DefaultRelayListen, EnvVars: []string{"CN_RELAY_LISTEN"},
				Usage: "address of the relay (WebSocket, NIP-11, NIP-86, /healthz)"},
			&cli.StringSliceFlag{Name: "relay-public-url", EnvVars: []string{"CN_RELAY_PUBLIC_URL"},
				Usage: "the relay's URL as apps see it (a tunnel or proxy in front of the dev node; repeatable), which sign-ins must name; default: --relay-listen, which must then be loopback"},
			&cli.StringFlag{Name: "relay-metrics-listen", Value: node.DefaultRelayMetricsListen, EnvVars: []string{"CN_RELAY_METRICS_LISTEN"},
				Usage: "private address of the relay's /metrics (the status page reads it there)"},
			&cli.StringFlag{Name: "indexer-listen", Value: node.DefaultIndexerListen, EnvVars: []string{"CN_INDEXER_LISTEN"},
				Usage: "address of the indexer's search API (/v1/search, /healthz, /metrics)"},
			&cli.StringFlag{Name: "moderator-listen", Value: node.DefaultModeratorListen, EnvVars: []string{"CN_MODERATOR_LISTEN"},
				Usage: "address of the moderator's /healthz and /metrics"},
			&cli.StringFlag{Name: "trust-listen", Value: node.DefaultTrustListen, EnvVars: []string{"CN_TRUST_LISTEN"},
				Usage: "address of the trust daemon's /v1/trust/{pubkey}, /healthz and /metrics"},
			&cli.StringFlag{Name: "dashboard-listen", Value: node.DefaultDashboardListen, EnvVars: []string{"CN_DASHBOARD_LISTEN"},
				Usage: "address of the status page (loopback only in dev mode)"},
			&cli.StringFlag{Name: "nats-listen", Value: node.DefaultDevNATSListen, EnvVars: []string{"CN_DEV_NATS_LISTEN"},
				Usage: "address of the embedded NATS server with JetStream that the bridge publishes to (store next to --data-dir)"},
			&cli.StringFlag{Name: "nats-url", EnvVars: []string{"CN_NATS_URL"},
				Usage: "publish to this NATS server (nats-server >= 2.10 with JetStream) instead of starting an embedded one"},
			&cli.StringFlag{Name: "bridge-listen", Value: node.DefaultBridgeListen, EnvVars: []string{"CN_BRIDGE_LISTEN"},
				Usage: "address of the bridge's /healthz and /metrics"},
			&cli.BoolFlag{Name: "no-bridge", EnvVars: []string{"CN_DEV_NO_BRIDGE"},
				Usage: "start neither the bridge nor the embedded NATS server"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_RELAY_ADMIN_PUBKEYS"},
				Usage: "pubkeys (hex or npub, comma separated) that may manage the relay through NIP-86; trust's seeds when --seeds is not given"},
			&cli.StringSliceFlag{Name: "seeds", EnvVars: []string{"CN_TRUST_SEEDS"},
				Usage: "trust's seed pubkeys (hex or npub, comma separated); default: the admins, else uniform"},
			&cli.StringFlag{Name: "node-key-file", Value: nodekey.DefaultFile, EnvVars: []string{"CN_NODE_KEY_FILE"},
				Usage: "the node's key; created on first run"},
			&cli.StringFlag{Name: "blossom-dir", EnvVars: []string{"CN_DEV_BLOSSOM_DIR"},
				Usage: "where the relay's Blossom media server (on the relay's address; docs/media.md) keeps blob files; default: blobs beside --data-dir (.cn/blobs)"},
			&cli.StringFlag{Name: "membership", Value: string(membership.Open), EnvVars: []string{"CN_RELAY_MEMBERSHIP"},
				Usage: "NIP-43 relay membership, as relay --membership: open (anyone writes) or invite (only members write; see docs/membership.md)"},
		}, storerules.Flags()...), // the relay's store rules, as `relay` takes them
		Options: func(c *cli.Context) (devnode.Options, error) {
			o, err := devOptions(c)
			o.Reload = daemon.NewSource(c, devLive, devOptions)
			return o, err
		},
		Run: func(ctx context.Context, e env, o devnode.Options) error {
			o.Logger, o.Out = e.Logger, e.Out
			if o.Reload.Requests == nil { // under daemon.Main: SIGHUP asks for a reload
				hup := make(chan os.Signal, 1)
				signal.Notify(hup, syscall.SIGHUP)
				defer signal.Stop(hup)
				requests := make(chan struct{}, 1)
				go func() {
					for {
						select {
						case <-ctx.Done():
							return
						case <-hup:
						}
						select {
						case requests <- struct{}{}:
						default: // one is waiting already
						}
					}
				}()
				o.Reload.Requests = requests
			}
			return devListenHint(devnode.Run(ctx, o))
		},
	}.build()
}

// devLive are the flags of cnctl dev a configuration reload (SIGHUP)
// applies to its running relay, as relay applies the same flags; every other
// flag needs a restart.
var devLive = daemon.NewLive(append([]string{"admin-pubkeys"}, storerules.Live...)...)

// devListenHint adds to an address the dev node's relay could not listen on
// the flag and variable that set it.
func devListenHint(err error) error {
	var le *relay.ListenError
	switch {
	case !errors.As(err, &le):
		return err
	case le.Metrics:
		return fmt.Errorf("%w (set --relay-metrics-listen / CN_RELAY_METRICS_LISTEN)", err)
	default:
		return fmt.Errorf("%w (set --relay-listen / CN_RELAY_LISTEN)", err)
	}
}

// devOptions maps the dev command's flags onto the dev node's options and
// validates them.
func devOptions(c *cli.Context) (devnode.Options, error) {
	cfg := devnode.Options{
		DatabaseURL:        databaseURL(c),
		DataDir:            c.String("data-dir"),
		Port:               c.Int("pg-port"),
		RelayListen:        c.String("relay-listen"),
		RelayMetricsListen: c.String("relay-metrics-listen"),
		RelayPublicURLs:    c.StringSlice("relay-public-url"),
		IndexerListen:      c.String("indexer-listen"),
		ModeratorListen:    c.String("moderator-listen"),
		TrustListen:        c.String("trust-listen"),
		DashboardListen:    c.String("dashboard-listen"),
		NATSListen:         c.String("nats-listen"),
		NATSURL:            c.String("nats-url"),
		BridgeListen:       c.String("bridge-listen"),
		NoBridge:           c.Bool("no-bridge"),
		NodeKeyFile:        c.String("node-key-file"),
		BlossomDir:         c.String("blossom-dir"),
	}
	var err error
	if cfg.AdminPubkeys, err = pubkeyList(c.StringSlice("admin-pubkeys"), "--admin-pubkeys"); err != nil {
		return cfg, err
	}
	if cfg.Seeds, err = pubkeyList(c.StringSlice("seeds"), "--seeds"); err != nil {
		return cfg, err
	}
	if cfg.Membership, err = membership.ParseMode(c.String("membership")); err != nil {
		return cfg, err
	}
	rules, err := storerules.FromFlags(c)
	if err != nil {
		return cfg, err
	}
	cfg.Rules = &rules
	return cfg, cfg.Validate()
}

// pubkeyList parses hex or npub pubkeys given to flag.
func pubkeyList(values []string, flag string) ([]string, error) {
	var out []string
	for _, v := range values {
		pk, err := protocol.ParsePubkey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		out = append(out, pk)
	}
	return out, nil
}
