package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func outboxCommand() *cli.Command {
	cmd := group("outbox", "inspect the outbox and apply its retention", outboxPruneCommand(), outboxPartitionsCommand(), outboxAfterRestoreCommand())
	cmd.Flags = []cli.Flag{databaseURLFlag()}
	return cmd
}

type pruneOpts struct {
	outbox.PruneOptions
	json bool
}

func outboxPruneCommand() *cli.Command {
	return command[pruneOpts]{
		Name:  "prune",
		Usage: "drop outbox rows older than the retention period that every consumer has consumed (a dry run unless --execute)",
		Description: "Whole partitions are dropped; in the oldest partition that must stay, the leading rows that may go are deleted.\n" +
			"The row with the highest seq is always kept. Rows a registered consumer has not consumed are kept\n" +
			"(and reported) unless --force.",
		DB: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "older-than", Value: shortDuration(node.DefaultRetention), Usage: "retention period: a Go duration (720h) or whole days (30d)"},
			&cli.BoolFlag{Name: "force", Usage: "also remove rows that some consumer has not consumed yet"},
			&cli.BoolFlag{Name: "execute", Usage: "really remove rows; without it, prune only reports what it would remove"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		Options: func(c *cli.Context) (pruneOpts, error) {
			age, err := parseAge(c.String("older-than"))
			if err != nil {
				return pruneOpts{}, fmt.Errorf("outbox prune: --older-than: %w", err)
			}
			return pruneOpts{
				PruneOptions: outbox.PruneOptions{OlderThan: age, Force: c.Bool("force"), Execute: c.Bool("execute"), Readers: consumer.Offsets{}},
				json:         c.Bool("json"),
			}, nil
		},
		Run: func(ctx context.Context, e env, o pruneOpts) error {
			rep, err := outbox.Prune(ctx, e.Pool, o.PruneOptions)
			if rep.Cutoff.IsZero() { // nothing was planned or done
				return err
			}
			if o.json {
				if jerr := printJSON(e.Out, rep); jerr != nil && err == nil {
					err = jerr
				}
				return err
			}
			writePruneReport(e.Out, rep)
			if !rep.Executed && err == nil {
				fmt.Fprintln(e.Out, "dry run: nothing was changed (use --execute)")
			}
			return err
		},
	}.build()
}

// writePruneReport prints the report as text, one line per dropped partition,
// deleted range and consumer that holds rows back. Lines of a dry run start
// with "dry run: would".
func writePruneReport(w io.Writer, r outbox.PruneReport) {
	pre, will := "", func(done, todo string) string { return done }
	if !r.Executed {
		pre, will = "dry run: ", func(_, todo string) string { return "would " + todo }
	}
	age := shortDuration(r.OlderThan)
	fmt.Fprintf(w, "%sretention %s: rows ingested before %s may go; the head row (seq %d) is always kept\n",
		pre, age, r.Cutoff.UTC().Format(time.RFC3339), r.Head)
	switch {
	case r.Consumers == 0:
		fmt.Fprintf(w, "%sno consumers are registered: none holds rows back\n", pre)
	case r.Forced:
		fmt.Fprintf(w, "%sforced: rows are removed even where consumers have not consumed them\n", pre)
	}
	if r.PartitionsCreated > 0 {
		fmt.Fprintf(w, "created %d partitions ahead of the head\n", r.PartitionsCreated)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "%s%s partition %s seq [%d, %d): %d rows", pre, will("dropped", "drop"), d.Name, d.Lo, d.Hi, d.Rows)
		if d.Elapsed > 0 {
			fmt.Fprintf(w, " (took %s)", d.Elapsed.Round(10*time.Microsecond))
		}
		fmt.Fprintln(w)
	}
	if d := r.Deleted; d != nil {
		fmt.Fprintf(w, "%s%s %d rows seq [%d, %d) from partition %s\n", pre, will("deleted", "delete"), d.Rows, d.From, d.To, d.Partition)
	}
	for _, h := range r.HeldBack {
		if r.Forced {
			fmt.Fprintf(w, "%sforced: %s %d of %d rows older than %s that consumer %s at seq %d has not consumed\n",
				pre, will("removed", "remove"), h.Removed, h.Rows, age, h.Consumer, h.LastSeq)
			continue
		}
		fmt.Fprintf(w, "%sheld back %d rows older than %s: consumer %s at seq %d has not consumed them\n",
			pre, h.Rows, age, h.Consumer, h.LastSeq)
	}
	if r.Stopped != "" {
		fmt.Fprintf(w, "%skept %s\n", pre, r.Stopped)
	}
	if len(r.Dropped) == 0 && r.Deleted == nil {
		fmt.Fprintf(w, "%snothing to prune\n", pre)
	} else {
		fmt.Fprintf(w, "%s%s %d partitions and %d rows in all\n", pre, will("removed", "remove"), len(r.Dropped), r.RowsRemoved())
	}
}

// shortDuration prints 720h rather than 720h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

type partitionsOpts struct{ exact bool }

func outboxPartitionsCommand() *cli.Command {
	return command[partitionsOpts]{
		Name:  "partitions",
		Usage: "list the outbox's range partitions with row counts and the ingest times of their first and last rows",
		DB:    true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "exact", Usage: "count rows (reads every row) instead of the planner's estimate"},
		},
		Options: func(c *cli.Context) (partitionsOpts, error) { return partitionsOpts{exact: c.Bool("exact")}, nil },
		Run: func(ctx context.Context, e env, o partitionsOpts) error {
			stats, err := outbox.PartitionStats(ctx, e.Pool, o.exact)
			if err != nil {
				return err
			}
			return writePartitions(e.Out, stats)
		},
	}.build()
}

// writePartitions prints one line per partition: "~" marks an estimated row
// count, "?" an unknown one, "-" the first and last rows of an empty partition.
func writePartitions(w io.Writer, stats []outbox.PartitionStat) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
}
