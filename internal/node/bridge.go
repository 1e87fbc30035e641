package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kukuri/communitynode/internal/bridge"
	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/platform/httpserver"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// BridgeOptions is what one bridge process needs.
type BridgeOptions struct {
	DatabaseURL   string
	NATSURL       string // required
	Stream        string // DefaultBridgeStream when ""
	SubjectPrefix string // DefaultBridgeSubjectPrefix when ""
	Listen        string // HTTP address of /healthz and /metrics; "" serves nothing
	BatchSize     int    // outbox rows per batch; DefaultBridgeBatchSize when 0
	Logger        *slog.Logger
	// Ready, if set, is called with the HTTP listener's address once it listens.
	Ready func(addr string)
	// ReusePort binds Listen with SO_REUSEPORT (--reuse-port).
	ReusePort bool
	// Reload rebuilds these options on SIGHUP (daemon.Reloader): only
	// --log-level is live, every other change is reported as needing a
	// restart. Zero: no reloads (the metrics are served all the same).
	Reload daemon.Source[BridgeOptions]
}

// Bridge runs the bridge-v1 consumer, which publishes the outbox to a NATS
// JetStream stream (internal/bridge), until ctx is done or it fails. Only one
// bridge publishes at a time (the consumer's lease); a second one waits as a
// standby. It fails at start, in one line, when the server is too old or has
// no JetStream.
func Bridge(ctx context.Context, o BridgeOptions) error {
	logger := orDiscard(o.Logger)
	if o.NATSURL == "" {
		return errors.New("no NATS URL (--nats-url, CN_NATS_URL)")
	}
	pool, err := dbpool.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, err := nats.Connect(o.NATSURL, nats.Name("cn-bridge"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { logger.Warn("nats disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Close()

	reg := daemon.Registry()
	reloader := daemon.NewReloader("bridge", o.Reload, nil, reg, logger)
	b, err := bridge.New(ctx, nc, bridge.Config{
		Stream:        cmp.Or(o.Stream, DefaultBridgeStream),
		SubjectPrefix: cmp.Or(o.SubjectPrefix, DefaultBridgeSubjectPrefix),
		Logger:        logger,
		Registerer:    reg,
	})
	if err != nil {
		return err
	}
	c, err := consumer.New(pool, b, consumer.Config{
		Name:       bridge.ConsumerName,
		BatchSize:  cmp.Or(o.BatchSize, DefaultBridgeBatchSize),
		Policy:     consumer.PolicyHalt, // parking a row would leave a hole in the stream
		Logger:     logger,
		Registerer: reg,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", httpserver.Healthz(bridgeHealth{pool.Ping, b.Ping}))
	return daemon.Process{Name: "bridge", Listen: o.Listen, Handler: mux, Path: "/metrics", Logger: logger, Ready: o.Ready, ReusePort: o.ReusePort}.Run(ctx, c.Run, reloader.Run)
}

// openStream connects to the NATS server at url (reconnecting forever) and
// returns the existing stream name, for a stream consumer; it fails in one
// line when the server is too old, has no JetStream or no such stream.
func openStream(ctx context.Context, url, name, client string, logger *slog.Logger) (jetstream.Stream, func(), error) {
	nc, err := nats.Connect(url, nats.Name(client), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { logger.Warn("nats disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats: %w", err)
	}
	if err := bridge.CheckServerVersion(nc.ConnectedServerVersion()); err != nil {
		nc.Close()
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("stream %s at %s: %w (the bridge creates it)", name, nc.ConnectedUrlRedacted(), err)
	}
	return stream, nc.Close, nil
}

// bridgeHealth is healthy while both the database and NATS answer.
type bridgeHealth [2]func(context.Context) error

func (h bridgeHealth) Ping(ctx context.Context) error {
	for _, ping := range h {
		if err := ping(ctx); err != nil {
			return err
		}
	}
	return nil
}
