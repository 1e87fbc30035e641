package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"
)

// usageError marks a wrong command line (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	// urfave/cli reports a missing Required flag with an unexported error type.
	if strings.HasPrefix(err.Error(), "Required flag") {
		return 2
	}
	return 1
}

// oneLine keeps an error message on one line, as an operator's terminal expects.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

const databaseURLFlagName = "database-url"

// databaseURLFlag is accepted before or after any command that uses the database.
func databaseURLFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    databaseURLFlagName,
		Usage:   "Postgres URL of the node's database",
		EnvVars: []string{"DATABASE_URL"},
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                 "cnctl",
		Usage:                "operate a Nostr community node",
		Writer:               stdout,
		ErrWriter:            stderr,
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the exit code
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("unknown command %q (see cnctl --help)", c.Args().First())}
			}
			return cli.ShowAppHelp(c)
		},
		Flags: []cli.Flag{databaseURLFlag()},
		Commands: []*cli.Command{
			migrateCommand(),
			devCommand(),
			statusCommand(),
			resetOffsetCommand(),
			dlqCommand(),
			outboxCommand(),
			benchCommand(),
			reindexCommand(),
			nodeKeyCommand(),
			moderationCommand(),
			dashboardCommand(),
			importCommand(),
			exportCommand(),
			trustCommand(),
		},
	}
}

// textLogger is cnctl's logger: text to stderr.
func textLogger(c *cli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// databaseURL returns --database-url from whichever level of the command line set
// it (the innermost wins), else DATABASE_URL.
func databaseURL(c *cli.Context) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet(databaseURLFlagName) {
			return cc.String(databaseURLFlagName)
		}
	}
	return c.String(databaseURLFlagName)
}

// connect opens one connection to the database named by --database-url.
func connect(c *cli.Context) (*pgx.Conn, error) {
	url := databaseURL(c)
	if url == "" {
		return nil, usageError{errors.New("no database: set DATABASE_URL or --database-url")}
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("bad database URL: %w", err)}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(c.Context, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return conn, nil
}

func closeConn(ctx context.Context, conn *pgx.Conn) {
	_ = conn.Close(context.WithoutCancel(ctx))
}
