package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/trust"
)

type recomputeOpts struct {
	wait    bool
	timeout time.Duration
	asOf    *int64 // nil: the daemon's clock
}

type trustShowOpts struct {
	pubkey string
	json   bool
}

func trustCommand() *cli.Command {
	return group("trust", "the trust-v1 ranks: ask for a full recompute, show a key's scores and why",
		command[recomputeOpts]{
			Name:  "recompute",
			Usage: "ask the trust daemon for a full computation now; --wait until it is done",
			DB:    true,
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "wait", Usage: "wait for the run and print it"},
				&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "with --wait: give up after this long"},
				&cli.Int64Flag{Name: "as-of", Usage: "unix time the report decay is computed at (default: the daemon's clock)"},
			},
			Options: func(c *cli.Context) (recomputeOpts, error) {
				o := recomputeOpts{wait: c.Bool("wait"), timeout: c.Duration("timeout")}
				if c.IsSet("as-of") {
					v := c.Int64("as-of")
					o.asOf = &v
				}
				return o, nil
			},
			Run: recompute,
		}.build(),
		command[trustShowOpts]{
			Name:      "show",
			Usage:     "a key's rank, risk, NIP-85 counts, and why: top followers by rank, muters, reporters",
			ArgsUsage: "PUBKEY",
			DB:        true,
			Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
			Options: func(c *cli.Context) (trustShowOpts, error) {
				if c.NArg() != 1 {
					return trustShowOpts{}, errors.New("show needs one pubkey (hex or npub)")
				}
				pk, err := protocol.ParsePubkey(c.Args().First())
				return trustShowOpts{pubkey: pk, json: c.Bool("json")}, err
			},
			Run: func(ctx context.Context, e env, o trustShowOpts) error {
				var s *trust.Subject
				err := pgx.BeginTxFunc(ctx, e.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
					var err error
					s, err = trust.Explain(ctx, tx, o.pubkey, true)
					return err
				})
				if err != nil {
					return err
				}
				if o.json {
					return printJSON(e.Out, s)
				}
				return printSubject(e.Out, s)
			},
		}.build(),
	)
}

// recompute files a request for the trust daemon and, with --wait, polls
// until a run has served it.
func recompute(ctx context.Context, e env, o recomputeOpts) error {
	var id int64
	if err := e.Pool.QueryRow(ctx, `INSERT INTO cn_trust.requests (requested_by, as_of) VALUES ($1, $2) RETURNING id`,
		whoAmI(), o.asOf).Scan(&id); err != nil {
		return fmt.Errorf("request a recompute: %w", err)
	}
	if !o.wait {
		fmt.Fprintf(e.Out, "recompute requested (request %d); the trust daemon takes it within a second\n", id)
		return nil
	}
	deadline := time.Now().Add(o.timeout)
	for {
		var runID *int64
		if err := e.Pool.QueryRow(ctx, `SELECT run_id FROM cn_trust.requests WHERE id = $1`, id).Scan(&runID); err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		if runID != nil {
			tx, err := e.Pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx)
			run, err := trust.LatestRun(ctx, tx)
			if err != nil || run == nil {
				return fmt.Errorf("read run %d: %v", *runID, err)
			}
			return printRun(e.Out, run)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no run served request %d within %s: is cmd/trust running?", id, o.timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func printRun(w io.Writer, r *trust.Computation) error {
	fmt.Fprintf(w, "run %d: snapshot seq %d, as_of %d, seeds %s, %d subjects, %d edges, %d iterations (residual %.3g), %d changed, load %d ms, compute %d ms\n",
		r.ID, r.SnapshotSeq, r.AsOf, r.SeedsSource, r.Subjects, r.Edges, r.Iterations, r.Residual, r.Changed, r.LoadMS, r.ComputeMS)
	return nil
}

func printSubject(out io.Writer, s *trust.Subject) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
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
