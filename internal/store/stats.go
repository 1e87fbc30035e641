package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/schema"
)

// statsTables are the tables whose statistics the REQ plans read.
var statsTables = []string{"cn_relay.events", "cn_relay.event_topics", "cn_relay.event_tags"}

// Stale statistics: more rows changed since the last analysis (by anyone:
// autovacuum, an operator, a relay) than statsBaseRows plus statsScale of the
// rows counted then. The thresholds are laxer than autovacuum's for these tables
// (50 rows plus 5%, schema 0003), so a relay only analyses when autovacuum is off
// or behind.
//
// A table that was never analysed gets its first statistics sooner, once more
// than statsFirstRows rows changed: until then Postgres plans a young node's
// REQs from default selectivities (a `#t limit 50` on 2,000 events sorted the
// whole topic: 17 ms instead of ~1 ms), and analysing a few hundred rows costs
// about a millisecond.
const (
	statsBaseRows  = 1000
	statsScale     = 0.10
	statsFirstRows = 100
)

// Analyzed is one ANALYZE that AnalyzeStale ran.
type Analyzed struct {
	Table   string
	Changed int64 // rows inserted, updated or deleted since the previous analysis
	Never   bool  // the table had never been analysed
	Took    time.Duration
	// NotOwner: the statistics are missing or stale, but the owner of
	// cn_relay.analyze_query_table (through which the relay analyses, whatever
	// its role) does not own the table; autovacuum or the operator must.
	NotOwner bool
}

// AnalyzeStale runs ANALYZE on each query table whose statistics are missing or
// stale (see statsBaseRows), one table after the other, and returns what it
// analysed. Without statistics Postgres guesses row counts from default
// selectivities and can sort a whole topic for a `limit 50` REQ. ANALYZE reads a
// fixed-size sample (300 x default_statistics_target rows), so one call is
// bounded whatever the table's size. A stale table the relay's role does not
// own is returned with NotOwner set, not analysed. Only one relay at a time analyses (an
// advisory lock; the others return nothing); a table that cannot be analysed at
// once (lock_timeout) is left for the next call.
func (s *Reader) AnalyzeStale(ctx context.Context) ([]Analyzed, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.name, s.n_mod_since_analyze, greatest(c.reltuples, 0)::bigint,
		       s.last_analyze IS NULL AND s.last_autoanalyze IS NULL,
		       NOT pg_has_role((SELECT proowner FROM pg_proc WHERE oid = 'cn_relay.analyze_query_table(text)'::regprocedure), c.relowner, 'USAGE')
		FROM unnest($1::text[]) AS t(name)
		JOIN pg_class c ON c.oid = t.name::regclass JOIN pg_stat_all_tables s ON s.relid = c.oid
		ORDER BY t.name`, statsTables)
	if err != nil {
		return nil, fmt.Errorf("analyze: read statistics state: %w", err)
	}
	var stale []Analyzed
	for rows.Next() {
		var a Analyzed
		var counted int64
		if err := rows.Scan(&a.Table, &a.Changed, &counted, &a.Never, &a.NotOwner); err != nil {
			rows.Close()
			return nil, fmt.Errorf("analyze: read statistics state: %w", err)
		}
		if a.Never && a.Changed > statsFirstRows || float64(a.Changed) > statsBaseRows+statsScale*float64(counted) {
			stale = append(stale, a)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("analyze: read statistics state: %w", err)
	}
	var done []Analyzed
	for _, a := range stale {
		if a.NotOwner {
			done = append(done, a)
			continue
		}
		start := time.Now()
		ok, err := s.analyze(ctx, a.Table)
		if err != nil || !ok {
			return done, err
		}
		a.Took = time.Since(start)
		done = append(done, a)
	}
	return done, nil
}

// analyze runs ANALYZE on table in a transaction holding the statistics lock;
// ok is false when another relay holds it.
func (s *Reader) analyze(ctx context.Context, table string) (ok bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", schema.StatsLock).Scan(&ok); err != nil || !ok {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '2s'"); err != nil {
			return err
		}
		// With its owner's rights (schema 0014): the relay's role does not own the tables.
		_, err := tx.Exec(ctx, "SELECT cn_relay.analyze_query_table($1)", table)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("analyze %s: %w", table, err)
	}
	return ok, nil
}
