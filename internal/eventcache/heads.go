package eventcache

import (
	"context"
	"sync"
	"time"
)

// Heads reads the outbox head for REQs answered from the event cache: a REQ
// waits until the cache holds every row committed before it arrived, by any
// process (a moderator's hide, an operator's ban, another relay's event), as
// a database snapshot taken after its arrival would. Get returns the head read
// by a statement that started after Get was called. A REQ that finds no read
// in flight runs one itself; the REQs that arrive while one is in flight share
// the next, so under load it costs one round trip per read, not per REQ.
type Heads struct {
	// Read reads the outbox head (relay.Feed.Head); each call gets a
	// context that ends after Wait.
	Read func(context.Context) (int64, error)
	// Wait bounds each read of the head.
	Wait time.Duration

	mu       sync.Mutex
	inflight bool       // a read runs
	next     *headRound // the round REQs join while one runs; it starts after they joined
}

type headRound struct {
	done chan struct{}
	head int64
	err  error
}

// Get returns a head read after it was called (see Heads).
func (h *Heads) Get(ctx context.Context) (int64, error) {
	h.mu.Lock()
	if !h.inflight {
		h.inflight = true
		h.mu.Unlock()
		r := &headRound{done: make(chan struct{})}
		h.run(r)
		return r.head, r.err
	}
	if h.next == nil {
		h.next = &headRound{done: make(chan struct{})}
	}
	r := h.next
	h.mu.Unlock()
	select {
	case <-r.done:
		return r.head, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run reads for r, then hands the round joined meanwhile, if any, to a
// goroutine of its own (the caller's REQ does not wait for others' rounds).
func (h *Heads) run(r *headRound) {
	// (not tied to one REQ: the others sharing the round need it)
	ctx, cancel := context.WithTimeout(context.Background(), h.Wait)
	r.head, r.err = h.Read(ctx)
	cancel()
	close(r.done)
	h.mu.Lock()
	next := h.next
	h.next = nil
	if next == nil {
		h.inflight = false
	}
	h.mu.Unlock()
	if next != nil {
		go h.run(next)
	}
}
