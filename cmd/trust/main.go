// Command trust runs the trust-v1 consumer: a web-of-trust graph kept from the
// outbox, deterministic personalised PageRank ranks, and NIP-85 assertions
// (kind 30382) signed by a provider key. Flags (each with an environment
// variable) -> node.TrustOptions -> node.Trust until SIGINT or SIGTERM.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
)

func main() { daemon.Main(newApp) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return daemon.App("trust", "rank the community's keys (consumer trust-v1) and publish NIP-85 trusted assertions",
		stdout, stderr, []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultTrustListen, EnvVars: []string{"CN_TRUST_LISTEN"}, Usage: "address to serve /healthz, /metrics and GET /v1/trust/{pubkey} on"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Required: true, Usage: "the node's key (cnctl node-key generate); the provider key is derived from it"},
			&cli.StringFlag{Name: "provider-key-file", EnvVars: []string{"CN_TRUST_PROVIDER_KEY_FILE"}, Usage: "sign assertions with this key instead of the one derived from the node key"},
			&cli.StringSliceFlag{Name: "seeds", EnvVars: []string{"CN_TRUST_SEEDS"}, Usage: "seed pubkeys (hex or npub, comma separated), or @FILE with one per line; default: the admins, else uniform"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_TRUST_ADMIN_PUBKEYS", "CN_RELAY_ADMIN_PUBKEYS"}, Usage: "the relay's NIP-86 admins: the seeds when --seeds is not given"},
			&cli.DurationFlag{Name: "recompute-interval", Value: node.DefaultRecomputeInterval, EnvVars: []string{"CN_TRUST_RECOMPUTE_INTERVAL"}, Usage: "time between full computations (cnctl trust recompute asks for one at once)"},
			&cli.DurationFlag{Name: "publish-interval", Value: node.DefaultPublishInterval, EnvVars: []string{"CN_TRUST_PUBLISH_INTERVAL"}, Usage: "time between publishing rounds of changed assertions"},
			&cli.IntFlag{Name: "assert-min-rank", Value: node.DefaultAssertMinRank, EnvVars: []string{"CN_TRUST_ASSERT_MIN_RANK"}, Usage: "subjects ranked below this get no assertion (and lose one they had)"},
			&cli.StringFlag{Name: "name", EnvVars: []string{"CN_RELAY_NAME"}, Usage: "the node's name, shown in the provider's profile"},
			daemon.BatchSizeFlag(node.DefaultTrustBatchSize, "CN_TRUST_BATCH_SIZE", "outbox rows per graph transaction"),
		},
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := trustOptions(c)
			if err != nil {
				return err
			}
			o.Logger = logger
			o.Reload = daemon.NewSource(c, trustLive, trustOptions)
			return node.Trust(c.Context, o)
		})
}

// trustLive are the flags a configuration reload (SIGHUP) applies to the
// running trust (trust.Scheduler.SetPolicy): the seeds (and the admins, the
// seeds when --seeds is not given), the intervals and the assertion cutoff.
// Every other flag needs a restart.
var trustLive = daemon.NewLive("log-level", "seeds", "admin-pubkeys", "recompute-interval", "publish-interval", "assert-min-rank")

// trustOptions maps the flags onto the trust's options and validates them, at
// start and at each reload.
func trustOptions(c *cli.Context) (node.TrustOptions, error) {
	if n := c.Int("assert-min-rank"); n < 1 || n > 100 {
		return node.TrustOptions{}, fmt.Errorf("--assert-min-rank: want 1-100, got %d", n)
	}
	if c.Duration("recompute-interval") < time.Second || c.Duration("publish-interval") < 100*time.Millisecond {
		return node.TrustOptions{}, fmt.Errorf("--recompute-interval must be at least 1s and --publish-interval at least 100ms")
	}
	seeds, err := pubkeys(c.StringSlice("seeds"), "--seeds")
	if err != nil {
		return node.TrustOptions{}, err
	}
	admins, err := pubkeys(c.StringSlice("admin-pubkeys"), "--admin-pubkeys")
	if err != nil {
		return node.TrustOptions{}, err
	}
	key, err := nodekey.Load(c.String("node-key-file"))
	if err != nil {
		return node.TrustOptions{}, err
	}
	var provider nodekey.Key
	if f := c.String("provider-key-file"); f != "" {
		if provider, err = nodekey.Load(f); err != nil {
			return node.TrustOptions{}, err
		}
	}
	return node.TrustOptions{
		DatabaseURL:       c.String("database-url"),
		Listen:            c.String("listen"),
		ReusePort:         c.Bool("reuse-port"),
		NodeKey:           key,
		ProviderKey:       provider,
		Seeds:             seeds,
		Admins:            admins,
		RecomputeInterval: c.Duration("recompute-interval"),
		PublishInterval:   c.Duration("publish-interval"),
		AssertMinRank:     c.Int("assert-min-rank"),
		NodeName:          c.String("name"),
		BatchSize:         c.Int("batch-size"),
		// Logger:            logger,
	}, nil
}

// pubkeys parses hex or npub values; "@FILE" reads one per line (# comments).
func pubkeys(vals []string, flag string) ([]string, error) {
	var out []string
	for _, v := range vals {
		if file, ok := strings.CutPrefix(v, "@"); ok {
			raw, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", flag, err)
			}
			var lines []string
			for _, l := range strings.Split(string(raw), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			more, err := pubkeys(lines, flag)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
			continue
		}
		pk, err := protocol.ParsePubkey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", flag, v, err)
		}
		out = append(out, pk)
	}
	return out, nil
}
