package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/loadgen"
)

func benchCommand() *cli.Command {
	return group("bench", "load any NIP-01 relay: publish signed events or time REQs", benchIngestCommand(), benchReqCommand(), benchJoinCommand())
}

func benchCommonFlags(connections int) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "url", EnvVars: []string{"CN_BENCH_URL"}, Usage: "relay WebSocket URL (ws:// or wss://)"},
		&cli.IntFlag{Name: "connections", Value: connections, Usage: "concurrent WebSocket connections"},
		&cli.StringFlag{Name: "topic", Value: "bench", Usage: "value of the t tag"},
		&cli.IntFlag{Name: "kind", Value: 1, Usage: "event kind"},
		&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second,
			Usage: "give up on an answer (OK, EOSE) or a connection after this long; the connection is then dropped"},
		&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
	}
}

// benchURL returns --url (or CN_BENCH_URL), which every bench command needs.
func benchURL(c *cli.Context, cmd string) (string, error) {
	url := strings.TrimSpace(c.String("url"))
	if url == "" {
		return "", fmt.Errorf("%s: --url is required (or set CN_BENCH_URL)", cmd)
	}
	return url, nil
}

// benchLogf prefixes the engine's progress lines with the command's name.
func benchLogf(w io.Writer, cmd string) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, cmd+": "+format+"\n", args...)
	}
}

// benchReport is what every bench engine returns, R being its pointer type.
type benchReport[T any] interface {
	*T
	WriteText(w io.Writer) error
	Failed() int // how many timed operations did not complete
}

// finishBench ends a bench command the same way for every engine: no report
// means the run did not start (err says why); otherwise the report is printed
// (text or JSON) even when the run was interrupted, and the command fails when
// it was, or when rep.Failed() > 0 (failure says how, given that count).
func finishBench[T any, R benchReport[T]](e env, cmd string, asJSON bool, rep R, err error, failure func(n int) error) error {
	if rep == nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	var perr error
	if asJSON {
		perr = printJSON(e.Out, rep)
	} else {
		perr = rep.WriteText(e.Out)
	}
	if perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("%s: interrupted: %w", cmd, err)
	}
	if n := rep.Failed(); n > 0 {
		return failure(n)
	}
	return nil
}

// ingestOpts are bench ingest's options: the engine's configuration and the output form.
type ingestOpts struct {
	loadgen.IngestConfig
	json bool
}

func benchIngestCommand() *cli.Command {
	const cmd = "bench ingest"
	return command[ingestOpts]{
		Name:  "ingest",
		Usage: "publish pre-generated signed events and report events/s and OK latency",
		Description: "Generates --authors keys and --warmup + --events signed events (kind --kind, a t tag, 1-3 p tags,\n" +
			"100-300 bytes of unique content) before timing, then publishes them over --connections\n" +
			"WebSockets, each with up to --pipeline EVENTs awaiting their OK. events/s counts accepted OKs\n" +
			"over the wall time. Exits 1 if some event got no OK (timeout, dropped connection).",
		Flags: append(benchCommonFlags(16),
			&cli.IntFlag{Name: "events", Value: 20000, Usage: "timed events to publish"},
			&cli.IntFlag{Name: "authors", Value: 500, Usage: "distinct author keys"},
			&cli.IntFlag{Name: "warmup", Usage: "extra events published before the clock starts"},
			&cli.IntFlag{Name: "pipeline", Value: 1, Usage: "EVENTs in flight per connection (1: wait for each OK)"},
			&cli.StringFlag{Name: "group", Usage: "NIP-29 group id: every event gets an h tag with it (use --kind 9 for chat), and the group is created first (a fresh key posts a note in --topic, then a 9007) unless it exists"},
		),
		Options: func(c *cli.Context) (ingestOpts, error) {
			url, err := benchURL(c, cmd)
			if err != nil {
				return ingestOpts{}, err
			}
			cfg := loadgen.IngestConfig{
				URL: url, Connections: c.Int("connections"), Events: c.Int("events"), Authors: c.Int("authors"),
				Topic: c.String("topic"), Kind: c.Int("kind"), Group: c.String("group"), Warmup: c.Int("warmup"), Pipeline: c.Int("pipeline"),
				Timeout: c.Duration("timeout"), Logf: benchLogf(c.App.ErrWriter, cmd),
			}
			if err := cfg.Validate(); err != nil {
				return ingestOpts{}, fmt.Errorf("%s: %w", cmd, err)
			}
			return ingestOpts{IngestConfig: cfg, json: c.Bool("json")}, nil
		},
		Run: func(ctx context.Context, e env, o ingestOpts) error {
			rep, err := loadgen.Ingest(ctx, o.IngestConfig)
			return finishBench(e, cmd, o.json, rep, err, func(n int) error {
				return fmt.Errorf("%s: %d of %d events got no OK (%s)", cmd, n, rep.Events, rep.Errors)
			})
		},
	}.build()
}

