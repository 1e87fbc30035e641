package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/restore"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
)

type statusOpts struct {
	json            bool
	natsURL, stream string
}

func statusCommand() *cli.Command {
	return command[statusOpts]{
		Name:  "status",
		Usage: "outbox head, newcomers' pending profiles and lists, per consumer: offset, backlog, lag, active owner and dead letters; replication; anything ahead of the outbox after a restore",
		DB:    true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print {"head_seq":N,"consumers":[{"consumer","last_seq","backlog","lag_seconds","owner","dead_letters"}],"pending_identity":{"events","keys","oldest_seconds"},"replication":{...},"restore":{...},"restore_warning":"..."}`},
			&cli.StringFlag{Name: "nats-url", EnvVars: []string{"CN_NATS_URL"}, Usage: "the bridge's NATS server: also check that its stream is not ahead of the outbox"},
			&cli.StringFlag{Name: "stream", Value: node.DefaultBridgeStream, Usage: "the bridge's stream (with --nats-url)"},
		},
		Options: func(c *cli.Context) (statusOpts, error) {
			return statusOpts{json: c.Bool("json"), natsURL: c.String("nats-url"), stream: c.String("stream")}, nil
		},
		Run: func(ctx context.Context, e env, o statusOpts) error {
			st, err := consumer.ReadStatus(ctx, e.Pool)
			if err != nil {
				return err
			}
			pending, err := store.SummarizePending(ctx, e.Pool)
			if err != nil {
				return err
			}
			repl, err := readReplication(ctx, e.Pool)
			if err != nil {
				return err
			}
			rest, err := checkRestore(ctx, e.Pool, o.natsURL, o.stream, 0)
			if err != nil {
				return err
			}
			if o.json {
				return json.NewEncoder(e.Out).Encode(struct {
					consumer.Status
					Pending        store.PendingSummary `json:"pending_identity"`
					Replication    replication          `json:"replication"`
					Restore        restore.Report       `json:"restore"`
					RestoreWarning string               `json:"restore_warning,omitempty"`
				}{st, pending, repl, rest, restoreWarning(rest)})
			}
			if err := writeStatus(e, st, pending); err != nil {
				return err
			}
			if w := restoreWarning(rest); w != "" {
				fmt.Fprintln(e.Out, w)
			}
			return writeReplication(e.Out, repl)
		},
	}.build()
}

// writeStatus prints the status as text: the head, the pending identity events,
// then a table of the consumers.
func writeStatus(e env, st consumer.Status, pending store.PendingSummary) error {
	fmt.Fprintf(e.Out, "outbox head seq: %d\n", st.HeadSeq)
	fmt.Fprintf(e.Out, "pending identity events (newcomers' profiles and lists): %d from %d keys, oldest %v\n",
		pending.Events, pending.Keys, time.Duration(pending.OldestSeconds*float64(time.Second)).Round(time.Second))
	if len(st.Consumers) == 0 {
		fmt.Fprintln(e.Out, "no consumers registered")
		return nil
	}
	tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tLAST_SEQ\tBACKLOG\tLAG\tOWNER\tDEAD_LETTERS")
	for _, s := range st.Consumers {
		owner := "-"
		if s.Owner != nil {
			owner = *s.Owner
		}
		lag := (time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Millisecond)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t%d\n", s.Consumer, s.LastSeq, s.Backlog, lag, owner, s.DeadLetters)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeHalts(e, st.Consumers, "")
	return nil
}

// writeHalts prints one line per halted consumer (all when name is "", else
// only name's), with the reason its last active instance halted on.
func writeHalts(e env, consumers []consumer.ConsumerStatus, name string) {
	for _, s := range consumers {
		if s.Halted && (name == "" || s.Consumer == name) {
			fmt.Fprintf(e.Out, "%s is HALTED after seq %d: %s\n", s.Consumer, s.LastSeq, strings.Join(strings.Fields(s.HaltedReason), " "))
		}
	}
}
