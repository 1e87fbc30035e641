package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relaysync"
	"github.com/kukuri/communitynode/internal/storerules"
)

// syncOpts are sync's options.
type syncOpts struct {
	url       string
	filter    nostr.Filter
	direction relaysync.Direction
	timeout   time.Duration
	progress  time.Duration
	maxEvents int
	rules     storerules.Config
}

func syncCommand() *cli.Command {
	return command[syncOpts]{
		Name:  "sync",
		Usage: "reconcile this node with another relay over NIP-77 and move the missing events",
		Description: "Finds, with NIP-77 negentropy, which events of --filter (those an unauthenticated reader may\n" +
			"see) only this node or only the relay at --relay has. down stores the relay's missing events\n" +
			"here through the relay's own checks and store path (as cnctl import: signatures, topic rules,\n" +
			"bans, NIP-09, NIP-40); up publishes ours to it as EVENTs. Every wait for the relay is bounded\n" +
			"by --timeout, so a relay without NIP-77 ends the sync with an error. Progress lines go to stderr\n" +
			"(at most one per --progress-every), a summary to stdout.",
		DB: true,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "relay", Required: true, Usage: "the other relay (ws:// or wss://)"},
			&cli.StringFlag{Name: "filter", Value: "{}", Usage: "NIP-01 filter (JSON) of the events to reconcile; limit is ignored"},
			&cli.StringFlag{Name: "direction", Value: string(relaysync.Down), Usage: "down (store theirs here), up (publish ours there) or both"},
			&cli.DurationFlag{Name: "timeout", Value: 15 * time.Second, Usage: "longest wait for each answer of the relay (other messages it sends meanwhile do not extend it)"},
			&cli.DurationFlag{Name: "progress-every", Value: time.Second, Usage: "least time between two progress lines on stderr"},
			&cli.IntFlag{Name: "max-sync-events", Value: relay.DefaultConfig().MaxSyncEvents, Usage: "most local events the reconciliation covers (the relay's default limit)"},
		}, storerules.Flags()...),
		Options: syncOptions,
		Run:     runSync,
	}.build()
}

func syncOptions(c *cli.Context) (syncOpts, error) {
	rules, err := storerules.FromFlags(c)
	if err != nil {
		return syncOpts{}, err
	}
	limits := rules.Limits(protocol.DefaultLimits())
	o := syncOpts{url: c.String("relay"), timeout: c.Duration("timeout"), progress: c.Duration("progress-every"), maxEvents: c.Int("max-sync-events"), rules: rules}
	if !strings.HasPrefix(o.url, "ws://") && !strings.HasPrefix(o.url, "wss://") {
		return syncOpts{}, fmt.Errorf("--relay %q: want a ws:// or wss:// URL", o.url)
	}
	if o.direction, err = relaysync.ParseDirection(c.String("direction")); err != nil {
		return syncOpts{}, err
	}
	msg, err := protocol.ParseClientMessage([]byte(`["REQ","sync",`+c.String("filter")+`]`), limits)
	if err != nil || len(msg.Filters) != 1 {
		return syncOpts{}, fmt.Errorf("--filter: %v", err)
	}
	o.filter = msg.Filters[0]
	if o.filter.Search != "" {
		return syncOpts{}, errors.New("--filter: search filters cannot be synced")
	}
	if o.timeout <= 0 || o.progress <= 0 || o.maxEvents < 1 {
		return syncOpts{}, errors.New("--timeout and --progress-every must be positive, --max-sync-events at least 1")
	}
	return o, nil
}

func runSync(ctx context.Context, e env, o syncOpts) error {
	start := time.Now()
	res, stored, err := node.Sync(ctx, node.SyncOptions{
		Pool:  e.Pool,
		Rules: o.rules,
		Sync: relaysync.Options{URL: o.url, Filter: o.filter, Direction: o.direction, Timeout: o.timeout,
			ProgressEvery: o.progress},
		MaxEvents: o.maxEvents,
		Progress:  e.Err,
		OnRefused: func(r bulk.Refusal) {
			fmt.Fprintf(e.Err, "sync: refused event %s: %s\n", r.ID, r.Reason)
		},
		Logger: e.Logger,
	})
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return writeSyncSummary(e.Out, res, stored, time.Since(start))
}

// writeSyncSummary prints one line: what the reconciliation found and what
// moved, refusals by reason.
func writeSyncSummary(w io.Writer, r relaysync.Result, st *bulk.Stats, took time.Duration) error {
	line := fmt.Sprintf("synced in %s: %d only here, %d only there (%d rounds)", took.Round(time.Millisecond), r.Have, r.Need, r.Rounds)
	if st != nil {
		line += fmt.Sprintf("; down: received %d, %s", r.Downloaded, counts(*st))
	}
	if r.Uploaded > 0 || len(r.UploadRefused) > 0 {
		refused := 0
		byReason := map[string]int64{}
		for reason, n := range r.UploadRefused {
			refused += n
			byReason[reason] = int64(n)
		}
		var parts []string
		for _, reason := range sortedReasons(byReason) {
			parts = append(parts, fmt.Sprintf("%s: %d", reason, byReason[reason]))
		}
		line += fmt.Sprintf("; up: accepted %d, refused %d", r.Uploaded, refused)
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, "; ") + ")"
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
