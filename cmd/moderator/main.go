// Command moderator runs the moderation-v1 consumer: rules, NIP-56 report
// tallies, NIP-32 labels signed by the node key, hiding. Flags (each with an
// environment variable) -> moderation.Options -> Run until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "moderator: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// run executes one moderator command line. It never exits the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return newApp(stdout, stderr).RunContext(ctx, args)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "moderator",
		Usage:           "apply the community's moderation rules (consumer moderation-v1): NIP-32 labels, hides, NIP-56 report tallies",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main decides the exit code
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7781", EnvVars: []string{"CN_MODERATOR_LISTEN"}, Usage: "address to serve /healthz and /metrics on"},
			&cli.StringFlag{Name: "database-url", EnvVars: []string{"DATABASE_URL"}, Required: true, Usage: "Postgres URL of the node's database"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Required: true, Usage: "the node's key (cnctl node-key generate), which signs its labels"},
			&cli.StringFlag{Name: "label-namespace", Value: moderation.DefaultNamespace, EnvVars: []string{"CN_MODERATOR_LABEL_NAMESPACE"}, Usage: "NIP-32 namespace (L tag) of the node's labels"},
			&cli.IntFlag{Name: "batch-size", Value: moderation.DefaultBatchSize, EnvVars: []string{"CN_MODERATOR_BATCH_SIZE"}, Usage: "outbox rows per moderation transaction"},
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"CN_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("unexpected arguments %q (see moderator --help)", c.Args().Slice())
			}
			if n := c.Int("batch-size"); n < 1 || n > 10000 {
				return fmt.Errorf("--batch-size: want 1-10000, got %d", n)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(strings.ToUpper(c.String("log-level")))); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			key, err := nodekey.Load(c.String("node-key-file"))
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewJSONHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
			return moderation.Run(c.Context, moderation.Options{
				DatabaseURL: c.String("database-url"),
				Listen:      c.String("listen"),
				Key:         key,
				Namespace:   c.String("label-namespace"),
				BatchSize:   c.Int("batch-size"),
				Logger:      logger,
			})
		},
	}
}
