package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func importCommand() *cli.Command {
	l := protocol.DefaultLimits()
	return &cli.Command{
		Name:      "import",
		Usage:     "store a JSON Lines file of events (strfry export, nak) through the relay's rules",
		ArgsUsage: "[FILE|-]",
		Description: "Reads one NIP-01 event per line (FILE, or standard input for - or none), checks each as the relay\n" +
			"checks an EVENT (limits, topic rules, signature, bans and kinds from relay management, NIP-70),\n" +
			"and stores the events in file order through the relay's ingest path (topics, replaceable and\n" +
			"addressable versions, NIP-09, NIP-40, outbox rows), --batch-size events per transaction.\n" +
			"Events refused only because what they reference or their author's first post comes later in the\n" +
			"file are tried again at the end. Refused lines go to stderr with their line number and never stop\n" +
			"the import; so does a progress line every --progress. The summary goes to stdout. Pass the same\n" +
			"topic and limit settings as the relay (the CN_RELAY_* variables are read).",
		Flags: append([]cli.Flag{
			databaseURLFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "decide everything in one transaction that is rolled back; write nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
			&cli.IntFlag{Name: "batch-size", Value: bulk.DefaultBatchSize, Usage: "events per transaction"},
			&cli.IntFlag{Name: "workers", Usage: "goroutines parsing and verifying signatures (default: one per CPU)"},
			&cli.DurationFlag{Name: "progress", Value: time.Second, Usage: "how often to print a progress line on stderr (0: never)"},
		}, relayRuleFlags(l)...),
		Action: runImport,
	}
}

// relayRuleFlags are the relay's flags that decide which events it stores, with
// the same names, defaults and environment variables as `relay --help`.
func relayRuleFlags(l protocol.Limits) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-message-bytes", Value: l.MaxMessageBytes, EnvVars: []string{"CN_RELAY_MAX_MESSAGE_BYTES"}, Usage: "largest client message (an imported line plus 10 bytes)"},
		&cli.IntFlag{Name: "max-content-bytes", Value: l.MaxContentBytes, EnvVars: []string{"CN_RELAY_MAX_CONTENT_BYTES"}, Usage: "largest event content"},
		&cli.IntFlag{Name: "max-tags", Value: l.MaxTags, EnvVars: []string{"CN_RELAY_MAX_TAGS"}, Usage: "most tags per event"},
		&cli.BoolFlag{Name: "require-topic", Value: l.RequireTopic, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC"}, Usage: "refuse events that have no topic, own or inherited"},
		&cli.StringFlag{Name: "identity-writers", Value: string(l.IdentityWriters), EnvVars: []string{"CN_RELAY_IDENTITY_WRITERS"}, Usage: "who may publish profiles and lists: members or any"},
		&cli.StringSliceFlag{Name: "allowed-topics", EnvVars: []string{"CN_RELAY_ALLOWED_TOPICS"}, Usage: "the only topics accepted (comma separated; default: all)"},
	}
}

// relayLimits maps relayRuleFlags onto the relay's default limits.
func relayLimits(c *cli.Context) (protocol.Limits, error) {
	l := protocol.DefaultLimits()
	l.MaxMessageBytes = c.Int("max-message-bytes")
	l.MaxContentBytes = c.Int("max-content-bytes")
	l.MaxTags = c.Int("max-tags")
	l.RequireTopic = c.Bool("require-topic")
	w, err := protocol.ParseIdentityWriters(c.String("identity-writers"))
	if err != nil {
		return l, usageError{err}
	}
	l.IdentityWriters = w
	if topics := c.StringSlice("allowed-topics"); len(topics) > 0 {
		l.AllowedTopics = map[string]bool{}
		for _, t := range topics {
			if n := protocol.NormalizeTopic(t); n != "" {
				l.AllowedTopics[n] = true
			}
		}
	}
	if err := l.Validate(); err != nil {
		return l, usageError{err}
	}
	return l, nil
}

func runImport(c *cli.Context) error {
	if err := flagsFirst(c); err != nil {
		return err
	}
	if c.NArg() > 1 {
		return usageError{fmt.Errorf("import takes one FILE or -, got %q", c.Args().Slice())}
	}
	limits, err := relayLimits(c)
	if err != nil {
		return err
	}
	if c.Int("batch-size") < 1 || c.Int("workers") < 0 || c.Duration("progress") < 0 {
		return usageError{errors.New("--batch-size must be positive, --workers and --progress not negative")}
	}
	in, closeIn, err := openInput(c)
	if err != nil {
		return err
	}
	defer closeIn()
	pool, err := openPool(c)
	if err != nil {
		return err
	}
	defer pool.Close()
	policy, err := relayadmin.Load(c.Context, pool)
	if err != nil {
		return err
	}

	// The writer keeps outbox partitions ahead and announces commits while the
	// import runs; the importer announces the final head itself.
	writer := outbox.NewWriter(pool, outbox.WriterConfig{Logger: textLogger(c)})
	wctx, stopWriter := context.WithCancel(c.Context)
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.Run(wctx) }()
	defer func() {
		stopWriter()
		<-writerDone
	}()

	stderr := c.App.ErrWriter
	warned := map[string]bool{}
	im := &bulk.Importer{
		Store:     store.New(pool, writer, limits.TopicRules),
		Pool:      pool,
		Limits:    limits,
		Policy:    policy,
		DryRun:    c.Bool("dry-run"),
		BatchSize: c.Int("batch-size"),
		Workers:   c.Int("workers"),
		OnRefused: func(r bulk.Refusal) {
			if r.ID != "" {
				fmt.Fprintf(stderr, "line %d: %s (event %s)\n", r.Line, r.Reason, r.ID)
				return
			}
			fmt.Fprintf(stderr, "line %d: %s\n", r.Line, r.Reason)
		},
		ProgressEvery: c.Duration("progress"),
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
	if c.Duration("progress") > 0 {
		im.OnProgress = func(s bulk.Stats) {
			fmt.Fprintf(stderr, "import: %d lines, %.0f events/s, %s\n", s.Lines, s.EventsPerSecond, counts(s))
		}
	}
	st, err := im.Run(c.Context, in)
	if err != nil {
		fmt.Fprintf(stderr, "import stopped after line %d: %s (batches committed before stay)\n", st.Lines, counts(st))
		return fmt.Errorf("import: %w", err)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeImportSummary(c.App.Writer, st)
}

// counts is "accepted N, duplicate N, refused N (reason N, ...)".
func counts(s bulk.Stats) string {
	out := fmt.Sprintf("accepted %d, duplicate %d, refused %d", s.Accepted, s.Duplicates, s.Refused)
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
	fmt.Fprintf(w, "%s %d lines in %s (%.0f events/s): accepted %d, duplicate %d, refused %d\n",
		what, s.Lines, s.Elapsed.Round(time.Millisecond), s.EventsPerSecond, s.Accepted, s.Duplicates, s.Refused)
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

// openInput opens FILE, or standard input for "-" or no argument.
func openInput(c *cli.Context) (io.Reader, func(), error) {
	name := c.Args().First()
	if name == "" || name == "-" {
		return c.App.Reader, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

// openPool opens the node's pool with its session defaults (dbpool.Open).
func openPool(c *cli.Context) (*pgxpool.Pool, error) {
	url := databaseURL(c)
	if url == "" {
		return nil, usageError{errors.New("no database: set DATABASE_URL or --database-url")}
	}
	if _, err := pgxpool.ParseConfig(url); err != nil {
		return nil, usageError{fmt.Errorf("bad database URL: %w", err)}
	}
	return dbpool.Open(c.Context, url)
}
