package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// follower delivers stored events to live subscriptions by following the outbox,
// so that every relay process sharing the database delivers every event, whichever
// process stored it. It starts at the outbox head (events committed before it
// started are for REQ queries, not live delivery), reads rows after the last seq it
// handled, loads the events of its upsert rows with Store.Events and fans them out
// in seq order. It wakes on a notification (Feed.Listen), on a local commit (poke),
// and at least every pollInterval.
//
// A failed read or load is retried with back-off from the same seq, so no row is
// skipped; a row whose event is no longer visible by the time it is loaded (deleted,
// replaced, expired) is not delivered.
type follower struct {
	feed   Feed
	store  Store
	fanout func(*nostr.Event)
	// listening reports whether any live subscription is filed; nil: always.
	// With none, the follower moves past new rows without loading their
	// events: a subscription filed later runs its query after filing, so it
	// finds them stored.
	listening    func() bool
	m            *metrics
	log          *slog.Logger
	batchSize    int
	pollInterval time.Duration
	loadTimeout  time.Duration
	retryBase    time.Duration
	retryMax     time.Duration

	wake  chan struct{} // capacity 1: wake-ups coalesce
	ready chan struct{} // closed once the start position (the head) is known
}

func newFollower(feed Feed, store Store, fanout func(*nostr.Event), m *metrics, log *slog.Logger) *follower {
	return &follower{
		feed:         feed,
		store:        store,
		fanout:       fanout,
		m:            m,
		log:          log,
		batchSize:    500,
		pollInterval: time.Second,
		loadTimeout:  10 * time.Second,
		retryBase:    100 * time.Millisecond,
		retryMax:     5 * time.Second,
		wake:         make(chan struct{}, 1),
		ready:        make(chan struct{}),
	}
}

// poke asks for a read soon; it never blocks.
func (f *follower) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run follows the outbox until ctx is done.
func (f *follower) run(ctx context.Context) {
	var last int64
	for attempt := 0; ; attempt++ {
		head, err := f.feed.Head(ctx)
		if err == nil {
			last = head
			break
		}
		if ctx.Err() != nil {
			return
		}
		f.m.followerFailures.Inc()
		f.log.Warn("read outbox head failed; retrying", "err", err)
		if !sleepCtx(ctx, f.retryDelay(attempt)) {
			return
		}
	}
	f.m.followerSeq.Set(float64(last))
	f.log.Info("following the outbox", "from_seq", last)
	close(f.ready)

	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		f.feed.Listen(ctx, f.poke)
	}()
	defer func() { <-listenDone }()

	rows := make([]outbox.Row, 0, f.batchSize)
	var recent map[string]struct{} // ids delivered from the previous batch
	for attempt := 0; ctx.Err() == nil; {
		var err error
		rows, err = f.feed.ReadAfter(ctx, last, f.batchSize, rows)
		if err == nil && len(rows) > 0 {
			recent, err = f.deliver(ctx, rows, recent)
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			f.m.followerFailures.Inc()
			f.log.Warn("follow outbox failed; retrying", "after_seq", last, "err", err)
			sleepCtx(ctx, f.retryDelay(attempt))
			attempt++
		case len(rows) == 0:
			attempt = 0
			f.idle(ctx)
		default:
			attempt = 0
			last = rows[len(rows)-1].Seq
			f.m.followerSeq.Set(float64(last))
		}
	}
}

// deliver loads and fans out the events of rows' upsert rows, each once: an
// event with several topics has one row per topic, and those rows are contiguous
// (one append), so they can only straddle two consecutive batches; skip holds the
// ids of the previous batch. It returns the ids of this batch.
func (f *follower) deliver(ctx context.Context, rows []outbox.Row, skip map[string]struct{}) (map[string]struct{}, error) {
	ids := make([]string, 0, len(rows))
	seen := make(map[string]struct{}, len(rows))
	for _, r := range rows {
		if r.Op != outbox.OpUpsert {
			continue
		}
		if _, dup := seen[r.EventID]; dup {
			continue
		}
		seen[r.EventID] = struct{}{}
		if _, dup := skip[r.EventID]; dup {
			continue
		}
		ids = append(ids, r.EventID)
	}
	if len(ids) == 0 || (f.listening != nil && !f.listening()) {
		return seen, nil
	}
	lctx, cancel := context.WithTimeout(ctx, f.loadTimeout)
	evs, err := f.store.Events(lctx, ids)
	cancel()
	if err != nil {
		return skip, err
	}
	byID := make(map[string]*nostr.Event, len(evs))
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	for _, id := range ids { // seq order
		if ev := byID[id]; ev != nil {
			f.fanout(ev)
		}
	}
	return seen, nil
}

// idle waits for a wake-up, the poll interval or ctx.
func (f *follower) idle(ctx context.Context) {
	t := time.NewTimer(f.pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-t.C:
	}
}

// retryDelay is exponential back-off with jitter, from retryBase up to retryMax.
func (f *follower) retryDelay(attempt int) time.Duration {
	return backoff(f.retryBase, f.retryMax, attempt)
}

// backoff returns a delay between half and all of base*2^attempt, capped at max.
func backoff(base, max time.Duration, attempt int) time.Duration {
	ceiling := base << min(attempt, 30)
	if ceiling <= 0 || ceiling > max {
		ceiling = max
	}
	return ceiling/2 + rand.N(ceiling/2+1)
}

// sleepCtx waits d or until ctx is done; false means ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
