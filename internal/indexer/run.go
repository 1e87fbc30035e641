package indexer

import (
	"context"
	"log/slog"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// Options is what one indexer process needs.
type Options struct {
	DatabaseURL string
	Listen      string // HTTP address of the search API; "" serves nothing
	Kinds       []int  // indexed kinds; DefaultKinds when nil
	BatchSize   int    // outbox rows per batch; DefaultBatchSize when 0
	Logger      *slog.Logger
	// Ready, if set, is called with the HTTP listener's address once it listens.
	Ready func(addr string)
}

// Run runs the index-v1 consumer and the search API until ctx is done or one of
// them fails. Only one indexer leads at a time (the consumer's lease); a second
// one waits as a standby and serves searches meanwhile.
func Run(ctx context.Context, o Options) error {
	logger, kinds := orDiscard(o.Logger), kindsOrDefault(o.Kinds)
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := daemon.Registry()
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	c, err := consumer.New(pool, &Handler{Kinds: NewKinds(kinds)}, consumer.Config{
		Name:       ConsumerName,
		BatchSize:  o.BatchSize,
		Logger:     logger,
		Registerer: reg,
	})
	if err != nil {
		return err
	}
	api := &API{Pool: pool, Gatherer: reg, Registerer: reg, Logger: logger}
	return daemon.Process{Name: "search API", Listen: o.Listen, Handler: api.Handler(), Path: "/v1/search", Logger: logger, Ready: o.Ready}.Run(ctx,
		c.Run, func(ctx context.Context) error { CleanPending(ctx, pool, logger); return nil })
}
