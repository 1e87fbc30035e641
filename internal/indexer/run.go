package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/dbpool"
	"github.com/kukuri/communitynode/internal/httpserver"
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.Run(gctx) })
	g.Go(func() error { CleanPending(gctx, pool, logger); return nil })
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("search API listener: %w", err)
		}
		api := &API{Pool: pool, Gatherer: reg, Registerer: reg, Logger: logger}
		g.Go(func() error {
			if err := httpserver.Serve(gctx, ln, api.Handler()); err != nil {
				return fmt.Errorf("search API: %w", err)
			}
			return nil
		})
		logger.Info("search API listening", "url", "http://"+ln.Addr().String()+"/v1/search")
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
