package main

import (
	"fmt"
	"github.com/urfave/cli/v2"
	"strings"

	"github.com/kukuri/communitynode/internal/nodekey"

	"github.com/kukuri/communitynode/internal/devnode"
)

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run the whole node locally (embedded Postgres unless DATABASE_URL is set) until Ctrl-C",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "data-dir", Value: ".cn/pg", EnvVars: []string{"CN_DEV_DATA_DIR"},
				Usage: "where the embedded Postgres keeps its data (reused across runs)"},
			&cli.IntFlag{Name: "pg-port", EnvVars: []string{"CN_DEV_PG_PORT"},
				Usage: "port of the embedded Postgres (0: last used, else a free one)"},
			&cli.StringFlag{Name: "relay-listen", Value: "127.0.0.1:7777", EnvVars: []string{"CN_RELAY_LISTEN"},
				Usage: "address of the relay (WebSocket, NIP-11, /healthz, /metrics)"},
			&cli.StringFlag{Name: "indexer-listen", Value: "127.0.0.1:7780", EnvVars: []string{"CN_INDEXER_LISTEN"},
				Usage: "address of the indexer's search API (/v1/search, /healthz, /metrics)"},
			&cli.StringFlag{Name: "moderator-listen", Value: "127.0.0.1:7781", EnvVars: []string{"CN_MODERATOR_LISTEN"},
				Usage: "address of the moderator's /healthz and /metrics"},
			&cli.StringFlag{Name: "trust-listen", Value: "127.0.0.1:7782", EnvVars: []string{"CN_TRUST_LISTEN"},
				Usage: "address of the trust daemon's /v1/trust/{pubkey}, /healthz and /metrics"},
			&cli.StringFlag{Name: "dashboard-listen", Value: "127.0.0.1:7790", EnvVars: []string{"CN_DASHBOARD_LISTEN"},
				Usage: "address of the status page (loopback only in dev mode)"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_RELAY_ADMIN_PUBKEYS"},
				Usage: "hex pubkeys that may manage the relay through NIP-86 (comma separated)"},
			&cli.StringFlag{Name: "node-key-file", Value: nodekey.DefaultFile, EnvVars: []string{"CN_NODE_KEY_FILE"},
				Usage: "the node's key; created on first run"},
		},
		Action: func(c *cli.Context) error {
			for _, pk := range c.StringSlice("admin-pubkeys") {
				if len(pk) != 64 || strings.Trim(pk, "0123456789abcdef") != "" {
					return usageError{fmt.Errorf("--admin-pubkeys: %q is not a 64-character hex pubkey", pk)}
				}
			}
			cfg := devnode.Config{
				DatabaseURL:     databaseURL(c),
				DataDir:         c.String("data-dir"),
				Port:            c.Int("pg-port"),
				RelayListen:     c.String("relay-listen"),
				IndexerListen:   c.String("indexer-listen"),
				ModeratorListen: c.String("moderator-listen"),
				TrustListen:     c.String("trust-listen"),
				NodeKeyFile:     c.String("node-key-file"),
				Logger:          textLogger(c),
				Out:             c.App.Writer,
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			return devnode.Run(c.Context, cfg)
		},
	}
}
