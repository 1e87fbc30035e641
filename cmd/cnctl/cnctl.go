package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/platform/configfile"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
)

// This file is cnctl's command scaffold and the helpers its commands share.

// A command is one cnctl command, declared as data; build makes its urfave/cli
// command. Every command so built behaves the same way:
//
//   - A wrong command line is a usageError (one line, exit 2, nothing else
//     printed), found before anything is opened: an unknown flag or a value its
//     type refuses, a Required flag not given, an argument when ArgsUsage is
//     empty or a flag after the arguments, and any error of Options or of the
//     options' Validate method (if O has one).
//   - With DB, --database-url is added to Flags and the node's pool is opened
//     once, through dbpool (the daemons' session settings), after the options
//     are valid and before Run; it is closed when Run returns.
//   - Options that are an io.Closer (an input file) are closed when Run returns.
//   - Run gets the options and an env; it never sees the command line.
type command[O any] struct {
	Name, Usage, ArgsUsage, Description string
	Flags                               []cli.Flag
	DB                                  bool
	// Config, when set, adds --config and reads that section of the node's
	// configuration file (package configfile) before anything else.
	Config      string
	Subcommands []*cli.Command
	// Options reads the flags and arguments into the options (nil: the zero O).
	// An error that is not about the command line, such as an input file that
	// cannot be opened, is returned as failure{err} and exits 1.
	Options func(c *cli.Context) (O, error)
	Run     func(ctx context.Context, e env, o O) error
}

// env is what a command runs with.
type env struct {
	Pool   *pgxpool.Pool // the node's pool; nil unless the command is DB
	In     io.Reader     // standard input
	Out    io.Writer     // results: standard output
	Err    io.Writer     // warnings and progress: standard error
	Logger *slog.Logger  // text lines on Err
}

// validator is implemented by options that can be wrong on their own.
type validator interface{ Validate() error }

// build returns the urfave/cli command d declares.
func (d command[O]) build() *cli.Command {
	flags := slices.Clone(d.Flags)
	if d.DB {
		flags = append([]cli.Flag{databaseURLFlag()}, flags...)
	}
	if d.Config != "" {
		flags = append(flags, configfile.Flag())
	}
	required := configfile.TakeRequired(flags)
	var before cli.BeforeFunc
	if d.Config != "" {
		before = func(c *cli.Context) error {
			if path := c.String("config"); path != "" {
				if err := configfile.Apply(c, path, d.Config); err != nil {
					return usageError{err}
				}
			}
			return nil
		}
	}
	return &cli.Command{
		Before: before,
		Name:   d.Name, Usage: d.Usage, ArgsUsage: d.ArgsUsage, Description: d.Description,
		Flags: flags, Subcommands: d.Subcommands, HideHelpCommand: true,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			for _, name := range required {
				if !c.IsSet(name) {
					return usageError{fmt.Errorf("%s: --%s is required", commandPath(c), name)}
				}
			}
			if err := checkArgs(c); err != nil {
				return err
			}
			var o O
			if d.Options != nil {
				var err error
				if o, err = d.Options(c); err != nil {
					var f failure
					if errors.As(err, &f) {
						return f.err
					}
					return asUsage(err)
				}
			}
			if cl, ok := any(o).(io.Closer); ok {
				defer func() { _ = cl.Close() }()
			}
			if v, ok := any(o).(validator); ok {
				if err := v.Validate(); err != nil {
					return asUsage(err)
				}
			}
			if reparse, ok := daemon.ReparseHook(c.Context); ok {
				return reparse(c) // a configuration reload's parse (cnctl dev): nothing runs
			}
			e := env{In: c.App.Reader, Out: c.App.Writer, Err: c.App.ErrWriter, Logger: textLogger(c.App.ErrWriter)}
			if d.DB {
				pool, err := openPool(c)
				if err != nil {
					return err
				}
				defer pool.Close()
				e.Pool = pool
			}
			return d.Run(c.Context, e, o)
		},
	}
}

// group returns a command that only holds subcommands: alone it prints its
// help; an unknown subcommand or a wrong flag is a usage error.
func group(name, usage string, subcommands ...*cli.Command) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, Subcommands: subcommands, HideHelpCommand: true,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				p := commandPath(c)
				return usageError{fmt.Errorf("%s: unknown command %q (see cnctl %s --help)", p, c.Args().First(), p)}
			}
			return cli.ShowSubcommandHelp(c)
		},
	}
}

// checkArgs refuses arguments to a command whose ArgsUsage is empty, and flags
// written after the arguments (the parser stops at the first argument) to one
// that takes arguments, saying where they go.
func checkArgs(c *cli.Context) error {
	args := c.Args().Slice()
	if c.Command.ArgsUsage == "" {
		if len(args) > 0 {
			return usageError{fmt.Errorf("%s: unexpected argument %q (it takes none)", commandPath(c), args[0])}
		}
		return nil
	}
	for i, a := range args {
		if i > 0 && strings.HasPrefix(a, "-") {
			return usageError{fmt.Errorf("flag %s after the arguments: put flags first (cnctl %s [flags] %s)",
				a, commandPath(c), c.Command.ArgsUsage)}
		}
	}
	return nil
}

// commandPath names the running command as typed: "outbox prune".
func commandPath(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" && cc.Command.Name != c.App.Name {
			names = append(names, cc.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// usageError marks a wrong command line. It exits 2: it is a cli.ExitCoder,
// whose code daemon.Main exits with.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
func (usageError) ExitCode() int   { return 2 }

// asUsage makes err a usage error unless it already is one.
func asUsage(err error) error {
	var u usageError
	if errors.As(err, &u) {
		return err
	}
	return usageError{err}
}

// failure is an error a command's Options meets that is not about the command
// line (it exits 1).
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// onUsageError makes a flag that fails to parse a usage error.
func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

const databaseURLFlagName = "database-url"

// databaseURLFlag is accepted before or after any command that uses the database.
func databaseURLFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    databaseURLFlagName,
		Usage:   "Postgres URL of the node's database",
		EnvVars: []string{"DATABASE_URL"},
	}
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

// openPool opens the node's pool on the database --database-url names, with the
// session settings the daemons use (dbpool.Open). A missing or malformed URL is
// a usage error.
func openPool(c *cli.Context) (*pgxpool.Pool, error) {
	url := databaseURL(c)
	if url == "" {
		return nil, usageError{errors.New("no database: set DATABASE_URL or --database-url")}
	}
	if _, err := pgxpool.ParseConfig(url); err != nil {
		return nil, usageError{fmt.Errorf("bad database URL: %w", err)}
	}
	return dbpool.Open(c.Context, url)
}

// textLogger is cnctl's logger: text lines to w.
func textLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// whoAmI names the operator in the records cnctl leaves (offset resets,
// moderation decisions, management log): user@host.
func whoAmI() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return name + "@" + host
}

// parseAge reads a positive Go duration or a whole number of days ("30d").
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("bad duration %q", s)
		}
	}
	if d <= 0 {
		return 0, errors.New("must be positive, got " + s)
	}
	return d, nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLines writes one JSON object per line (JSON Lines), in order.
func printJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}
