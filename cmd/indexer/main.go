// Command indexer runs the index-v1 consumer, which keeps the node's search index,
// and serves the search API: flags (each with an environment variable) ->
// indexer.Options -> Run until SIGINT or SIGTERM.
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

	"github.com/kukuri/communitynode/internal/debugserver"
	"github.com/kukuri/communitynode/internal/indexer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "indexer: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// run executes one indexer command line. It never exits the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return newApp(stdout, stderr).RunContext(ctx, args)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "indexer",
		Usage:           "keep the community node's search index (consumer index-v1) and serve searches",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main decides the exit code
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7780", EnvVars: []string{"CN_INDEXER_LISTEN"}, Usage: "address to serve /v1/search, /healthz and /metrics on"},
			&cli.StringFlag{Name: "database-url", EnvVars: []string{"DATABASE_URL"}, Required: true, Usage: "Postgres URL of the node's database"},
			&cli.StringFlag{Name: "kinds", EnvVars: []string{"CN_INDEXER_KINDS"}, Usage: fmt.Sprintf("comma-separated kinds to index (default: %v)", indexer.DefaultKinds)},
			&cli.IntFlag{Name: "batch-size", Value: indexer.DefaultBatchSize, EnvVars: []string{"CN_INDEXER_BATCH_SIZE"}, Usage: "outbox rows per index transaction"},
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"CN_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "debug-listen", EnvVars: []string{"CN_DEBUG_LISTEN"}, Usage: "address to serve Go profiles (/debug/pprof/) on; keep it private (default: off)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("unexpected arguments %q (see indexer --help)", c.Args().Slice())
			}
			kinds, err := indexer.ParseKinds(c.String("kinds"))
			if err != nil {
				return fmt.Errorf("--kinds: %w", err)
			}
			if n := c.Int("batch-size"); n < 1 || n > 10000 {
				return fmt.Errorf("--batch-size: want 1-10000, got %d", n)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(strings.ToUpper(c.String("log-level")))); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			logger := slog.New(slog.NewJSONHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
			if err := debugserver.Start(c.Context, c.String("debug-listen"), logger); err != nil {
				return fmt.Errorf("debug listener: %w", err)
			}
			return indexer.Run(c.Context, indexer.Options{
				DatabaseURL: c.String("database-url"),
				Listen:      c.String("listen"),
				Kinds:       kinds,
				BatchSize:   c.Int("batch-size"),
				Logger:      logger,
			})
		},
	}
}
