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

// insertSQL inserts the rows and moves the head (cn_relay.outbox_head) to the
// last of them in the same statement: committed together, under the lock, so
// the head is max(seq) in every snapshot.
const insertSQL = insertRowsSQL + `, head AS (
    UPDATE cn_relay.outbox_head h SET seq = greatest(h.seq, r.hi) FROM r WHERE r.n > 0
)
SELECT lo, hi, n FROM r`

// insertUnlockedSQL is insertSQL without the head, for appends without the
// lock (tests): the head row's lock would serialise them as the lock does.
const insertUnlockedSQL = insertRowsSQL + ` SELECT lo, hi, n FROM r`

const insertRowsSQL = `
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
), r AS (
    SELECT coalesce(min(seq), 0) AS lo, coalesce(max(seq), 0) AS hi, count(*) AS n FROM ins
)`

// AppendedSetting is a custom setting that an append sets to 'on' for the rest
// of its transaction. A transaction that appended rows must commit as the
// server's synchronous_commit asks: its rows become visible at commit, and
// readers must never see a row a crash could take back. Code that would
// otherwise commit asynchronously (pkg/consumer's offset commit) checks it.
const AppendedSetting = "cn.outbox_appended"

// Batcher is what Append needs of a transaction: pgx.Tx, or the transaction a
// pkg/consumer handler is given (so that a consumer can publish events, such as
// the node's labels, in the same transaction as its offset).
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Append inserts recs into the outbox inside tx and returns the seq values drawn.
//
// It must be the last statement of tx before COMMIT: it takes the outbox advisory
// lock, which serialises every appending transaction until it ends, so anything the
// transaction does after Append delays all other writers. The caller commits, then
// announces the new rows with Notifier.Notify(r.Last) (Writer.Write does all of this).
// Append with no records does nothing and takes no lock.
func Append(ctx context.Context, tx Batcher, recs []Record) (Range, error) {
	return appendRecords(ctx, tx, recs, true)
}

func appendRecords(ctx context.Context, tx Batcher, recs []Record, lock bool) (Range, error) {
	if len(recs) == 0 {
		return Range{}, nil
	}
	var b pgx.Batch
	var r Range
	if err := queueAppend(&b, recs, lock, &r); err != nil {
		return Range{}, err
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return Range{}, fmt.Errorf("append outbox: %w", err)
	}
	return r, nil
}

// queueAppend validates recs and queues the append's statements (the lock, unless
// lock is false, which only tests and benchmarks do to show what goes wrong
// without it; then the insert) on b; the insert's result is scanned into r when
// the batch runs. The statements run in order on the server, so lock and insert
// need no round trip between them.
//
// With the lock it also turns JIT off for the rest of the transaction: the
// insert's estimated cost can pass jit_above_cost (its arrays are parameters),
// and compiling it took ~0.5 s per append on a pool with the server's default
// jit = on (the node's own pools turn JIT off: internal/dbpool). And it sets
// AppendedSetting for the rest of the transaction:
// pkg/consumer's offset commit reads it and then leaves the commit synchronous,
// so that outbox rows appended in a consumer's transaction are durable before
// anyone can see them, like every other append.
func queueAppend(b *pgx.Batch, recs []Record, lock bool, r *Range) error {
	n := len(recs)
	ops := make([]string, n)
	eventIDs := make([]string, n)
	topicIDs := make([]string, n)
	kinds := make([]int32, n)
	createdAts := make([]int64, n)
	ingestedAts := make([]pgtype.Timestamptz, n)
	effectiveKeys := make([]string, n)
	reasons := make([]string, n)
	for i, rec := range recs {
		switch {
		case !rec.Op.Valid():
			return fmt.Errorf("%w: op %q", ErrInvalidRecord, rec.Op)
		case rec.EventID == "":
			return fmt.Errorf("%w: empty event_id", ErrInvalidRecord)
		case rec.TopicID == "":
			return fmt.Errorf("%w: empty topic_id for event %s", ErrInvalidRecord, rec.EventID)
		}
		ops[i] = string(rec.Op)
		eventIDs[i] = rec.EventID
		topicIDs[i] = rec.TopicID
		kinds[i] = int32(rec.Kind)
		createdAts[i] = rec.CreatedAt
		ingestedAts[i] = pgtype.Timestamptz{Time: rec.IngestedAt, Valid: !rec.IngestedAt.IsZero()}
		effectiveKeys[i] = rec.EffectiveKey
		reasons[i] = string(rec.Reason)
	}
	sql := insertUnlockedSQL
	if lock {
		b.Queue("SELECT pg_advisory_xact_lock($1), set_config('"+AppendedSetting+"', 'on', true), set_config('jit', 'off', true)", LockKey)
		sql = insertSQL
	}
	b.Queue(sql, ops, eventIDs, topicIDs, kinds, createdAts, ingestedAts, effectiveKeys, reasons).
		QueryRow(func(row pgx.Row) error { return row.Scan(&r.First, &r.Last, &r.Count) })
	return nil
}
