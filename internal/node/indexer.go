package node

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// IndexerOptions is what one indexer process needs.
type IndexerOptions struct {
	DatabaseURL string
	Listen      string // HTTP address of the search API; "" serves nothing
	Kinds       []int  // indexed kinds; indexer.DefaultKinds when nil
	BatchSize   int    // outbox rows per batch; DefaultIndexerBatchSize when 0
	// NATSURL, when set, makes this a remote indexer: it follows the bridge's
	// stream (Stream, DefaultBridgeStream when "") instead of the outbox, into
	// DatabaseURL, a database of its own (indexer.RemoteHandler).
	NATSURL string
	Stream  string
	Logger  *slog.Logger
	// Ready, if set, is called with the HTTP listener's address once it listens.
	Ready func(addr string)
	// ReusePort binds Listen with SO_REUSEPORT (--reuse-port).
	ReusePort bool
	// Reload rebuilds these options on SIGHUP (daemon.Reloader): only
	// --log-level is live, every other change is reported as needing a
	// restart. Zero: no reloads (the metrics are served all the same).
	Reload daemon.Source[IndexerOptions]
}

// Indexer runs the index-v1 consumer and the search API until ctx is done or one
// of them fails. Only one indexer leads at a time (the consumer's lease); a
// second one waits as a standby and serves searches meanwhile.
func Indexer(ctx context.Context, o IndexerOptions) error {
	logger := orDiscard(o.Logger)
	kinds := o.Kinds
	if kinds == nil {
		kinds = indexer.DefaultKinds
	}
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := daemon.Registry()
	reloader := daemon.NewReloader("indexer", o.Reload, nil, reg, logger)
	h := indexer.Handler{Kinds: indexer.NewKinds(kinds)}
	cfg := consumer.Config{
		Name:       indexer.ConsumerName,
		BatchSize:  cmp.Or(o.BatchSize, DefaultIndexerBatchSize),
		Logger:     logger,
		Registerer: reg,
	}
	var c *consumer.Consumer
	if o.NATSURL == "" {
		c, err = consumer.New(pool, &h, cfg)
	} else {
		var stream jetstream.Stream
		var closeNATS func()
		stream, closeNATS, err = openStream(ctx, o.NATSURL, cmp.Or(o.Stream, DefaultBridgeStream), "cn-indexer", logger)
		if err != nil {
			return err
		}
		defer closeNATS()
		c, err = consumer.NewStream(pool, &indexer.RemoteHandler{Handler: h}, cfg, stream)
	}
	if err != nil {
		return err
	}
	api := &indexer.API{Pool: pool, Gatherer: reg, Registerer: reg, Logger: logger}
	return daemon.Process{Name: "search API", Listen: o.Listen, Handler: api.Handler(), Path: "/v1/search", Logger: logger, Ready: o.Ready, ReusePort: o.ReusePort}.Run(ctx,
		c.Run, func(ctx context.Context) error { indexer.CleanPending(ctx, pool, logger); return nil }, reloader.Run)
}

// orDiscard is logger, or one that discards when nil.
func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}
