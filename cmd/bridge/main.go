// Command bridge runs the bridge-v1 consumer, which publishes the node's outbox
// to a NATS JetStream stream exactly once and in order: flags (each with an
// environment variable) -> node.BridgeOptions -> node.Bridge until SIGINT or
// SIGTERM.
package main

import (
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/node"
)

func main() { daemon.Main(newApp) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return daemon.App("bridge", "publish the community node's outbox to NATS JetStream (consumer bridge-v1)",
		stdout, stderr, []cli.Flag{
			&cli.StringFlag{Name: "nats-url", EnvVars: []string{"CN_NATS_URL"}, Required: true, Usage: "NATS server URL (nats-server >= 2.10 with JetStream)"},
			&cli.StringFlag{Name: "stream", Value: node.DefaultBridgeStream, EnvVars: []string{"CN_BRIDGE_STREAM"}, Usage: "JetStream stream the outbox is published to (created if missing)"},
			&cli.StringFlag{Name: "subject-prefix", Value: node.DefaultBridgeSubjectPrefix, EnvVars: []string{"CN_BRIDGE_SUBJECT_PREFIX"}, Usage: "subjects are <prefix>.<topic token>"},
			&cli.StringFlag{Name: "listen", Value: node.DefaultBridgeListen, EnvVars: []string{"CN_BRIDGE_LISTEN"}, Usage: "address to serve /healthz and /metrics on"},
			daemon.BatchSizeFlag(node.DefaultBridgeBatchSize, "CN_BRIDGE_BATCH_SIZE", "outbox rows per publish batch and offset commit"),
		},
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := bridgeOptions(c)
			if err != nil {
				return err
			}
			o.Logger = logger
			o.Reload = daemon.NewSource(c, bridgeLive, bridgeOptions)
			return node.Bridge(c.Context, o)
		})
}

// bridgeLive are the flags a configuration reload (SIGHUP) applies to the
// running bridge; every other flag needs a restart.
var bridgeLive = daemon.NewLive("log-level")

// bridgeOptions maps the flags onto the bridge's options and validates them, at
// start and at each reload.
func bridgeOptions(c *cli.Context) (node.BridgeOptions, error) {
	return node.BridgeOptions{
		DatabaseURL:   c.String("database-url"),
		NATSURL:       c.String("nats-url"),
		Stream:        c.String("stream"),
		SubjectPrefix: c.String("subject-prefix"),
		Listen:        c.String("listen"),
		ReusePort:     c.Bool("reuse-port"),
		BatchSize:     c.Int("batch-size"),
		// Logger:        logger,
	}, nil
}
