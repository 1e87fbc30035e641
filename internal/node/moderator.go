package node

import (
	"cmp"
	"context"
	"errors"
	"log/slog"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// ModeratorOptions is what one moderator process needs.
type ModeratorOptions struct {
	DatabaseURL string
	Listen      string // /healthz and /metrics; "" serves nothing
	Key         nodekey.Key
	Namespace   string // NIP-32 namespace; moderation.DefaultNamespace when empty
	BatchSize   int    // DefaultModeratorBatchSize when 0
	Classifier  moderation.ClassifierConfig
	Logger      *slog.Logger
	// Ready, if set, is called with the HTTP listener's address once it listens.
	Ready func(addr string)
	// ReusePort binds Listen with SO_REUSEPORT (--reuse-port).
	ReusePort bool
	// Reload rebuilds these options on SIGHUP (daemon.Reloader): the
	// classifier's limits (Classifier but its URL:
	// moderation.Moderator.SetClassifierLimits) and --log-level are live,
	// every other change is reported as needing a restart. Zero: no reloads
	// (the metrics are served all the same).
	Reload daemon.Source[ModeratorOptions]
}

// Moderator runs the moderation-v1 consumer until ctx is done or it fails. One
// moderator leads at a time (the consumer's lease); another waits as a standby.
func Moderator(ctx context.Context, o ModeratorOptions) error {
	logger := orDiscard(o.Logger)
	if o.Key.PubKey == "" {
		return errors.New("moderator: no node key (--node-key-file)")
	}
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := daemon.Registry()
	notifier := outbox.NewNotifier(pool, 0, logger, reg)
	namespace := cmp.Or(o.Namespace, moderation.DefaultNamespace)
	mod := moderation.New(moderation.Config{
		Key: o.Key, Namespace: namespace, Notifier: notifier, Registerer: reg, Logger: logger,
		Store: store.NewPublisher(), TopicRules: protocol.DefaultTopicRules(),
		Classifier: o.Classifier, Pool: pool,
	})
	reloader := daemon.NewReloader("moderator", o.Reload, func(next ModeratorOptions) error {
		mod.SetClassifierLimits(next.Classifier)
		return nil
	}, reg, logger)
	c, err := consumer.New(pool, mod, consumer.Config{Name: moderation.ConsumerName, BatchSize: cmp.Or(o.BatchSize, DefaultModeratorBatchSize),
		Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	logger.Info("moderator starting", "node_pubkey", o.Key.PubKey, "namespace", namespace,
		"classifier", o.Classifier.URL != "")
	return daemon.Process{Name: "moderator", Listen: o.Listen, Handler: daemon.Mux(reg, pool), Path: "/metrics",
		Logger: logger, Ready: o.Ready, ReusePort: o.ReusePort}.Run(ctx, c.Run, notifier.Run, reloader.Run)
}
