package relayadmin

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PollInterval is how often a Watcher looks at cn_admin.state.version: every
// relay applies a change within a second of its commit.
const PollInterval = 250 * time.Millisecond

// Watcher keeps the current State of one process. Its methods are safe for
// concurrent use; State never returns nil once Open returned.
type Watcher struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	cur  atomic.Pointer[State]

	mu        sync.Mutex
	listeners []func(*State)
}

// Open loads the current state.
func Open(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (*Watcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	st, err := Load(ctx, pool)
	if err != nil {
		return nil, err
	}
	w := &Watcher{pool: pool, log: logger}
	w.cur.Store(st)
	return w, nil
}

// State returns the current state.
func (w *Watcher) State() *State { return w.cur.Load() }

// OnChange registers f, called (from Run's goroutine) with each new state.
func (w *Watcher) OnChange(f func(*State)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listeners = append(w.listeners, f)
}

// Run polls for changes until ctx is done; a failed poll is retried at the next
// tick and the last state stays in force meanwhile.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var version int64
		if err := w.pool.QueryRow(ctx, "SELECT version FROM cn_admin.state").Scan(&version); err != nil {
			if ctx.Err() == nil && !failing {
				w.log.Warn("management state poll failing; keeping the last state", "err", err)
			}
			failing = true
			continue
		}
		failing = false
		if version == w.State().Version {
			continue
		}
		st, err := Load(ctx, w.pool)
		if err != nil {
			continue
		}
		w.cur.Store(st)
		w.log.Info("management state changed", "version", st.Version)
		w.mu.Lock()
		ls := append([]func(*State){}, w.listeners...)
		w.mu.Unlock()
		for _, f := range ls {
			f(st)
		}
	}
}

// The relay's Policy, answered from the current state.

// PubkeyBanned reports whether pubkey is banned.
func (w *Watcher) PubkeyBanned(pubkey string) bool { return w.State().PubkeyBanned(pubkey) }

// EventBanned reports whether the event is banned.
func (w *Watcher) EventBanned(id string) bool { return w.State().EventBanned(id) }

// KindAccepted reports whether kind is accepted.
func (w *Watcher) KindAccepted(kind int) bool { return w.State().KindAccepted(kind) }

// IPBlocked reports whether the address is blocked.
func (w *Watcher) IPBlocked(ip string) bool { return w.State().IPBlocked(ip) }

// InfoOverride returns the NIP-11 fields set through NIP-86.
func (w *Watcher) InfoOverride() (name, description, icon string) { return w.State().InfoOverride() }