// joinOpts are bench join's options.
type joinOpts struct {
	loadgen.JoinConfig
	json bool
}

func benchJoinCommand() *cli.Command {
	const cmd = "bench join"
	return command[joinOpts]{
		Name:  "join",
		Usage: "time NIP-29 joins: 9021 sent -> OK, -> the node's 9000 and -> the 39002 listing the joiner on a live subscription",
		Description: "Creates --group (a fresh key posts a note in --topic, then a 9007; an existing open group is used as it is),\n" +
			"subscribes to its 9000s and 39002 on one connection, then sends --warmup + --joins join requests from fresh\n" +
			"keys on another, one at a time, each waiting for its OK and for the subscriber to read the node's 9000 and\n" +
			"a 39002 naming the joiner. Exits 1 if a timed join did not complete.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"CN_BENCH_URL"}, Usage: "relay WebSocket URL (ws:// or wss://)"},
			&cli.StringFlag{Name: "group", Value: "bench-joins", Usage: "NIP-29 group id"},
			&cli.StringFlag{Name: "topic", Value: "bench", Usage: "t tag of the note that makes the group's creator a community member"},
			&cli.IntFlag{Name: "joins", Value: 500, Usage: "timed joins"},
			&cli.IntFlag{Name: "warmup", Value: 20, Usage: "joins before the clock starts"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up on an answer or a connection after this long"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		Options: func(c *cli.Context) (joinOpts, error) {
			url, err := benchURL(c, cmd)
			if err != nil {
				return joinOpts{}, err
			}
			cfg := loadgen.JoinConfig{URL: url, Joins: c.Int("joins"), Warmup: c.Int("warmup"), Group: c.String("group"),
				Topic: c.String("topic"), Timeout: c.Duration("timeout"), Logf: benchLogf(c.App.ErrWriter, cmd)}
			if err := cfg.Validate(); err != nil {
				return joinOpts{}, fmt.Errorf("%s: %w", cmd, err)
			}
			return joinOpts{JoinConfig: cfg, json: c.Bool("json")}, nil
		},
		Run: func(ctx context.Context, e env, o joinOpts) error {
			rep, err := loadgen.Joins(ctx, o.JoinConfig)
			return finishBench(e, cmd, o.json, rep, err, func(n int) error {
				return fmt.Errorf("%s: %d of %d joins did not complete (refused %s, errors %s)", cmd, n, rep.Joins, rep.Refused, rep.Errors)
			})
		},
	}.build()
}

// reqOpts are bench req's options: the engine's configuration, an authors file and the output form.
type reqOpts struct {
	loadgen.ReqConfig
	authorsFile string
	json        bool
}

func benchReqCommand() *cli.Command {
	const cmd = "bench req"
	return command[reqOpts]{
		Name:  "req",
		Usage: "time REQ -> EOSE for seven query shapes and report each one's latency",
		Description: "First asks for up to --sample recent events with #t --topic and takes ids, authors and p values\n" +
			"from them (authors from --authors-file instead, if given). Then, shape by shape, sends\n" +
			"--requests REQs over --connections WebSockets, one in flight per connection:\n" +
			"  by-id        ids:[1 sampled id]\n" +
			"  1-author     authors:[1], limit 20\n" +
			"  100-authors  authors:[up to 100], kinds:[--kind], limit 100\n" +
			"  #t           #t:[--topic], limit 50\n" +
			"  #p           #p:[1 sampled p value], limit 50\n" +
			"  #e           #e:[1 sampled id] (replies to a sampled event), limit 50\n" +
			"  kinds        kinds:[--kind], limit 50\n" +
			"With --with-topic (the default) every filter also has #t:[--topic]. CLOSED counts as an error by\n" +
			"its reason prefix. Exits 1 if some request got no EOSE.",
		Flags: append(benchCommonFlags(4),
			&cli.IntFlag{Name: "requests", Value: 2000, Usage: "requests per query shape"},
			&cli.BoolFlag{Name: "with-topic", Value: true,
				Usage: `add #t:[--topic] to every filter (--with-topic=false for relays that need no #t)`},
			&cli.StringFlag{Name: "authors-file", Usage: "query these authors (64 hex digits, one per line) instead of the sampled ones"},
			&cli.IntFlag{Name: "sample", Value: 500, Usage: "limit of the REQ that samples ids, authors and p values"},
		),
		Options: func(c *cli.Context) (reqOpts, error) {
			url, err := benchURL(c, cmd)
			if err != nil {
				return reqOpts{}, err
			}
			cfg := loadgen.ReqConfig{
				URL: url, Connections: c.Int("connections"), Requests: c.Int("requests"), Topic: c.String("topic"),
				WithTopic: c.Bool("with-topic"), Kind: c.Int("kind"), SampleLimit: c.Int("sample"),
				Timeout: c.Duration("timeout"), Logf: benchLogf(c.App.ErrWriter, cmd),
			}
			if cfg.SampleLimit < 1 {
				return reqOpts{}, fmt.Errorf("%s: --sample must be at least 1", cmd)
			}
			if err := cfg.Validate(); err != nil {
				return reqOpts{}, fmt.Errorf("%s: %w", cmd, err)
			}
			return reqOpts{ReqConfig: cfg, authorsFile: c.String("authors-file"), json: c.Bool("json")}, nil
		},
		Run: func(ctx context.Context, e env, o reqOpts) error {
			cfg := o.ReqConfig
			if o.authorsFile != "" {
				var err error
				if cfg.Authors, err = readAuthors(o.authorsFile); err != nil {
					return fmt.Errorf("%s: --authors-file: %w", cmd, err)
				}
			}
			rep, err := loadgen.Req(ctx, cfg)
			if errors.Is(err, loadgen.ErrNoSample) {
				return fmt.Errorf("%s: %s has no events with #t %q to take ids, authors and p values from; publish some first (cnctl bench ingest --topic %s)",
					cmd, cfg.URL, cfg.Topic, cfg.Topic)
			}
			return finishBench(e, cmd, o.json, rep, err, func(n int) error {
				var parts []string
				total := 0
				for _, s := range rep.Shapes {
					total += s.Requests
					if len(s.Errors.N) > 0 {
						parts = append(parts, s.Name+": "+s.Errors.String())
					}
				}
				return fmt.Errorf("%s: %d of %d requests got no EOSE (%s)", cmd, n, total, strings.Join(parts, "; "))
			})
		},
	}.build()
}

// readAuthors reads hex public keys, one per line; blank lines and
// lines starting with # are skipped.
func readAuthors(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var authors []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pk := strings.ToLower(line)
		if !nostr.IsValid32ByteHex(pk) {
			return nil, fmt.Errorf("%s line %d: %q is not a hex public key (64 hex digits)", path, n, line)
		}
		authors = append(authors, pk)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(authors) == 0 {
		return nil, fmt.Errorf("%s holds no public keys", path)
	}
	return authors, nil
}
