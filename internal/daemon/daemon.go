// Package daemon is what the node's long-running commands (relay, indexer,
// moderator, trust) do the same way, so that each main and each Run function
// says only what is its own.
//
//   - Main is a daemon's (and cnctl's) func main: SIGINT and SIGTERM cancel the
//     context; a failure is printed as one line, "name: error", and exits 1
//     (or the code a cli.ExitCoder in it carries).
//   - App builds the command line with the shared conventions: help on stdout,
//     errors returned to Main (never an exit from inside), no positional
//     arguments, and the flags every daemon has (--database-url, --log-level,
//     --debug-listen). The action gets the logger --log-level describes.
//   - Process.Run is the body: it listens first (a taken address fails before
//     anything starts), then runs the daemon's tasks and its HTTP server in one
//     group. The first failure stops the others and is returned once all have
//     stopped; a cancelled context is a clean stop and returns nil.
//   - SIGHUP reloads a daemon's configuration (reload.go): Main turns it into
//     a reload request, NewSource and Reloader parse the command line, the
//     environment and --config again as the start did and apply the flags of
//     the daemon's Live set; the rest is reported as needing a restart.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/platform/configfile"
	"github.com/kukuri/communitynode/internal/platform/httpserver"
	"github.com/kukuri/communitynode/internal/platform/oneline"
)

// Main runs the command line newApp describes on os.Args until it returns or
// SIGINT/SIGTERM cancels it, and exits with ExitCode after a failure.
//
// A daemon's App (App) also gets SIGHUP: each one asks the daemon to reload its
// configuration (reload.go); one arriving while a reload runs is kept, more
// are merged into it.
func Main(newApp func(stdout, stderr io.Writer) *cli.App) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := newApp(os.Stdout, os.Stderr)
	var requests chan struct{}
	if _, ok := app.Metadata[levelKey]; ok {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		requests = make(chan struct{}, 1)
		done := ctx.Done()
		go func() {
			for {
				select {
				case <-done:
					return
				case <-hup:
				}
				select {
				case requests <- struct{}{}:
				default: // one is waiting already
				}
			}
		}()
		defer signal.Stop(hup)
	}
	// Every command may reload (cnctl dev takes SIGHUP itself: requests nil).
	ctx = WithReload(ctx, newApp, os.Args, requests)
	err := app.RunContext(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", app.Name, oneline.Error(err))
		os.Exit(ExitCode(err))
	}
}

// ExitCode is the exit status of a failure: the code of the first cli.ExitCoder
// in err's chain (cnctl's usage errors: 2), else 1.
func ExitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// App returns a daemon's command line: flags plus --config (the node's
// configuration file, section name: package configfile), --database-url
// (required), --log-level and --debug-listen. Before action runs it refuses positional
// arguments, parses the log level and starts the debug listener if asked; the
// logger writes JSON lines to stderr.
func App(name, usage string, stdout, stderr io.Writer, flags []cli.Flag,
	action func(c *cli.Context, logger *slog.Logger) error) *cli.App {
	flags = append(flags,
		configfile.Flag(),
		&cli.StringFlag{Name: "database-url", EnvVars: []string{"DATABASE_URL"}, Required: true, Usage: "Postgres URL of the node's database"},
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"CN_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "debug-listen", EnvVars: []string{"CN_DEBUG_LISTEN"}, Usage: "address to serve Go profiles (/debug/pprof/) on; keep it private (default: off)"},
		ReusePortFlag(),
	)
	required := configfile.TakeRequired(flags)
	level := new(slog.LevelVar) // --log-level, live: a reload sets it
	return &cli.App{
		Metadata:        map[string]any{levelKey: level},
		Name:            name,
		Usage:           usage,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // Main decides the exit code
		// --config's values are applied in Before, after the command line and
		// the environment and before anything checks what is required.
		Before: configfile.Before(name),
		Flags:  flags,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("unexpected arguments %q (see %s --help)", c.Args().Slice(), name)
			}
			for _, name := range required {
				if c.String(name) == "" {
					return fmt.Errorf("--%s is required (on the command line, in its environment variable, or in --config)", name)
				}
			}
			var l slog.Level
			if err := l.UnmarshalText([]byte(strings.ToUpper(c.String("log-level")))); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			if reparse, ok := c.Context.Value(reparseKey{}).(func(*cli.Context) error); ok {
				return reparse(c) // a reload's parse (reload.go): nothing starts
			}
			level.Set(l)
			logger := slog.New(slog.NewJSONHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
			if err := serveProfiles(c.Context, c.String("debug-listen"), logger); err != nil {
				return fmt.Errorf("debug listener: %w", err)
			}
			return action(c, logger)
		},
	}
}

