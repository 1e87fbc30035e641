package relay

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/eventcache"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/pkg/backoff"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// follower delivers stored events to live subscriptions by following the outbox,
// so that every relay process sharing the database delivers every event, whichever
// process stored it. It starts at the outbox head (events committed before it
// started are for REQ queries, not live delivery), reads rows after the last seq it
// handled, loads the events of its upsert rows with Store.Events (those this
// process stored since its previous read it takes from memory instead: local)
// and fans them out in seq order, each with the seq of its row (a subscription
// skips what its stored part holds, see subscription). It wakes on a
// notification (Feed.Listen), on a local commit (committed), and at least every
// pollInterval; after a read shorter than batchSize it waits for the next
// wake-up, not reading again to find nothing.
//
// Each run of upsert rows adjacent in seq for the same event (one row per topic
// of one change, which can straddle two reads) is one delivery, with the seq of
// its first row. Only adjacent rows are collapsed: an event named again after
// other rows became visible again (`A upsert, B upsert, B delete, A upsert`:
// version A replaced by B, B deleted, A effective again) and is delivered
// again, with its later seq, so that a subscription whose snapshot lies between
// the two gets it.
//
// A failed read or load is retried with back-off from the same seq, so no row is
// skipped; a row whose event is no longer visible by the time it is loaded (deleted,
// replaced, expired) is not delivered. An event this process stored counts as
// loaded when its batch committed: it is delivered even if a change committed
// after it (a row later in seq order, delivered or applied after it) has
// hidden it since, as it would have been had the follower read it at once.
type follower struct {
	feed  Feed
	store Store
	// fanout delivers a loaded event, with its JSON when the follower made
	// it (nil: fanout makes it if anyone wants it).
	fanout func(ev *nostr.Event, js []byte, seq int64)
	// cache, if set, is filled from recent before the follower starts, which
	// then starts at the fill's seq, and every read of rows is applied to it
	// before any of their events is fanned out: a subscription filed before
	// it reads the cache gets every event above the cache's seq live (see
	// subscription).
	cache  EventCache
	recent RecentStore
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

	// gate is the relay's copy of the private and hidden groups' rule,
	// loaded by start and refreshed by deliver from access (nil: the store
	// has none; the gate stays empty) before any row is applied or fanned
	// out; it advances with the rows handled (see groupGate).
	gate   *groupGate
	access GroupAccessStore

	// tree, if set, is the NIP-77 fingerprint tree (negentropy_tree.go):
	// filled from treeStore in the background once the follower knows where
	// it starts (fillTree; the follower does not wait for it: it hands the
	// tree its reads meanwhile, which the fill applies on top of its
	// snapshot), regrouped whenever the gate is refreshed, and applied every
	// read of rows before any is fanned out.
	tree      *negTree
	treeStore SyncTreeStore

	// local holds the events this process's batches stored since the
	// follower's previous read (committed), so that it does not load them.
	local localEvents

	wake  chan struct{} // capacity 1: wake-ups coalesce
	ready chan struct{} // closed once the start position (the head) is known
}

