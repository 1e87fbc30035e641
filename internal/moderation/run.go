package moderation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/httpserver"
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.Run(gctx) })
	g.Go(func() error { return notifier.Run(gctx) })
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("moderator listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/healthz", httpserver.Healthz(pool))
		g.Go(func() error {
			if err := httpserver.Serve(gctx, ln, mux); err != nil {
				return fmt.Errorf("moderator HTTP: %w", err)
			}
			return nil
		})
		logger.Info("moderator listening", "url", "http://"+ln.Addr().String()+"/metrics")
		if o.Ready != nil {
			o.Ready(ln.Addr().String())
		}
	}
	err = g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
