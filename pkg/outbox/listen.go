package outbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/pkg/backoff"
)

// Wake says why Listen woke its caller.
type Wake int

const (
	// WakeNotify: a NOTIFY on Channel arrived.
	WakeNotify Wake = iota
	// WakeReconnect: the LISTEN connection was (re)established; notifications may
	// have been missed before, so the caller should read the outbox now.
	WakeReconnect
)

// Listen holds a dedicated connection (made from cfg, not from a pool) with LISTEN
// on Channel until ctx is done, calling wake for every notification and after every
// successful (re)connect. It reconnects with exponential back-off (100 ms to 5 s,
// jittered) after Postgres restarts or kills the connection, and pings an idle
// connection every 30 seconds so that a silently dead one is noticed. wake must not
// block. logger may be nil.
func Listen(ctx context.Context, cfg *pgx.ConnConfig, wake func(Wake), logger *slog.Logger) {
	ListenChannel(ctx, cfg, Channel, func() { wake(WakeReconnect) }, func(string) { wake(WakeNotify) }, logger)
}

// ListenChannel is Listen for any channel: it calls connected after every
// successful (re)connect (notifications may have been missed before it) and
// notify with the payload of every notification, in the order Postgres delivers
// them (commit order; one transaction's notifications in the order it sent
// them). Neither may block for long: the connection is not read meanwhile.
func ListenChannel(ctx context.Context, cfg *pgx.ConnConfig, channel string, connected func(), notify func(payload string), logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.Copy()
	listen := "LISTEN " + pgx.Identifier{channel}.Sanitize()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = conn.Exec(ctx, listen)
		}
		if err != nil {
			if conn != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
			if ctx.Err() == nil {
				logger.Warn("listen connection failed; retrying", "channel", channel, "err", err)
			}
			backoff.Sleep(ctx, backoff.Jittered(100*time.Millisecond, 5*time.Second, attempt))
			continue
		}
		attempt = -1
		connected()
		for ctx.Err() == nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			n, err := conn.WaitForNotification(wctx)
			cancel()
			if err == nil {
				notify(n.Payload)
				continue
			}
			if ctx.Err() != nil || conn.IsClosed() {
				break
			}
			if errors.Is(err, context.DeadlineExceeded) {
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				perr := conn.Ping(pctx)
				pcancel()
				if perr == nil {
					continue
				}
			}
			break
		}
		_ = conn.Close(context.WithoutCancel(ctx))
	}
}