func newFollower(feed Feed, store Store, fanout func(*nostr.Event, []byte, int64), m *metrics, log *slog.Logger) *follower {
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

// committed is called after each batch of this process committed (its Ingest
// returned, with results): it keeps the events the batch stored for the next
// read and asks for that read. It never blocks.
func (f *follower) committed(evs []*nostr.Event, results []IngestResult) {
	f.local.add(evs, results)
	f.poke()
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
		head, err := f.start(ctx)
		if err == nil {
			last = head
			break
		}
		if ctx.Err() != nil {
			return
		}
		f.m.followerFailures.Inc()
		f.log.Warn("read outbox head failed; retrying", "err", err)
		if !backoff.Sleep(ctx, f.retryDelay(attempt)) {
			return
		}
	}
	if f.gate != nil {
		f.gate.advance(last)
	}
	f.m.followerSeq.Set(float64(last))
	f.log.Info("following the outbox", "from_seq", last)
	if f.tree != nil {
		if f.access == nil {
			f.log.Warn("negentropy tree off: the store does not report the groups' rule")
		} else {
			// (before the first read: the fill gets every read after last)
			f.tree.beginFill(last)
			fillDone := make(chan struct{})
			go func() {
				defer close(fillDone)
				f.fillTree(ctx)
			}()
			defer func() { <-fillDone }()
		}
	}
	close(f.ready)

	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		f.feed.Listen(ctx, f.poke)
	}()
	defer func() { <-listenDone }()
	if f.cache != nil {
		seenDone := make(chan struct{})
		go func() {
			defer close(seenDone)
			f.buildSeen(ctx)
		}()
		defer func() { <-seenDone }()
	}

	rows := make([]outbox.Row, 0, f.batchSize)
	var prev outbox.Row // the last row handled
	for attempt := 0; ctx.Err() == nil; {
		var err error
		rows, err = f.feed.ReadAfter(ctx, last, f.batchSize, rows)
		// (taken after the read: an event handed over while the read ran is
		// among them whenever its rows are, and a read that found nothing
		// gives them back for the next one; an event whose rows this read
		// did not have is loaded, as any other)
		local := f.local.take()
		if err == nil && len(rows) > 0 {
			err = f.deliver(ctx, rows, prev, local)
		} else {
			f.local.giveBack(local)
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			f.m.followerFailures.Inc()
			f.log.Warn("follow outbox failed; retrying", "after_seq", last, "err", err)
			backoff.Sleep(ctx, f.retryDelay(attempt))
			attempt++
		case len(rows) == 0:
			attempt = 0
			f.idle(ctx)
		default:
			attempt = 0
			prev = rows[len(rows)-1]
			last = prev.Seq
			if f.gate != nil {
				f.gate.advance(last)
			}
			f.m.followerSeq.Set(float64(last))
			if len(rows) < f.batchSize {
				// A short read returned every row committed when it ran;
				// a commit since woke (or will wake) the follower, and a
				// wake-up during the read is kept (wake): no need for a
				// read that finds nothing.
				f.idle(ctx)
			}
		}
	}
}

// start returns the seq to follow from: the outbox head, or with a cache the
// seq of the snapshot it is filled from.
func (f *follower) start(ctx context.Context) (int64, error) {
	head, err := f.startAt(ctx)
	if err != nil {
		return 0, err
	}
	// (read after the head: at least as new)
	if err := f.loadGate(ctx, nil); err != nil {
		return 0, err
	}
	return head, nil
}

// loadGate reads the rule of groups ids (nil: all) into the gate.
func (f *follower) loadGate(ctx context.Context, ids []string) error {
	if f.access == nil || f.gate == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, f.loadTimeout)
	defer cancel()
	rules, err := f.access.GroupAccess(lctx, ids)
	if err != nil {
		return err
	}
	f.gate.set(ids, rules)
	return nil
}

// startAt is start without the gate.
func (f *follower) startAt(ctx context.Context) (int64, error) {
	return f.cacheAt(ctx)
}

// fillTree fills the NIP-77 tree from one snapshot (negTree.fillFrom), beside
// the follower, which beginFill told to hand the tree its reads: a failed
// fill is tried again with back-off, and again at once when its snapshot
// was behind the follower's start or too many rows came meanwhile, until
// the tree is ready or ctx is done. A snapshot holding events without a
// topic leaves the tree off (sessions read the database).
func (f *follower) fillTree(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; {
		began := time.Now()
		seq, unscoped, err := f.tree.fillFrom(func(add func(negentropy.Candidate)) (int64, bool, error) {
			return f.treeStore.SyncTreeItems(ctx, add)
		})
		switch {
		case err == nil && unscoped:
			f.log.Warn("negentropy tree off: events are stored without a topic (no outbox rows to follow); NIP-77 sessions read the database")
			return
		case err == nil:
			f.log.Info("negentropy tree ready", "items", f.tree.len(), "seq", seq, "took", time.Since(began).Round(time.Millisecond))
			return
		case errors.Is(err, errTreeRestart):
			f.log.Info("negentropy tree: filling again", "reason", err)
			continue
		case ctx.Err() != nil:
			return
		}
		f.m.followerFailures.Inc()
		f.log.Warn("negentropy tree: fill failed; retrying", "err", err)
		backoff.Sleep(ctx, f.retryDelay(attempt))
		attempt++
	}
}

