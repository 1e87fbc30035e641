package relay

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// PGFeed is the Feed of a Postgres outbox: reads go through the pool, and Listen
// holds one dedicated connection (not from the pool) with LISTEN cn_relay_outbox.
type PGFeed struct {
	pool      *pgxpool.Pool
	log       *slog.Logger
	retryBase time.Duration
	retryMax  time.Duration
	pingEvery time.Duration
}

// NewPGFeed returns a Feed on pool. logger may be nil.
func NewPGFeed(pool *pgxpool.Pool, logger *slog.Logger) *PGFeed {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PGFeed{pool: pool, log: logger, retryBase: 100 * time.Millisecond, retryMax: 5 * time.Second, pingEvery: 30 * time.Second}
}

// Head implements Feed.
func (f *PGFeed) Head(ctx context.Context) (int64, error) {
	return outbox.Head(ctx, f.pool)
}

// ReadAfter implements Feed.
func (f *PGFeed) ReadAfter(ctx context.Context, after int64, limit int, buf []outbox.Row) ([]outbox.Row, error) {
	return outbox.ReadAfter(ctx, f.pool, after, limit, buf)
}

// Listen implements Feed: it keeps a LISTEN connection open, reconnecting with
// back-off, calls wake on every notification and after every successful
// (re)connect, and checks an idle connection with a ping every 30 seconds.
func (f *PGFeed) Listen(ctx context.Context, wake func()) {
	connCfg := f.pool.Config().ConnConfig.Copy()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		conn, err := pgx.ConnectConfig(ctx, connCfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+outbox.Channel)
		}
		if err != nil {
			if conn != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
			if ctx.Err() == nil {
				f.log.Warn("outbox listen connection failed; retrying", "err", err)
			}
			sleepCtx(ctx, backoff(f.retryBase, f.retryMax, attempt))
			continue
		}
		attempt = -1
		wake() // notifications may have been missed while disconnected
		f.wait(ctx, conn, wake)
		_ = conn.Close(context.WithoutCancel(ctx))
	}
}

// wait turns notifications on conn into wake-ups until ctx ends or conn fails.
func (f *PGFeed) wait(ctx context.Context, conn *pgx.Conn, wake func()) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, f.pingEvery)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			wake()
			continue
		}
		if ctx.Err() != nil || conn.IsClosed() {
			return
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			f.log.Warn("outbox listen connection lost; reconnecting", "err", err)
			return
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		err = conn.Ping(pctx)
		pcancel()
		if err != nil {
			f.log.Warn("outbox listen connection lost; reconnecting", "err", err)
			return
		}
	}
}
