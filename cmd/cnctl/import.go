package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/storerules"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// importOpts are import's options; the input it reads is opened with them
// (and closed by the scaffold when the import returns).
type importOpts struct {
	in        io.Reader
	close     func() error
	rules     storerules.Config
	dryRun    bool
	json      bool
	batchSize int
	workers   int
	progress  time.Duration
	// groups, when set, makes the import host NIP-29 groups moved or forked
	// from another relay (--group-history): see groupHistory.
	groups *store.Groups
}

func (o importOpts) Close() error { return o.close() }

func importCommand() *cli.Command {
	return command[importOpts]{
		Name:      "import",
		Usage:     "store a JSON Lines file of events (strfry export, nak) through the relay's rules",
		ArgsUsage: "[FILE|-]",
		Description: "Reads one NIP-01 event per line (FILE, or standard input for - or none), checks each as the relay\n" +
			"checks an EVENT (limits, topic rules, signature, bans and kinds from relay management, NIP-70),\n" +
			"and stores the events in file order through the relay's ingest path (topics, replaceable and\n" +
			"addressable versions, NIP-09, NIP-40, outbox rows), --batch-size events per transaction.\n" +
			"Events refused only because what they reference or their author's first post comes later in the\n" +
			"file are tried again at the end. Refused lines go to stderr with their line number and never stop\n" +
			"the import; so does a progress line every --progress. The summary goes to stdout. The rules are the\n" +
			"relay's, from the same flags and CN_RELAY_* variables (topics, default topic, limits, identity writers).",
		DB: true,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "decide everything in one transaction that is rolled back; write nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
			&cli.IntFlag{Name: "batch-size", Value: node.DefaultImportBatchSize, Usage: "events per transaction"},
			&cli.IntFlag{Name: "workers", Usage: "goroutines parsing and verifying signatures (default: one per CPU)"},
			&cli.DurationFlag{Name: "progress", Value: time.Second, Usage: "how often to print a progress line on stderr (0: never)"},
			&cli.BoolFlag{Name: "group-history", Usage: "the file holds NIP-29 groups moved or forked from another relay: store their events (no late-publication window, timeline references not checked) and sign their state with --node-key-file; see docs/groups.md"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "with --group-history: the relay's node key (the key that signs group state)"},
			&cli.StringSliceFlag{Name: "group-former-relay", Usage: "with --group-history: the pubkey (NIP-11 self) of the relay the groups come from; its 9000 and 9001 (the joins it admitted, the leaves it answered) count as this node's own"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_RELAY_ADMIN_PUBKEYS"}, Usage: "with --group-history: the relay's admins, who may do everything in every group (as in the relay)"},
		}, storerules.Flags()...),
		Options: importOptions,
		Run:     runImport,
	}.build()
}

// importOptions checks the command line, then opens the input: FILE, or
// standard input for "-" or no argument.
func importOptions(c *cli.Context) (importOpts, error) {
	if c.NArg() > 1 {
		return importOpts{}, fmt.Errorf("import takes one FILE or -, got %q", c.Args().Slice())
	}
	rules, err := storerules.FromFlags(c)
	if err != nil {
		return importOpts{}, err
	}
	o := importOpts{rules: rules, dryRun: c.Bool("dry-run"), json: c.Bool("json"),
		batchSize: c.Int("batch-size"), workers: c.Int("workers"), progress: c.Duration("progress")}
	if o.batchSize < 1 || o.workers < 0 || o.progress < 0 {
		return importOpts{}, errors.New("--batch-size must be positive, --workers and --progress not negative")
	}
	if o.groups, err = groupHistory(c); err != nil {
		return importOpts{}, err
	}
	o.in, o.close = c.App.Reader, func() error { return nil }
	if name := c.Args().First(); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return importOpts{}, failure{err}
		}
		o.in, o.close = f, f.Close
	}
	return o, nil
}

// importGCPercent is the garbage collector's target (GOGC) while cnctl import
// runs, unless GOGC is set in the environment. The import allocates per line
// (parsing, the events, their rows) and keeps little: at Go's default 100 the
// collector ran so often that 400 saved ~5-15% of cnctl's CPU per event, and
// that CPU went to the store (docs/benchmarks.md, "cnctl import without the
// waits"), for ~40 MB more RSS (112 MB against 70 MB, 50,000 lines).
const importGCPercent = 400

