package node

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TrustOptions is what one trust process needs.
type TrustOptions struct {
	DatabaseURL string
	Listen      string // /healthz, /metrics, /v1/trust/{pubkey}; "" serves nothing
	NodeKey     nodekey.Key
	// ProviderKey signs the assertions; zero: derived from NodeKey (trust.ProviderPurpose).
	ProviderKey       nodekey.Key
	Seeds             []string // hex pubkeys; empty: Admins, or uniform
	Admins            []string
	Params            trust.Params  // trust.DefaultParams() when zero
	RecomputeInterval time.Duration // DefaultRecomputeInterval when 0
	PublishInterval   time.Duration // DefaultPublishInterval when 0
	AssertMinRank     int           // DefaultAssertMinRank when 0
	NodeName          string
	BatchSize         int // DefaultTrustBatchSize when 0
	Logger            *slog.Logger
	Ready             func(addr string) // called with the HTTP address once it listens
	// ReusePort binds Listen with SO_REUSEPORT (--reuse-port).
	ReusePort bool
	// AsOf gives the as_of time of a scheduled run; time.Now when nil.
	AsOf func() int64
	// Reload rebuilds these options on SIGHUP (daemon.Reloader): the seeds
	// (Seeds, Admins), the intervals and AssertMinRank are live
	// (trust.Scheduler.SetPolicy), with --log-level; every other change is
	// reported as needing a restart. Zero: no reloads (the metrics are served
	// all the same).
	Reload daemon.Source[TrustOptions]
}

// Trust runs the trust-v1 consumer, the recompute schedule and the publisher
// until ctx is done or one fails.
func Trust(ctx context.Context, o TrustOptions) error {
	logger := orDiscard(o.Logger)
	if o.NodeKey.PubKey == "" {
		return errors.New("trust: no node key (--node-key-file)")
	}
	provider := o.ProviderKey
	if provider.PubKey == "" {
		var err error
		if provider, err = o.NodeKey.Derive(trust.ProviderPurpose); err != nil {
			return err
		}
	}
	if o.Params == (trust.Params{}) {
		o.Params = trust.DefaultParams()
	}
	seeds := trust.SeedsFor(o.Seeds, o.Admins)
	if seeds.Source == "uniform" {
		logger.Warn("trust: no --seeds and no admins: ranks use a uniform teleport (plain PageRank), which a large Sybil ring can game; set --seeds")
	}
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := daemon.Registry()
	notifier := outbox.NewNotifier(pool, 0, logger, reg)
	graph := &trust.Graph{NodePubKey: o.NodeKey.PubKey}
	c, err := consumer.New(pool, graph, consumer.Config{Name: trust.ConsumerName, BatchSize: cmp.Or(o.BatchSize, DefaultTrustBatchSize),
		Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	// The provider's assertions (30382) and profile are recomputed state: a
	// superseded version is not kept (issue 47).
	own := store.NewPublisher()
	own.SetOwnState(provider.PubKey)
	sched := &trust.Scheduler{
		Pool: pool,
		Publisher: &trust.Publisher{Pool: pool, Store: own, TopicRules: protocol.DefaultTopicRules(), Key: provider,
			Notifier: notifier, MinRank: o.AssertMinRank},
		Seeds:             seeds,
		Params:            o.Params,
		NodeName:          o.NodeName,
		RecomputeInterval: cmp.Or(o.RecomputeInterval, DefaultRecomputeInterval),
		PublishInterval:   cmp.Or(o.PublishInterval, DefaultPublishInterval),
		AsOf:              o.AsOf,
		Registerer:        reg,
		Logger:            logger,
	}
	reloader := daemon.NewReloader("trust", o.Reload, func(next TrustOptions) error {
		sched.SetPolicy(trust.Policy{
			Seeds:             trust.SeedsFor(next.Seeds, next.Admins),
			RecomputeInterval: cmp.Or(next.RecomputeInterval, DefaultRecomputeInterval),
			PublishInterval:   cmp.Or(next.PublishInterval, DefaultPublishInterval),
			MinRank:           cmp.Or(next.AssertMinRank, DefaultAssertMinRank),
		})
		return nil
	}, reg, logger)
	logger.Info("trust starting", "provider_pubkey", provider.PubKey, "seeds", len(seeds.Pubkeys), "seeds_source", seeds.Source,
		"recompute_interval", sched.RecomputeInterval.String())
	mux := daemon.Mux(reg, pool)
	mux.Handle("GET /v1/trust/{pubkey}", trust.SubjectHandler(pool))
	return daemon.Process{Name: "trust", Listen: o.Listen, Handler: mux, Path: "/v1/trust/{pubkey}", Logger: logger, Ready: o.Ready, ReusePort: o.ReusePort}.Run(ctx,
		c.Run, notifier.Run, sched.Run, reloader.Run)
}
