package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "outbox head and, per consumer, offset, backlog, lag, active owner and dead letters",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.BoolFlag{Name: "json", Usage: `print {"head_seq":N,"consumers":[{"consumer","last_seq","backlog","lag_seconds","owner","dead_letters"}]}`},
		},
		Action: func(c *cli.Context) error {
			conn, err := connect(c)
			if err != nil {
				return err
			}
			defer closeConn(c.Context, conn)
			st, err := consumer.ReadStatus(c.Context, conn)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				return enc.Encode(st)
			}
			fmt.Fprintf(c.App.Writer, "outbox head seq: %d\n", st.HeadSeq)
			if len(st.Consumers) == 0 {
				fmt.Fprintln(c.App.Writer, "no consumers registered")
				return nil
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CONSUMER\tLAST_SEQ\tBACKLOG\tLAG\tOWNER\tDEAD_LETTERS")
			for _, s := range st.Consumers {
				owner := "-"
				if s.Owner != nil {
					owner = *s.Owner
				}
				lag := (time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Millisecond)
				fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t%d\n", s.Consumer, s.LastSeq, s.Backlog, lag, owner, s.DeadLetters)
			}
			return tw.Flush()
		},
	}
}

func resetOffsetCommand() *cli.Command {
	return &cli.Command{
		Name:  "reset-offset",
		Usage: "move a consumer's offset to replay or skip rows (a dry run unless --execute)",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "consumer", Required: true, Usage: "consumer name, e.g. index-v1"},
			&cli.Int64Flag{Name: "to-seq", Usage: "resume after this seq (0 replays everything retained)"},
			&cli.StringFlag{Name: "to-time", Usage: "resume at the first row ingested at or after this RFC 3339 time"},
			&cli.BoolFlag{Name: "to-earliest", Usage: "replay every retained row"},
			&cli.BoolFlag{Name: "to-latest", Usage: "skip everything up to the current head"},
			&cli.BoolFlag{Name: "execute", Usage: "apply the reset (default: only show it)"},
			&cli.BoolFlag{Name: "force", Usage: "reset even while an instance is active (it reloads the offset)"},
		},
		Action: func(c *cli.Context) error {
			target, err := resetTarget(c)
			if err != nil {
				return usageError{err}
			}
			pool, err := connectPool(c)
			if err != nil {
				return err
			}
			defer pool.Close()
			name := c.String("consumer")
			plan, err := consumer.PlanReset(c.Context, pool, name, target)
			if err != nil {
				return err
			}
			out := c.App.Writer
			for _, w := range plan.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", w)
			}
			verb := "would move"
			if c.Bool("execute") {
				verb = "moving"
			}
			switch {
			case plan.To < plan.From:
				fmt.Fprintf(out, "%s %s from seq %d to %d: %d retained rows will be applied again\n", verb, name, plan.From, plan.To, plan.Replay)
			case plan.To > plan.From:
				fmt.Fprintf(out, "%s %s from seq %d to %d: %d rows will be skipped and never applied\n", verb, name, plan.From, plan.To, plan.Skip)
			default:
				fmt.Fprintf(out, "%s is already at seq %d: nothing to do\n", name, plan.From)
				return nil
			}
			if plan.Owner != nil {
				fmt.Fprintf(out, "%s is active (owner %s)\n", name, *plan.Owner)
			}
			if !c.Bool("execute") {
				fmt.Fprintln(out, "dry run: nothing changed (add --execute)")
				return nil
			}
			if err := consumer.ExecuteReset(c.Context, pool, plan, c.Bool("force"), whoAmI()); err != nil {
				return err
			}
			fmt.Fprintf(out, "done: %s now resumes after seq %d\n", name, plan.To)
			return nil
		},
	}
}

func resetTarget(c *cli.Context) (consumer.ResetTarget, error) {
	var t consumer.ResetTarget
	n := 0
	if c.IsSet("to-seq") {
		n++
		seq := c.Int64("to-seq")
		if seq < 0 {
			return t, fmt.Errorf("--to-seq %d is negative", seq)
		}
		t.Seq = &seq
	}
	if c.IsSet("to-time") {
		n++
		at, err := time.Parse(time.RFC3339, c.String("to-time"))
		if err != nil {
			return t, fmt.Errorf("--to-time: want RFC 3339 like 2026-11-01T00:00:00Z: %w", err)
		}
		t.Time = &at
	}
	if c.Bool("to-earliest") {
		n++
		t.Earliest = true
	}
	if c.Bool("to-latest") {
		n++
		t.Latest = true
	}
	if n != 1 {
		return t, errors.New("give exactly one of --to-seq, --to-time, --to-earliest, --to-latest")
	}
	return t, nil
}

