package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/pkg/outbox"
)

func outboxCommand() *cli.Command {
	return &cli.Command{
		Name:         "outbox",
		Usage:        "inspect the outbox and apply its retention",
		Flags:        []cli.Flag{databaseURLFlag()},
		OnUsageError: commandUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("outbox: unknown command %q (see cnctl outbox --help)", c.Args().First())}
			}
			return cli.ShowSubcommandHelp(c)
		},
		Subcommands: []*cli.Command{outboxPruneCommand(), outboxPartitionsCommand()},
	}
}

func outboxPruneCommand() *cli.Command {
	return &cli.Command{
		Name:  "prune",
		Usage: "drop outbox rows older than the retention period that every consumer has consumed (a dry run unless --execute)",
		Description: "Whole partitions are dropped; in the oldest partition that must stay, the leading rows that may go are deleted.\n" +
			"The row with the highest seq is always kept. Rows a registered consumer has not consumed are kept\n" +
			"(and reported) unless --force.",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "older-than", Value: "720h", Usage: "retention period: a Go duration (720h) or whole days (30d)"},
			&cli.BoolFlag{Name: "force", Usage: "also remove rows that some consumer has not consumed yet"},
			&cli.BoolFlag{Name: "execute", Usage: "really remove rows; without it, prune only reports what it would remove"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		OnUsageError: commandUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("outbox prune: unexpected argument %q", c.Args().First())}
			}
			age, err := parseAge(c.String("older-than"))
			if err != nil {
				return usageError{fmt.Errorf("outbox prune: --older-than: %w", err)}
			}
			pool, err := connectPool(c)
			if err != nil {
				return err
			}
			defer pool.Close()
			rep, err := outbox.Prune(c.Context, pool, outbox.PruneOptions{
				OlderThan: age, Force: c.Bool("force"), Execute: c.Bool("execute"),
			})
			if rep.Cutoff.IsZero() { // nothing was planned or done
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(rep); jerr != nil && err == nil {
					err = jerr
				}
				return err
			}
			fmt.Fprint(c.App.Writer, rep.String())
			if !rep.Executed && err == nil {
				fmt.Fprintln(c.App.Writer, "dry run: nothing was changed (use --execute)")
			}
			return err
		},
	}
}

func outboxPartitionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "partitions",
		Usage: "list the outbox's range partitions with row counts and the ingest times of their first and last rows",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.BoolFlag{Name: "exact", Usage: "count rows (reads every row) instead of the planner's estimate"},
		},
		OnUsageError: commandUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("outbox partitions: unexpected argument %q", c.Args().First())}
			}
			conn, err := connect(c)
			if err != nil {
				return err
			}
			defer closeConn(c.Context, conn)
			stats, err := outbox.PartitionStats(c.Context, conn, c.Bool("exact"))
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tLO\tHI\tROWS\tFIRST_SEQ\tLAST_SEQ\tFIRST_INGESTED\tLAST_INGESTED")
			for _, s := range stats {
				rows := strconv.FormatInt(s.Rows, 10)
				switch {
				case s.Rows < 0:
					rows = "?"
				case !s.Exact && s.Rows > 0:
					rows = "~" + rows
				}
				first, last, firstAt, lastAt := "-", "-", "-", "-"
				if s.LastSeq > 0 {
					first, last = strconv.FormatInt(s.FirstSeq, 10), strconv.FormatInt(s.LastSeq, 10)
					firstAt, lastAt = s.FirstIngestedAt.UTC().Format(time.RFC3339), s.LastIngestedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Lo, s.Hi, rows, first, last, firstAt, lastAt)
			}
			return tw.Flush()
		},
	}
}

// commandUsageError turns a command's flag parsing error into a usageError (exit 2).
func commandUsageError(_ *cli.Context, err error, _ bool) error {
	return usageError{err}
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
