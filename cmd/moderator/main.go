// Command moderator runs the moderation-v1 consumer: rules, NIP-56 report
// tallies, NIP-32 labels signed by the node key, hiding. Flags (each with an
// environment variable) -> node.ModeratorOptions -> node.Moderator until SIGINT
// or SIGTERM.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
)

func main() { daemon.Main(newApp) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return daemon.App("moderator",
		"apply the community's moderation rules (consumer moderation-v1): NIP-32 labels, hides, NIP-56 report tallies",
		stdout, stderr, []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultModeratorListen, EnvVars: []string{"CN_MODERATOR_LISTEN"}, Usage: "address to serve /healthz and /metrics on"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Required: true, Usage: "the node's key (cnctl node-key generate), which signs its labels"},
			&cli.StringFlag{Name: "label-namespace", Value: moderation.DefaultNamespace, EnvVars: []string{"CN_MODERATOR_LABEL_NAMESPACE"}, Usage: "NIP-32 namespace (L tag) of the node's labels"},
			daemon.BatchSizeFlag(node.DefaultModeratorBatchSize, "CN_MODERATOR_BATCH_SIZE", "outbox rows per moderation transaction"),
			&cli.StringFlag{Name: "classifier-url", EnvVars: []string{"CN_MODERATOR_CLASSIFIER_URL"}, Usage: "HTTP classifier for rules with a classifier condition: POST {content, kind} -> {labels: [{label, confidence}]} (default: off)"},
			&cli.DurationFlag{Name: "classifier-timeout", Value: node.DefaultClassifierTimeout, EnvVars: []string{"CN_MODERATOR_CLASSIFIER_TIMEOUT"}, Usage: "bound on one classifier request"},
			&cli.DurationFlag{Name: "classifier-batch-deadline", Value: node.DefaultClassifierBatchDeadline, EnvVars: []string{"CN_MODERATOR_CLASSIFIER_BATCH_DEADLINE"}, Usage: "bound on classifying one batch; later answers are recorded as unclassified"},
			&cli.IntFlag{Name: "classifier-concurrency", Value: node.DefaultClassifierConcurrency, EnvVars: []string{"CN_MODERATOR_CLASSIFIER_CONCURRENCY"}, Usage: "classifier requests at once"},
			&cli.IntFlag{Name: "classifier-daily-budget", Value: node.DefaultClassifierDailyBudget, EnvVars: []string{"CN_MODERATOR_CLASSIFIER_DAILY_BUDGET"}, Usage: "classifier requests per UTC day, shared by all moderators (0: unlimited)"},
			&cli.IntFlag{Name: "classifier-max-bytes", Value: node.DefaultClassifierMaxBytes, EnvVars: []string{"CN_MODERATOR_CLASSIFIER_MAX_BYTES"}, Usage: "content sent to the classifier is cut to this many bytes"},
		},
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := moderatorOptions(c)
			if err != nil {
				return err
			}
			o.Logger = logger
			o.Reload = daemon.NewSource(c, moderatorLive, moderatorOptions)
			return node.Moderator(c.Context, o)
		})
}

// moderatorLive are the flags a configuration reload (SIGHUP) applies to the
// running moderator: the classifier's limits (moderation.Moderator.
// SetClassifierLimits; the next batch uses them). Every other flag, the
// classifier's URL among them, needs a restart. The moderation rules are
// not flags: they are in the database (cnctl moderation rules apply) and
// every batch reads the ones in force.
var moderatorLive = daemon.NewLive("log-level", "classifier-timeout", "classifier-batch-deadline", "classifier-concurrency",
	"classifier-daily-budget", "classifier-max-bytes")

// moderatorOptions maps the flags onto the moderator's options and validates them, at
// start and at each reload.
func moderatorOptions(c *cli.Context) (node.ModeratorOptions, error) {
	if u := c.String("classifier-url"); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return node.ModeratorOptions{}, fmt.Errorf("--classifier-url: want an http(s) URL, got %q", u)
	}
	if c.Int("classifier-concurrency") < 1 || c.Int("classifier-max-bytes") < 1 || c.Int("classifier-daily-budget") < 0 ||
		c.Duration("classifier-timeout") <= 0 || c.Duration("classifier-batch-deadline") <= 0 {
		return node.ModeratorOptions{}, fmt.Errorf("classifier settings must be positive (budget: 0 or more)")
	}
	key, err := nodekey.Load(c.String("node-key-file"))
	if err != nil {
		return node.ModeratorOptions{}, err
	}
	return node.ModeratorOptions{
		DatabaseURL: c.String("database-url"),
		Listen:      c.String("listen"),
		ReusePort:   c.Bool("reuse-port"),
		Key:         key,
		Namespace:   c.String("label-namespace"),
		BatchSize:   c.Int("batch-size"),
		Classifier: moderation.ClassifierConfig{
			URL:             c.String("classifier-url"),
			Timeout:         c.Duration("classifier-timeout"),
			BatchDeadline:   c.Duration("classifier-batch-deadline"),
			Concurrency:     c.Int("classifier-concurrency"),
			DailyBudget:     c.Int("classifier-daily-budget"),
			MaxContentBytes: c.Int("classifier-max-bytes"),
		},
	}, nil
}