// ReusePortFlag is every daemon's --reuse-port: its listeners are bound with
// SO_REUSEPORT, so that a new process with the same configuration starts
// while the old one runs, which is then stopped with SIGTERM (a restart
// without downtime, docs/operations.md). Off, a second process on the same
// address fails to start, which keeps two nodes off one port by mistake.
func ReusePortFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "reuse-port", EnvVars: []string{"CN_REUSE_PORT"}, Usage: "bind the listen addresses with SO_REUSEPORT, so that a new process with the same configuration can start while this one runs (then SIGTERM this one: a restart without downtime); off, a second process on an address fails to start"}
}

// levelKey holds, in a daemon App's Metadata, its logger's *slog.LevelVar.
const levelKey = "cn-log-level"

// BatchSizeFlag is a consumer's --batch-size: outbox rows per transaction,
// 1 to 10,000.
func BatchSizeFlag(value int, env, usage string) *cli.IntFlag {
	return &cli.IntFlag{Name: "batch-size", Value: value, EnvVars: []string{env}, Usage: usage,
		Action: func(_ *cli.Context, n int) error {
			if n < 1 || n > 10000 {
				return fmt.Errorf("--batch-size: want 1-10000, got %d", n)
			}
			return nil
		}}
}

// Registry returns a metrics registry holding the Go runtime's and the
// process's collectors, which every daemon exports.
func Registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Mux serves /metrics from reg and /healthz (a ping of the database); a
// daemon adds its own routes.
func Mux(reg prometheus.Gatherer, pool *pgxpool.Pool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", httpserver.Healthz(pool))
	return mux
}

// Process is a daemon's body: its tasks and, optionally, its HTTP server.
type Process struct {
	Name    string       // prefixes errors and log lines ("moderator")
	Listen  string       // HTTP address; "" serves nothing
	Handler http.Handler // what Listen serves
	Path    string       // the path logged with the address, the one to visit ("/metrics")
	Logger  *slog.Logger // nil: discard
	// Ready, if set, is called with the listener's address once it listens.
	Ready func(addr string)
	// ReusePort binds Listen with SO_REUSEPORT (--reuse-port).
	ReusePort bool
}

// Run listens on p.Listen (if set), then runs tasks and the HTTP server until
// ctx is done or one of them fails. It returns once every task has returned:
// nil when ctx was cancelled, else the first failure.
func (p Process) Run(ctx context.Context, tasks ...func(context.Context) error) error {
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var ln net.Listener
	if p.Listen != "" {
		var err error
		if ln, err = httpserver.Listen(ctx, p.Listen, p.ReusePort); err != nil {
			return fmt.Errorf("%s listener: %w", p.Name, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, task := range tasks {
		g.Go(func() error { return task(gctx) })
	}
	if ln != nil {
		g.Go(func() error {
			if err := httpserver.Serve(gctx, ln, p.Handler); err != nil {
				return fmt.Errorf("%s HTTP: %w", p.Name, err)
			}
			return nil
		})
		logger.Info(p.Name+" listening", "url", "http://"+ln.Addr().String()+p.Path)
		if p.Ready != nil {
			p.Ready(ln.Addr().String())
		}
	}
	if err := NotifyReady(); err != nil {
		logger.Warn("systemd notify", "err", err)
	}
	err := g.Wait()
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}