func runImport(ctx context.Context, e env, o importOpts) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(importGCPercent))
	}
	stderr := e.Err
	warned := map[string]bool{}
	opts := node.ImportOptions{
		Pool:      e.Pool,
		Rules:     o.rules,
		Groups:    o.groups,
		DryRun:    o.dryRun,
		BatchSize: o.batchSize,
		Workers:   o.workers,
		Logger:    e.Logger,
		OnRefused: func(r bulk.Refusal) {
			if r.ID != "" {
				fmt.Fprintf(stderr, "line %d: %s (event %s)\n", r.Line, r.Reason, r.ID)
				return
			}
			fmt.Fprintf(stderr, "line %d: %s\n", r.Line, r.Reason)
		},
		ProgressEvery: o.progress,
		OnAnalyzed: func(a store.Analyzed) {
			if a.NotOwner {
				if warned[a.Table] {
					return
				}
				warned[a.Table] = true
				fmt.Fprintf(stderr, "import: the statistics of %s are stale, but this role does not own it to analyze it: run ANALYZE as its owner\n", a.Table)
				return
			}
			fmt.Fprintf(stderr, "import: analyzed %s (%d rows changed since its statistics, took %s)\n", a.Table, a.Changed, a.Took.Round(time.Millisecond))
		},
	}
	if o.progress > 0 {
		opts.OnProgress = func(s bulk.Stats) {
			fmt.Fprintf(stderr, "import: %d lines, %.0f events/s, %s\n", s.Lines, s.EventsPerSecond, counts(s))
		}
	}
	st, err := node.Import(ctx, o.in, opts)
	if err != nil {
		fmt.Fprintf(stderr, "import stopped after line %d: %s (batches committed before stay)\n", st.Lines, counts(st))
		return fmt.Errorf("import: %w", err)
	}
	if o.json {
		return printJSON(e.Out, st)
	}
	return writeImportSummary(e.Out, st)
}

// tally is "accepted N, pending N, duplicate N, refused N".
func tally(s bulk.Stats) string {
	return fmt.Sprintf("accepted %d, pending %d, duplicate %d, refused %d", s.Accepted, s.Pending, s.Duplicates, s.Refused)
}

// counts is the tally, then the refusals by reason: "(reason: N; ...)".
func counts(s bulk.Stats) string {
	out := tally(s)
	if len(s.Reasons) == 0 {
		return out
	}
	var parts []string
	for _, r := range sortedReasons(s.Reasons) {
		parts = append(parts, fmt.Sprintf("%s: %d", r, s.Reasons[r]))
	}
	return out + " (" + strings.Join(parts, "; ") + ")"
}

// sortedReasons orders reasons by count, most frequent first, then by text.
func sortedReasons(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	return out
}

func writeImportSummary(w io.Writer, s bulk.Stats) error {
	what := "imported"
	if s.DryRun {
		what = "dry run (nothing written):"
	}
	fmt.Fprintf(w, "%s %d lines in %s (%.0f events/s): %s\n",
		what, s.Lines, s.Elapsed.Round(time.Millisecond), s.EventsPerSecond, tally(s))
	if s.Pending > 0 {
		fmt.Fprintf(w, "  pending %d: profiles and lists of authors with no post here yet; kept, not served until the author's first post (--identity-writers)\n", s.Pending)
	}
	if s.Retried > 0 {
		fmt.Fprintf(w, "retried after the file: %d (stored then: %d)\n", s.Retried, s.RetriedAccepted)
	}
	for _, r := range sortedReasons(s.Reasons) {
		fmt.Fprintf(w, "  refused %d: %s\n", s.Reasons[r], r)
	}
	switch {
	case s.DryRun:
		fmt.Fprintf(w, "would append %d outbox rows\n", s.OutboxRows)
	case s.HeadSeq > 0:
		fmt.Fprintf(w, "outbox head %d announced on %s\n", s.HeadSeq, outbox.Channel)
	}
	return nil
}

// groupHistory reads --group-history and its options. A moved or forked
// group's history is replayed through the relay's own group path
// (store.Groups, groups.Decide), with groups.Policy.History: no
// late-publication window (the events are old), timeline references not
// checked (they name events of the former relay, some never exported), and
// the node's own moderation events (the creator made admin, joins admitted,
// leaves answered) dated at their cause's created_at, so that the history's
// later events still take effect after them. Anyone may create a group here
// (the history's 9007), the former relay's key counts as the node, the
// relay's admins as admins. The imported moderation events are the state:
// a moved group keeps its admins; a forked one is then re-administered by the
// relay's admins with 9000/9001 (docs/groups.md).
func groupHistory(c *cli.Context) (*store.Groups, error) {
	if !c.Bool("group-history") {
		for _, f := range []string{"node-key-file", "group-former-relay"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s goes with --group-history", f)
			}
		}
		return nil, nil
	}
	if c.String("node-key-file") == "" {
		return nil, errors.New("--group-history needs --node-key-file: the node key signs the groups' state")
	}
	key, err := nodekey.Load(c.String("node-key-file"))
	if err != nil {
		return nil, failure{err}
	}
	admins := map[string]bool{}
	for _, flag := range []string{"group-former-relay", "admin-pubkeys"} {
		pks, err := pubkeyList(c.StringSlice(flag), "--"+flag)
		if err != nil {
			return nil, err
		}
		for _, pk := range pks {
			admins[pk] = true
		}
	}
	return &store.Groups{Sign: key.Sign, Policy: groups.Policy{Node: key.PubKey, Admins: admins,
		Creators: groups.CreatorsAny, History: true}}, nil
}
