package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// This file holds the operator's controls of consumers: reset-offset and dlq.

type resetOpts struct {
	consumer       string
	target         consumer.ResetTarget
	execute, force bool
}

func resetOffsetCommand() *cli.Command {
	return command[resetOpts]{
		Name:  "reset-offset",
		Usage: "move a consumer's offset to replay or skip rows (a dry run unless --execute)",
		DB:    true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "consumer", Required: true, Usage: "consumer name, e.g. index-v1"},
			&cli.Int64Flag{Name: "to-seq", Usage: "resume after this seq (0 replays everything retained)"},
			&cli.StringFlag{Name: "to-time", Usage: "resume at the first row ingested at or after this RFC 3339 time"},
			&cli.BoolFlag{Name: "to-earliest", Usage: "replay every retained row"},
			&cli.BoolFlag{Name: "to-latest", Usage: "skip everything up to the current head"},
			&cli.BoolFlag{Name: "execute", Usage: "apply the reset (default: only show it)"},
			&cli.BoolFlag{Name: "force", Usage: "reset even while an instance is active (it reloads the offset)"},
		},
		Options: func(c *cli.Context) (resetOpts, error) {
			target, err := resetTarget(c)
			return resetOpts{consumer: c.String("consumer"), target: target, execute: c.Bool("execute"), force: c.Bool("force")}, err
		},
		Run: resetOffset,
	}.build()
}

func resetOffset(ctx context.Context, e env, o resetOpts) error {
	plan, err := consumer.PlanReset(ctx, e.Pool, o.consumer, o.target)
	if err != nil {
		return err
	}
	if plan.Requested > plan.Head {
		fmt.Fprintf(e.Err, "warning: seq %d is beyond the outbox head %d: rows appended until then will be skipped\n", plan.Requested, plan.Head)
	}
	if plan.Clamped {
		fmt.Fprintf(e.Err, "warning: seq %d is below the retention horizon %d: clamped; rows up to %d are gone from the outbox, so a full replay means rebuilding from cn_relay.events\n",
			plan.Requested, plan.Horizon, plan.Horizon)
	}
	verb := "would move"
	if o.execute {
		verb = "moving"
	}
	name := o.consumer
	switch {
	case plan.To < plan.From:
		fmt.Fprintf(e.Out, "%s %s from seq %d to %d: %d retained rows will be applied again\n", verb, name, plan.From, plan.To, plan.Replay)
	case plan.To > plan.From:
		fmt.Fprintf(e.Out, "%s %s from seq %d to %d: %d rows will be skipped and never applied\n", verb, name, plan.From, plan.To, plan.Skip)
	default:
		fmt.Fprintf(e.Out, "%s is already at seq %d: nothing to do\n", name, plan.From)
		return nil
	}
	if plan.Owner != nil {
		fmt.Fprintf(e.Out, "%s is active (owner %s)\n", name, *plan.Owner)
	}
	if !o.execute {
		fmt.Fprintln(e.Out, "dry run: nothing changed (add --execute)")
		return nil
	}
	err = consumer.ExecuteReset(ctx, e.Pool, plan, o.force, whoAmI())
	if errors.Is(err, consumer.ErrActive) {
		err = fmt.Errorf("%w (stop it, or use --force)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "done: %s now resumes after seq %d\n", name, plan.To)
	return nil
}

// resetTarget reads --to-seq, --to-time, --to-earliest and --to-latest; exactly
// one must be given.
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

type dlqListOpts struct {
	consumer string
	limit    int
	json     bool
}

// dlqChangeOpts names parked rows: seqs, or every one of the consumer's when empty.
type dlqChangeOpts struct {
	consumer string
	seqs     []int64
}

func dlqCommand() *cli.Command {
	consumerFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "consumer", Required: true, Usage: "consumer name, e.g. index-v1"}
	}
	// change is a command that changes the parked rows it names with fn and
	// says how many it did.
	change := func(name, usage, did string, fn func(context.Context, outbox.Querier, string, []int64) (int64, error)) *cli.Command {
		return command[dlqChangeOpts]{
			Name:  name,
			Usage: usage,
			DB:    true,
			Flags: []cli.Flag{consumerFlag(),
				&cli.StringFlag{Name: "seq", Usage: "comma-separated seqs of parked rows (default: --all)"},
				&cli.BoolFlag{Name: "all", Usage: "every parked row of the consumer"}},
			Options: func(c *cli.Context) (dlqChangeOpts, error) {
				seqs, err := parseSeqs(c)
				return dlqChangeOpts{consumer: c.String("consumer"), seqs: seqs}, err
			},
			Run: func(ctx context.Context, e env, o dlqChangeOpts) error { return dlqChange(ctx, e, o, did, fn) },
		}.build()
	}
	return group("dlq", "list, retry or drop rows a consumer parked",
		command[dlqListOpts]{
			Name:  "list",
			Usage: "list parked rows, oldest first",
			DB:    true,
			Flags: []cli.Flag{consumerFlag(),
				&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many rows"},
				&cli.BoolFlag{Name: "json", Usage: "one JSON object per line"}},
			Options: func(c *cli.Context) (dlqListOpts, error) {
				if c.Int("limit") <= 0 {
					return dlqListOpts{}, errors.New("--limit must be positive")
				}
				return dlqListOpts{consumer: c.String("consumer"), limit: c.Int("limit"), json: c.Bool("json")}, nil
			},
			Run: dlqList,
		}.build(),
		change("retry", "mark parked rows for the running consumer to apply again",
			"marked for retry (the running consumer applies them when idle)", consumer.RequestRetry),
		change("drop", "delete parked rows for good", "dropped", consumer.DropDeadLetters),
	)
}

func dlqList(ctx context.Context, e env, o dlqListOpts) error {
	dls, err := consumer.ListDeadLetters(ctx, e.Pool, o.consumer, o.limit)
	if err != nil {
		return err
	}
	if o.json {
		return printJSONLines(e.Out, dls)
	}
	// A consumer under the halt policy (the bridge) parks nothing: the row it
	// halted on is shown here too.
	st, err := consumer.ReadStatus(ctx, e.Pool)
	if err != nil {
		return err
	}
	defer writeHalts(e, st.Consumers, o.consumer)
	if len(dls) == 0 {
		fmt.Fprintf(e.Out, "no parked rows for %s\n", o.consumer)
		return nil
	}
	tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
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
}

// dlqChange applies a dead-letter change to the rows o names.
func dlqChange(ctx context.Context, e env, o dlqChangeOpts, what string,
	change func(context.Context, outbox.Querier, string, []int64) (int64, error)) error {
	n, err := change(ctx, e.Pool, o.consumer, o.seqs)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "%d parked rows of %s %s\n", n, o.consumer, what)
	if len(o.seqs) > 0 && n < int64(len(o.seqs)) {
		return fmt.Errorf("%d of the %d seqs given are not parked rows of %s", int64(len(o.seqs))-n, len(o.seqs), o.consumer)
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
