package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/restore"
)

type afterRestoreOpts struct {
	natsURL, stream string
	atLeast         int64
	execute, json   bool
}

func outboxAfterRestoreCommand() *cli.Command {
	return command[afterRestoreOpts]{
		Name:  "after-restore",
		Usage: "after a restore or a failover to a standby that was behind: make the outbox hand out seqs above every seq the bridge's stream and the consumers have seen (a dry run unless --execute)",
		Description: "Reads the outbox head, the outbox sequence, the consumers' offsets and, with --nats-url, the last\n" +
			"message of the bridge's stream (Nats-Msg-Id = seq). Anything above the head was seen before the\n" +
			"restore; if the relay drew those seqs again, the bridge would skip the new rows (the stream already\n" +
			"holds their seqs) and remote consumers would too. --execute advances the sequence past the highest\n" +
			"seq seen (never back). Run it before the relays take events again. --at-least adds a seq seen\n" +
			"elsewhere (the highest offset of a consumer in another database).",
		DB: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nats-url", EnvVars: []string{"CN_NATS_URL"}, Usage: "the bridge's NATS server: also check its stream"},
			&cli.StringFlag{Name: "stream", Value: node.DefaultBridgeStream, Usage: "the bridge's stream"},
			&cli.Int64Flag{Name: "at-least", Usage: "a seq seen elsewhere that must not be handed out again"},
			&cli.BoolFlag{Name: "execute", Usage: "advance the sequence; without it, only report"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		Options: func(c *cli.Context) (afterRestoreOpts, error) {
			o := afterRestoreOpts{natsURL: c.String("nats-url"), stream: c.String("stream"), atLeast: c.Int64("at-least"),
				execute: c.Bool("execute"), json: c.Bool("json")}
			if o.atLeast < 0 {
				return o, fmt.Errorf("outbox after-restore: --at-least must not be negative")
			}
			return o, nil
		},
		Run: runAfterRestore,
	}.build()
}

func runAfterRestore(ctx context.Context, e env, o afterRestoreOpts) error {
	r, err := checkRestore(ctx, e.Pool, o.natsURL, o.stream, o.atLeast)
	if err != nil {
		return err
	}
	var before, after int64
	if o.execute && r.NeedsRepair() {
		if before, after, err = restore.Advance(ctx, e.Pool, r.Floor); err != nil {
			return err
		}
	}
	if o.json {
		return printJSON(e.Out, struct {
			restore.Report
			NeedsRepair bool  `json:"needs_repair"`
			Executed    bool  `json:"executed"`
			NextBefore  int64 `json:"next_seq_before,omitempty"`
			NextAfter   int64 `json:"next_seq_after,omitempty"`
		}{r, r.NeedsRepair(), o.execute && r.NeedsRepair(), before, after})
	}
	writeRestoreFindings(e.Out, r)
	switch {
	case !r.NeedsRepair():
		fmt.Fprintf(e.Out, "nothing to repair: the outbox sequence hands out %d next, above every seq seen (%d)\n", r.Next, r.Floor)
	case o.execute:
		fmt.Fprintf(e.Out, "advanced the outbox sequence: next seq %d -> %d (seqs %d..%d are never used)\n", before, after, before, after-1)
	default:
		fmt.Fprintf(e.Out, "dry run: would advance the outbox sequence: next seq %d -> %d; run again with --execute before the relays take events\n", r.Next, r.Floor+1)
	}
	return nil
}

// checkRestore runs restore.Check, with the stream when natsURL is set.
func checkRestore(ctx context.Context, pool *pgxpool.Pool, natsURL, stream string, atLeast int64) (restore.Report, error) {
	if natsURL == "" {
		return restore.Check(ctx, pool, nil, atLeast)
	}
	s, closeNATS, err := restore.OpenStream(ctx, natsURL, stream)
	if err != nil {
		return restore.Report{}, err
	}
	defer closeNATS()
	return restore.Check(ctx, pool, s, atLeast)
}

// writeRestoreFindings prints what is ahead of the outbox head, one line each.
func writeRestoreFindings(w io.Writer, r restore.Report) {
	fmt.Fprintf(w, "outbox head seq %d; the outbox sequence hands out %d next\n", r.Head, r.Next)
	for _, c := range r.Consumers {
		fmt.Fprintf(w, "consumer %s is AHEAD of the outbox head: offset %d > %d\n", c.Consumer, c.LastSeq, r.Head)
	}
	if r.Stream != "" {
		if r.StreamAhead > 0 {
			fmt.Fprintf(w, "stream %s is AHEAD of the outbox head: its last message is seq %d, %d messages above %d "+
				"(rows this database no longer has; an upsert's message holds the signed event)\n", r.Stream, r.StreamLast, r.StreamAhead, r.Head)
		} else {
			fmt.Fprintf(w, "stream %s: last message seq %d, not above the outbox head\n", r.Stream, r.StreamLast)
		}
	}
	if r.AtLeast > 0 {
		fmt.Fprintf(w, "seq seen elsewhere (--at-least): %d\n", r.AtLeast)
	}
}

// restoreWarning is cnctl status's line when something is ahead of the outbox
// head and the sequence would hand its seqs out again ("" when nothing is).
func restoreWarning(r restore.Report) string {
	if !r.NeedsRepair() {
		return ""
	}
	var what []string
	for _, c := range r.Consumers {
		what = append(what, fmt.Sprintf("consumer %s at %d", c.Consumer, c.LastSeq))
	}
	if r.StreamAhead > 0 {
		what = append(what, fmt.Sprintf("stream %s at %d", r.Stream, r.StreamLast))
	}
	return fmt.Sprintf("AHEAD OF THE OUTBOX: %s above the outbox head %d, and the outbox would hand out seq %d again: "+
		"the database was restored or failed over to an earlier point; stop the relays and run cnctl outbox after-restore --execute",
		strings.Join(what, ", "), r.Head, r.Next)
}
