package outbox

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
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
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.Copy()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+Channel)
		}
		if err != nil {
			if conn != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
			if ctx.Err() == nil {
				logger.Warn("outbox listen connection failed; retrying", "err", err)
			}
			ceiling := min(100*time.Millisecond<<min(attempt, 10), 5*time.Second)
			t := time.NewTimer(ceiling/2 + rand.N(ceiling/2+1))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		attempt = -1
		wake(WakeReconnect)
		for ctx.Err() == nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err == nil {
				wake(WakeNotify)
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
