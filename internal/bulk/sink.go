package bulk

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// sink is where checked events go: the store (a real import) or a transaction
// that is rolled back (a dry run).
type sink interface {
	ingest(ctx context.Context, evs []*nostr.Event, st *Stats) ([]protocol.Verdict, error)
	// waiting returns which of authors have identity events waiting for
	// their first post, as the import left them.
	waiting(ctx context.Context, authors []string) (map[string]bool, error)
	finish(ctx context.Context, st *Stats) error
	close(ctx context.Context)
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// waitingAuthors returns which of authors have rows in cn_relay.pending_events.
func waitingAuthors(ctx context.Context, q queryer, authors []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, "SELECT DISTINCT pubkey FROM cn_relay.pending_events WHERE pubkey = ANY($1)", authors)
	if err != nil {
		return nil, fmt.Errorf("read pending identity events: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read pending identity events: %w", err)
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}

func (im *Importer) newSink(ctx context.Context) (sink, error) {
	if !im.DryRun {
		return &storeSink{im: im, ctx: ctx, lastStats: time.Now()}, nil
	}
	tx, err := im.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin dry run: %w", err)
	}
	return &dryRunSink{store: im.Store, tx: tx}, nil
}

// storeSink stores batches with store.Import. Its statistics checks (see
// Importer.StatsEvery) run alongside the batches, on another connection of
// the pool, one at a time: ANALYZE takes a lock that does not conflict with
// the batches' inserts, and a check takes seconds (a fixed-size sample of each
// table), which the batches used to wait for every StatsEvery. What a check
// analysed is reported (OnAnalyzed) from the goroutine that stores the
// batches, when the next batch after its end is stored, or at the end.
type storeSink struct {
	im        *Importer
	ctx       context.Context // the run's: a check outlives the batches' context, which ends with them
	lastStats time.Time
	stats     chan statsResult // a check running alongside the batches, or nil
}

type statsResult struct {
	done []store.Analyzed
	err  error
}

func (s *storeSink) ingest(ctx context.Context, evs []*nostr.Event, _ *Stats) ([]protocol.Verdict, error) {
	verdicts, err := s.im.Store.Import(ctx, evs)
	if err != nil {
		return nil, err
	}
	if every := s.im.StatsEvery; every > 0 && time.Since(s.lastStats) >= every {
		if err := s.startStatistics(); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

// startStatistics starts a statistics check alongside the next batches,
// unless the previous one is still running; it returns the previous one's
// error.
func (s *storeSink) startStatistics() error {
	if s.stats != nil {
		select {
		case r := <-s.stats:
			s.stats = nil
			if err := s.reportStatistics(r); err != nil {
				return err
			}
		default:
			return nil // still running: the next batch looks again
		}
	}
	s.lastStats = time.Now()
	ch := make(chan statsResult, 1)
	s.stats = ch
	go func() {
		done, err := s.im.Store.AnalyzeStale(s.ctx)
		ch <- statsResult{done, err}
	}()
	return nil
}

// waitStatistics waits for the check running alongside the batches, if any,
// and returns its error.
func (s *storeSink) waitStatistics() error {
	if s.stats == nil {
		return nil
	}
	r := <-s.stats
	s.stats = nil
	return s.reportStatistics(r)
}

func (s *storeSink) reportStatistics(r statsResult) error {
	if s.im.OnAnalyzed != nil {
		for _, a := range r.done {
			s.im.OnAnalyzed(a)
		}
	}
	return r.err
}

// finish waits for the statistics check running alongside the batches,
// refreshes stale statistics once more and announces the outbox head, as
// the relay does after its commits: the store's writer coalesces its NOTIFYs
// and may not have sent the last one.
func (s *storeSink) finish(ctx context.Context, st *Stats) error {
	if err := s.waitStatistics(); err != nil {
		return err
	}
	if st.Accepted == 0 {
		return nil
	}
	if s.im.StatsEvery >= 0 {
		flushStats(ctx, s.im.Pool)
		done, err := s.im.Store.AnalyzeStale(ctx)
		if err := s.reportStatistics(statsResult{done, err}); err != nil {
			return err
		}
	}
	head, err := outbox.Head(ctx, s.im.Pool)
	if err != nil {
		return err
	}
	if _, err := s.im.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, strconv.FormatInt(head, 10)); err != nil {
		return fmt.Errorf("notify %s: %w", outbox.Channel, err)
	}
	st.HeadSeq = head
	return nil
}

func (s *storeSink) waiting(ctx context.Context, authors []string) (map[string]bool, error) {
	return waitingAuthors(ctx, s.im.Pool, authors)
}

// close waits for a statistics check still running (an import that stopped
// on an error); the check ends with the run's context.
func (s *storeSink) close(context.Context) { _ = s.waitStatistics() }

// flushStats makes the pool's backends publish their table statistics
// counters now (Postgres 15+; best effort): a backend flushes them when it goes
// idle, but at most once a second, so the last batches' changes could be
// missing when the import checks for stale statistics at its end.
func flushStats(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range pool.AcquireAllIdle(ctx) {
		// The backend flushes before it answers: the call returns after it.
		_, _ = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		c.Release()
	}
}

type dryRunSink struct {
	store *store.Store
	tx    pgx.Tx
}

func (s *dryRunSink) ingest(ctx context.Context, evs []*nostr.Event, st *Stats) ([]protocol.Verdict, error) {
	verdicts, rows, err := s.store.DryRunTx(ctx, s.tx, evs)
	st.OutboxRows += int64(rows)
	return verdicts, err
}

func (s *dryRunSink) waiting(ctx context.Context, authors []string) (map[string]bool, error) {
	return waitingAuthors(ctx, s.tx, authors)
}

func (s *dryRunSink) finish(context.Context, *Stats) error { return nil }

func (s *dryRunSink) close(ctx context.Context) {
	_ = s.tx.Rollback(context.WithoutCancel(ctx))
}
