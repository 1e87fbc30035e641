package moderation

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// DefaultBatchSize is the moderator's outbox rows per transaction.
const DefaultBatchSize = 500

// Options is what one moderator process needs.
type Options struct {
	DatabaseURL string
	Listen      string // /healthz and /metrics; "" serves nothing
	Key         nodekey.Key
	Namespace   string // NIP-32 namespace; DefaultNamespace when empty
	BatchSize   int    // DefaultBatchSize when 0
	Classifier  ClassifierConfig
	Logger      *slog.Logger
	// Ready, if set, is called with the HTTP listener's address once it listens.
	Ready func(addr string)
}

// Run runs the moderation-v1 consumer until ctx is done or it fails. One
// moderator leads at a time (the consumer's lease); another waits as a standby.
func Run(ctx context.Context, o Options) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
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
	mod := New(Config{
		Key: o.Key, Namespace: o.Namespace, Notifier: notifier, Registerer: reg, Logger: logger,
		Store:      store.New(pool, nil, protocol.DefaultTopicRules()),
		Classifier: o.Classifier, Pool: pool,
	})
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	c, err := consumer.New(pool, mod, consumer.Config{Name: ConsumerName, BatchSize: o.BatchSize, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	logger.Info("moderator starting", "node_pubkey", o.Key.PubKey, "namespace", mod.cfg.Namespace,
		"classifier", o.Classifier.URL != "")
	return daemon.Process{Name: "moderator", Listen: o.Listen, Handler: daemon.Mux(reg, pool), Path: "/metrics",
		Logger: logger, Ready: o.Ready}.Run(ctx, c.Run, notifier.Run)
}
