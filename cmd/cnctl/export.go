package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

type exportOpts struct {
	filter nostr.Filter
	output string // a file; "" or "-": standard output
}

func exportCommand() *cli.Command {
	return command[exportOpts]{
		Name:  "export",
		Usage: "write the events a REQ with a filter would return as JSON Lines (what cnctl import reads)",
		Description: "Writes every visible event (the effective version, not deleted, not expired) matching --filter,\n" +
			"one NIP-01 event per line, oldest first, from one consistent snapshot, streamed (any size).\n" +
			"Without --filter it exports the whole node. #t matches own t tags as in a REQ: replies and\n" +
			"reactions that inherit a topic are not in a #t export. A filter's limit keeps the newest events;\n" +
			"without one there is no limit. search filters are refused. It is the operator's copy: DMs (kinds 4,\n" +
			"1059) and private and deleted NIP-29 groups' events are exported too, whoever may read them on the relay.",
		DB: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "filter", Usage: `a NIP-01 filter as JSON, e.g. '{"kinds":[1],"#t":["go"]}' (default: everything)`},
			&cli.StringFlag{Name: "since", Usage: "only events created at or after this (unix seconds or RFC 3339); overrides the filter's"},
			&cli.StringFlag{Name: "until", Usage: "only events created at or before this (unix seconds or RFC 3339); overrides the filter's"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to this file instead of standard output"},
		},
		Options: func(c *cli.Context) (exportOpts, error) {
			f, err := exportFilter(c)
			return exportOpts{filter: f, output: c.String("output")}, err
		},
		Run: runExport,
	}.build()
}

func runExport(ctx context.Context, e env, o exportOpts) error {
	out := e.Out
	var file *os.File
	if o.output != "" && o.output != "-" {
		var err error
		if file, err = os.Create(o.output); err != nil {
			return err
		}
		defer func() { _ = file.Close() }()
		out = file
	}
	start := time.Now()
	n, err := bulk.Export(ctx, store.NewReader(e.Pool), o.filter, out)
	if err != nil {
		return fmt.Errorf("export after %d events: %w", n, err)
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.Err, "exported %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// exportFilter parses --filter, --since and --until into a validated filter.
func exportFilter(c *cli.Context) (nostr.Filter, error) {
	var f nostr.Filter
	if s := strings.TrimSpace(c.String("filter")); s != "" {
		if err := f.UnmarshalJSON([]byte(s)); err != nil {
			return f, fmt.Errorf("--filter is not a NIP-01 filter object: %w", err)
		}
	}
	for _, o := range []struct {
		flag string
		into **nostr.Timestamp
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.String(o.flag); v != "" {
			ts, err := parseTimestamp(v)
			if err != nil {
				return f, fmt.Errorf("--%s: %w", o.flag, err)
			}
			*o.into = &ts
		}
	}
	if f.Search != "" {
		return f, errors.New("--filter: search filters cannot be exported")
	}
	// The relay's checks of values (hex ids and authors, tag sizes) and #t
	// normalisation, without its caps on list sizes and limits.
	l := protocol.Limits{MaxTagValueBytes: protocol.DefaultLimits().MaxTagValueBytes}
	checked, reason := protocol.ValidateFilter(f, l)
	if reason != "" {
		return f, fmt.Errorf("--filter: %s", reason)
	}
	return checked, nil
}

// parseTimestamp reads unix seconds or an RFC 3339 time.
func parseTimestamp(s string) (nostr.Timestamp, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return nostr.Timestamp(n), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither unix seconds nor an RFC 3339 time", s)
	}
	return nostr.Timestamp(t.Unix()), nil
}