// cacheAt is startAt for the event cache: the outbox head without one.
func (f *follower) cacheAt(ctx context.Context) (int64, error) {
	if f.cache == nil {
		return f.feed.Head(ctx)
	}
	began := time.Now()
	err := f.cache.Fill(func(add func(*nostr.Event, []byte) bool) (int64, []int, error) {
		return f.recent.Recent(ctx, f.cache.MaxEvents(), add)
	})
	if err != nil {
		return 0, err
	}
	st := f.cache.Stats()
	f.log.Info("event cache filled", "events", st.Events, "bytes", st.Bytes, "bounded", st.Bounded, "seq", st.Seq,
		"took", time.Since(began).Round(time.Millisecond))
	if len(st.Unscoped) > 0 {
		f.log.Warn("event cache: kinds stored without a topic (no outbox rows): filters that could match them read the database",
			"kinds", st.Unscoped)
	}
	return st.Seq, nil
}

// buildSeen builds the cache's seen set (eventcache.Cache.BuildSeen), and
// again whenever it has filled up, until ctx is done; a failed build is
// retried with back-off. It runs beside the follower, which adds the keys of
// the events it loads meanwhile.
func (f *follower) buildSeen(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; {
		began := time.Now()
		full, err := f.cache.BuildSeen(func(size func(int), key func(string, []byte)) error {
			return f.recent.StoredKeys(ctx, size, key)
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.log.Warn("event cache: building the seen set failed; retrying", "err", err)
			backoff.Sleep(ctx, f.retryDelay(attempt))
			attempt++
			continue
		}
		if full == nil {
			return // (topic-less events: no seen set)
		}
		attempt = 0
		st := f.cache.SeenStats()
		f.log.Info("event cache: seen set built", "keys", st.Keys, "bytes", st.Bytes, "took", time.Since(began).Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-full:
		}
	}
}

// deliver loads and fans out the events of rows' upsert rows: one delivery per
// run of adjacent upsert rows of one event (see follower), with the seq of its
// first row; prev is the row before rows[0] (zero at the start), whose run may
// continue into rows. The events in local (stored by this process, committed
// before the read of rows) are not loaded.
func (f *follower) deliver(ctx context.Context, rows []outbox.Row, prev outbox.Row, local map[string]*nostr.Event) error {
	type delivery struct {
		id  string
		seq int64
	}
	var todo []delivery
	ids := make([]string, 0, len(rows))
	applied := rows[:0:0] // (for the cache: the rows that start a run)
	for _, r := range rows {
		sameRun := r.EventID == prev.EventID && r.Op == prev.Op
		prev = r
		if sameRun {
			continue
		}
		if f.cache != nil {
			applied = append(applied, r)
		}
		if r.Op != outbox.OpUpsert {
			continue
		}
		todo = append(todo, delivery{id: r.EventID, seq: r.Seq})
		ids = append(ids, r.EventID)
	}
	last := rows[len(rows)-1].Seq
	// The groups these rows may close to some readers are read again first
	// (see groupGate), whoever listens.
	if ids := accessChanged(rows); len(ids) > 0 {
		if err := f.loadGate(ctx, ids); err != nil {
			return err
		}
		if f.tree != nil {
			f.tree.regroup(ids)
		}
	}
	// The rows' events are loaded for the cache, a tree that is filled or
	// filling, and live subscriptions; with none of them, not at all.
	tree := f.tree != nil && f.tree.active()
	if f.cache == nil && !tree && (len(todo) == 0 || (f.listening != nil && !f.listening())) {
		return nil
	}
	var byID map[string]*nostr.Event
	if len(todo) > 0 {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		byID = make(map[string]*nostr.Event, len(ids))
		load := ids[:0]
		for _, id := range ids {
			if ev := local[id]; ev != nil {
				byID[id] = ev
			} else {
				load = append(load, id)
			}
		}
		if len(load) > 0 {
			lctx, cancel := context.WithTimeout(ctx, f.loadTimeout)
			evs, err := f.store.Events(lctx, load)
			cancel()
			if err != nil {
				return err
			}
			for _, ev := range evs {
				byID[ev.ID] = ev
			}
		}
	}
	var loaded map[string]eventcache.Loaded
	if f.cache != nil {
		loaded = make(map[string]eventcache.Loaded, len(byID))
		for id, ev := range byID {
			loaded[id] = eventcache.Loaded{Event: ev, JSON: eventJSON(ev)}
		}
		f.cache.Apply(applied, loaded, last)
	}
	if f.tree != nil {
		f.tree.apply(rows, byID, last)
	}
	for _, d := range todo { // seq order
		if ev := byID[d.id]; ev != nil {
			f.fanout(ev, loaded[d.id].JSON, d.seq)
		}
	}
	return nil
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
	return backoff.Jittered(f.retryBase, f.retryMax, attempt)
}
