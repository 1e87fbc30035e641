// Command indexer runs the index-v1 consumer, which keeps the node's search index,
// and serves the search API: flags (each with an environment variable) ->
// node.IndexerOptions -> node.Indexer until SIGINT or SIGTERM.
package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/node"
)

func main() { daemon.Main(newApp) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return daemon.App("indexer", "keep the community node's search index (consumer index-v1) and serve searches",
		stdout, stderr, []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultIndexerListen, EnvVars: []string{"CN_INDEXER_LISTEN"}, Usage: "address to serve /v1/search, /healthz and /metrics on"},
			&cli.StringFlag{Name: "kinds", EnvVars: []string{"CN_INDEXER_KINDS"}, Usage: fmt.Sprintf("comma-separated kinds to index (default: %v)", indexer.DefaultKinds)},
			daemon.BatchSizeFlag(node.DefaultIndexerBatchSize, "CN_INDEXER_BATCH_SIZE", "outbox rows per index transaction"),
			&cli.StringFlag{Name: "nats-url", EnvVars: []string{"CN_INDEXER_NATS_URL"}, Usage: "follow the bridge's NATS JetStream stream instead of the outbox, into --database-url, a database of its own (a remote indexer); each event is verified (id, signature) first, and an altered one halts the indexer before it"},
			&cli.StringFlag{Name: "stream", Value: node.DefaultBridgeStream, EnvVars: []string{"CN_INDEXER_STREAM"}, Usage: "the bridge's stream (with --nats-url)"},
		},
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := indexerOptions(c)
			if err != nil {
				return err
			}
			o.Logger = logger
			o.Reload = daemon.NewSource(c, indexerLive, indexerOptions)
			return node.Indexer(c.Context, o)
		})
}

// indexerLive are the flags a configuration reload (SIGHUP) applies to the
// running indexer; every other flag needs a restart.
var indexerLive = daemon.NewLive("log-level")

// indexerOptions maps the flags onto the indexer's options and validates them, at
// start and at each reload.
func indexerOptions(c *cli.Context) (node.IndexerOptions, error) {
	kinds, err := indexer.ParseKinds(c.String("kinds"))
	if err != nil {
		return node.IndexerOptions{}, fmt.Errorf("--kinds: %w", err)
	}
	return node.IndexerOptions{
		DatabaseURL: c.String("database-url"),
		Listen:      c.String("listen"),
		ReusePort:   c.Bool("reuse-port"),
		Kinds:       kinds,
		BatchSize:   c.Int("batch-size"),
		NATSURL:     c.String("nats-url"),
		Stream:      c.String("stream"),
	}, nil
}