func dlqCommand() *cli.Command {
	consumerFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "consumer", Required: true, Usage: "consumer name, e.g. index-v1"}
	}
	seqFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "seq", Usage: "comma-separated seqs of parked rows (default: --all)"}
	}
	allFlag := func() cli.Flag { return &cli.BoolFlag{Name: "all", Usage: "every parked row of the consumer"} }
	return &cli.Command{
		Name:  "dlq",
		Usage: "list, retry or drop rows a consumer parked",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list parked rows, oldest first",
				Flags: []cli.Flag{databaseURLFlag(), consumerFlag(),
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many rows"},
					&cli.BoolFlag{Name: "json", Usage: "one JSON object per line"}},
				Action: func(c *cli.Context) error {
					if c.Int("limit") <= 0 {
						return usageError{fmt.Errorf("--limit must be positive")}
					}
					conn, err := connect(c)
					if err != nil {
						return err
					}
					defer closeConn(c.Context, conn)
					dls, err := consumer.ListDeadLetters(c.Context, conn, c.String("consumer"), c.Int("limit"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						for _, d := range dls {
							if err := enc.Encode(d); err != nil {
								return err
							}
						}
						return nil
					}
					if len(dls) == 0 {
						fmt.Fprintf(c.App.Writer, "no parked rows for %s\n", c.String("consumer"))
						return nil
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "SEQ\tOP\tEVENT_ID\tATTEMPTS\tPARKED_AT\tRETRY\tERROR")
					for _, d := range dls {
						retry := "-"
						if d.RetryRequestedAt != nil {
							retry = "requested"
						}
						fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", d.Seq, d.Op, d.EventID, d.Attempts,
							d.ParkedAt.UTC().Format(time.RFC3339), retry, strings.Join(strings.Fields(d.Error), " "))
					}
					return tw.Flush()
				},
			},
			{
				Name:  "retry",
				Usage: "mark parked rows for the running consumer to apply again",
				Flags: []cli.Flag{databaseURLFlag(), consumerFlag(), seqFlag(), allFlag()},
				Action: func(c *cli.Context) error {
					return dlqChange(c, "marked for retry (the running consumer applies them when idle)", consumer.RequestRetry)
				},
			},
			{
				Name:  "drop",
				Usage: "delete parked rows for good",
				Flags: []cli.Flag{databaseURLFlag(), consumerFlag(), seqFlag(), allFlag()},
				Action: func(c *cli.Context) error {
					return dlqChange(c, "dropped", consumer.DropDeadLetters)
				},
			},
		},
	}
}

// dlqChange applies a dead-letter change to the rows --seq or --all names.
func dlqChange(c *cli.Context, what string, change func(context.Context, outbox.Querier, string, []int64) (int64, error)) error {
	seqs, err := parseSeqs(c)
	if err != nil {
		return usageError{err}
	}
	conn, err := connect(c)
	if err != nil {
		return err
	}
	defer closeConn(c.Context, conn)
	n, err := change(c.Context, conn, c.String("consumer"), seqs)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%d parked rows of %s %s\n", n, c.String("consumer"), what)
	if len(seqs) > 0 && n < int64(len(seqs)) {
		return fmt.Errorf("%d of the %d seqs given are not parked rows of %s", int64(len(seqs))-n, len(seqs), c.String("consumer"))
	}
	return nil
}

// parseSeqs reads --seq / --all; exactly one must be given.
func parseSeqs(c *cli.Context) ([]int64, error) {
	if c.IsSet("seq") == c.Bool("all") {
		return nil, errors.New("give --seq N[,N...] or --all")
	}
	if c.Bool("all") {
		return nil, nil
	}
	var seqs []int64
	for _, f := range strings.Split(c.String("seq"), ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--seq: %q is not a positive seq", f)
		}
		seqs = append(seqs, n)
	}
	return seqs, nil
}

// connectPool opens a small pool (for operations that run their own transactions).
func connectPool(c *cli.Context) (*pgxpool.Pool, error) {
	url := databaseURL(c)
	if url == "" {
		return nil, usageError{errors.New("no database: set DATABASE_URL or --database-url")}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("bad database URL: %w", err)}
	}
	cfg.MaxConns = 4 // reindex: a lock, a snapshot and a writer at once
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(c.Context, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(c.Context); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// whoAmI names the operator for the reset log: user@host.
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
