package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/trust"
)

func trustCommand() *cli.Command {
	return &cli.Command{
		Name:  "trust",
		Usage: "the trust-v1 ranks: ask for a full recompute, show a key's scores and why",
		Subcommands: []*cli.Command{
			{
				Name:  "recompute",
				Usage: "ask the trust daemon for a full computation now; --wait until it is done",
				Flags: []cli.Flag{databaseURLFlag(),
					&cli.BoolFlag{Name: "wait", Usage: "wait for the run and print it"},
					&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "with --wait: give up after this long"},
					&cli.Int64Flag{Name: "as-of", Usage: "unix time the report decay is computed at (default: the daemon's clock)"},
				},
				Action: func(c *cli.Context) error {
					if err := flagsFirst(c); err != nil {
						return err
					}
					if c.Args().Present() {
						return usageError{errors.New("recompute takes no arguments")}
					}
					pool, err := connectPool(c)
					if err != nil {
						return err
					}
					defer pool.Close()
					var asOf *int64
					if c.IsSet("as-of") {
						v := c.Int64("as-of")
						asOf = &v
					}
					var id int64
					if err := pool.QueryRow(c.Context, `INSERT INTO cn_trust.requests (requested_by, as_of) VALUES ($1, $2) RETURNING id`,
						whoAmI(), asOf).Scan(&id); err != nil {
						return fmt.Errorf("request a recompute: %w", err)
					}
					if !c.Bool("wait") {
						fmt.Fprintf(c.App.Writer, "recompute requested (request %d); the trust daemon takes it within a second\n", id)
						return nil
					}
					deadline := time.Now().Add(c.Duration("timeout"))
					for {
						var runID *int64
						if err := pool.QueryRow(c.Context, `SELECT run_id FROM cn_trust.requests WHERE id = $1`, id).Scan(&runID); err != nil {
							return fmt.Errorf("read request: %w", err)
						}
						if runID != nil {
							tx, err := pool.Begin(c.Context)
							if err != nil {
								return err
							}
							defer tx.Rollback(c.Context)
							run, err := trust.LatestRun(c.Context, tx)
							if err != nil || run == nil {
								return fmt.Errorf("read run %d: %v", *runID, err)
							}
							return printRun(c, run)
						}
						if time.Now().After(deadline) {
							return fmt.Errorf("no run served request %d within %s: is cmd/trust running?", id, c.Duration("timeout"))
						}
						select {
						case <-c.Context.Done():
							return c.Context.Err()
						case <-time.After(200 * time.Millisecond):
						}
					}
				},
			},
			{
				Name:      "show",
				Usage:     "a key's rank, risk, NIP-85 counts, and why: top followers by rank, muters, reporters",
				ArgsUsage: "PUBKEY",
				Flags:     []cli.Flag{databaseURLFlag(), &cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: func(c *cli.Context) error {
					if err := flagsFirst(c); err != nil {
						return err
					}
					if c.NArg() != 1 {
						return usageError{errors.New("show needs one pubkey (hex or npub)")}
					}
					pk, err := trust.ParsePubkey(c.Args().First())
					if err != nil {
						return usageError{err}
					}
					pool, err := connectPool(c)
					if err != nil {
						return err
					}
					defer pool.Close()
					var s *trust.Subject
					err = pgx.BeginTxFunc(c.Context, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
						var err error
						s, err = trust.Explain(c.Context, tx, pk, true)
						return err
					})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						enc.SetIndent("", "  ")
						return enc.Encode(s)
					}
					return printSubject(c, s)
				},
			},
		},
	}
}

func printRun(c *cli.Context, r *trust.Computation) error {
	fmt.Fprintf(c.App.Writer, "run %d: snapshot seq %d, as_of %d, seeds %s, %d subjects, %d edges, %d iterations (residual %.3g), %d changed, load %d ms, compute %d ms\n",
		r.ID, r.SnapshotSeq, r.AsOf, r.SeedsSource, r.Subjects, r.Edges, r.Iterations, r.Residual, r.Changed, r.LoadMS, r.ComputeMS)
	return nil
}

func printSubject(c *cli.Context, s *trust.Subject) error {
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "pubkey\t%s\n", s.Pubkey)
	fmt.Fprintf(w, "rank\t%d\t(score %.6g)\n", s.Rank, s.Score)
	fmt.Fprintf(w, "risk\t%.4g\n", s.Risk)
	names := make([]string, 0, len(s.Counts))
	for k := range s.Counts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "%s\t%d\n", k, s.Counts[k])
	}
	if s.FirstAt != nil {
		fmt.Fprintf(w, "first_created_at\t%d\n", *s.FirstAt)
	}
	for typ, n := range s.Reports {
		fmt.Fprintf(w, "reports (%s)\t%d\n", typ, n)
	}
	if s.Assert != nil {
		fmt.Fprintf(w, "assertion\t%s\n", *s.Assert)
	}
	if s.Run != nil {
		fmt.Fprintf(w, "as of run\t%d (snapshot seq %d, as_of %d)\n", s.Run.ID, s.Run.SnapshotSeq, s.Run.AsOf)
	} else {
		fmt.Fprintf(w, "as of run\tnone yet\n")
	}
	if e := s.Explains; e != nil {
		for _, part := range []struct {
			name string
			list []trust.Ranked
		}{{"followed by", e.TopFollowers}, {"muted by", e.Muters}, {"reported by", e.Reporters}} {
			for _, r := range part.list {
				fmt.Fprintf(w, "%s\t%s\trank %s\n", part.name, r.Pubkey, strconv.Itoa(r.Rank))
			}
		}
	}
	return w.Flush()
}
