package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// ErrInvalidRecord reports a record Append refuses before touching the database.
var ErrInvalidRecord = errors.New("invalid outbox record")

const insertSQL = `
WITH ins AS (
    INSERT INTO cn_relay.events_outbox
        (op, event_id, topic_id, kind, created_at, ingested_at, effective_key, reason)
    SELECT u.op, u.event_id, u.topic_id, u.kind, u.created_at,
           coalesce(u.ingested_at, now()), nullif(u.effective_key, ''), nullif(u.reason, '')
    FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[],
                $6::timestamptz[], $7::text[], $8::text[])
         WITH ORDINALITY AS u(op, event_id, topic_id, kind, created_at,
                              ingested_at, effective_key, reason, ord)
    ORDER BY u.ord
    RETURNING seq
)
SELECT coalesce(min(seq), 0), coalesce(max(seq), 0), count(*) FROM ins`

// Append inserts recs into the outbox inside tx and returns the seq values drawn.
//
// It must be the last statement of tx before COMMIT: it takes the outbox advisory
// lock, which serialises every appending transaction until it ends, so anything the
// transaction does after Append delays all other writers. The caller commits, then
// announces the new rows with Notifier.Notify(r.Last) (Writer.Write does all of this).
// Append with no records does nothing and takes no lock.
func Append(ctx context.Context, tx pgx.Tx, recs []Record) (Range, error) {
	return appendRecords(ctx, tx, recs, appendOptions{lock: true})
}

type appendOptions struct {
	// lock is false only in tests and benchmarks, to show what goes wrong without
	// the lock and what it costs.
	lock bool
	// asyncCommit makes the transaction's COMMIT return before its WAL is flushed,
	// so the lock is released without waiting for the disk. The caller must then
	// make the commit durable before it reports success (Writer.Write does).
	asyncCommit bool
}

func appendRecords(ctx context.Context, tx pgx.Tx, recs []Record, opt appendOptions) (Range, error) {
	if len(recs) == 0 {
		return Range{}, nil
	}
	n := len(recs)
	ops := make([]string, n)
	eventIDs := make([]string, n)
	topicIDs := make([]string, n)
	kinds := make([]int32, n)
	createdAts := make([]int64, n)
	ingestedAts := make([]pgtype.Timestamptz, n)
	effectiveKeys := make([]string, n)
	reasons := make([]string, n)
	for i, r := range recs {
		switch {
		case !r.Op.Valid():
			return Range{}, fmt.Errorf("%w: op %q", ErrInvalidRecord, r.Op)
		case r.EventID == "":
			return Range{}, fmt.Errorf("%w: empty event_id", ErrInvalidRecord)
		case r.TopicID == "":
			return Range{}, fmt.Errorf("%w: empty topic_id for event %s", ErrInvalidRecord, r.EventID)
		}
		ops[i] = string(r.Op)
		eventIDs[i] = r.EventID
		topicIDs[i] = r.TopicID
		kinds[i] = int32(r.Kind)
		createdAts[i] = r.CreatedAt
		ingestedAts[i] = pgtype.Timestamptz{Time: r.IngestedAt, Valid: !r.IngestedAt.IsZero()}
		effectiveKeys[i] = r.EffectiveKey
		reasons[i] = r.Reason
	}

	// Lock and insert travel in one round trip; Postgres runs them in order.
	var b pgx.Batch
	if opt.asyncCommit {
		b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
	}
	if opt.lock {
		b.Queue("SELECT pg_advisory_xact_lock($1)", LockKey)
	}
	var r Range
	b.Queue(insertSQL, ops, eventIDs, topicIDs, kinds, createdAts, ingestedAts, effectiveKeys, reasons).
		QueryRow(func(row pgx.Row) error { return row.Scan(&r.First, &r.Last, &r.Count) })
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return Range{}, fmt.Errorf("append outbox: %w", err)
	}
	return r, nil
}
