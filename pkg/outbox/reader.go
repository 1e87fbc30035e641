package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// HeadSQL reads the head: the highest committed seq (0 before any row), kept
// by every append in cn_relay.outbox_head (see insertSQL); pruning leaves it.
const HeadSQL = "SELECT seq FROM cn_relay.outbox_head"

// Head returns the highest committed seq, or 0 when the outbox never had rows.
func Head(ctx context.Context, q Querier) (int64, error) {
	var head int64
	if err := q.QueryRow(ctx, HeadSQL).Scan(&head); err != nil {
		return 0, fmt.Errorf("read outbox head: %w", err)
	}
	return head, nil
}

const readAfterSQL = `
SELECT seq, op, event_id, topic_id, kind, created_at, ingested_at, effective_key, reason
FROM cn_relay.events_outbox
WHERE seq > $1
ORDER BY seq
LIMIT $2`

// ReadAfter returns up to limit committed rows with seq > afterSeq in ascending seq
// order. It appends to buf[:0] so that a caller draining in a loop can reuse memory.
// Because of the append lock (see the package doc), a reader that passes the highest
// seq it has seen as afterSeq never misses a row.
func ReadAfter(ctx context.Context, q Querier, afterSeq int64, limit int, buf []Row) ([]Row, error) {
	if limit <= 0 {
		return buf[:0], fmt.Errorf("read outbox: limit must be positive, got %d", limit)
	}
	if bq, ok := q.(Batcher); ok {
		var b pgx.Batch
		out := buf[:0]
		// A pool's batch is a transaction of its own (implicit, ending at
		// the batch's one Sync): the plan mode set for the read ends with
		// it, with no statement to restore it.
		_, own := q.(*pgxpool.Pool)
		queueReadAfter(&b, afterSeq, limit, &out, !own)
		err := bq.SendBatch(ctx, &b).Close()
		return out, err
	}
	rows, err := q.Query(ctx, readAfterSQL, afterSeq, limit)
	if err != nil {
		return buf[:0], fmt.Errorf("read outbox after %d: %w", afterSeq, err)
	}
	out, err := scanRows(rows, buf[:0])
	if err != nil {
		return out, fmt.Errorf("read outbox after %d: %w", afterSeq, err)
	}
	return out, nil
}

// QueueReadAfter queues the ReadAfter query on b, so that it can share a round trip
// with other statements (a BEGIN, say). When the batch runs, the rows are appended
// to (*dst)[:0].
//
// The read runs on a generic plan (prepared once per connection) whatever the
// session's plan_cache_mode, which is back for the statements after it: the
// best plan (each partition's primary key, pruned at executor start) does not
// depend on the values, and planning the partitioned table for every read cost
// more than the read itself (~150 us against ~50 us for a small batch).
func QueueReadAfter(b *pgx.Batch, afterSeq int64, limit int, dst *[]Row) {
	queueReadAfter(b, afterSeq, limit, dst, true)
}

// queueReadAfter is QueueReadAfter; restore false leaves out the statement
// that sets the session's plan_cache_mode back (a batch that is its own
// transaction).
func queueReadAfter(b *pgx.Batch, afterSeq int64, limit int, dst *[]Row, restore bool) {
	b.Queue(`SELECT set_config('cn.outbox_plan_cache_mode', current_setting('plan_cache_mode'), true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`)
	b.Queue(readAfterSQL, afterSeq, limit).Query(func(rows pgx.Rows) error {
		out, err := scanRows(rows, (*dst)[:0])
		*dst = out
		if err != nil {
			return fmt.Errorf("read outbox after %d: %w", afterSeq, err)
		}
		return nil
	})
	if restore {
		b.Queue("SELECT set_config('plan_cache_mode', current_setting('cn.outbox_plan_cache_mode'), true)")
	}
}

func scanRows(rows pgx.Rows, out []Row) ([]Row, error) {
	defer rows.Close()
	var (
		r            Row
		op           string
		kind         int32
		effectiveKey pgtype.Text
		reason       pgtype.Text
	)
	for rows.Next() {
		if err := rows.Scan(&r.Seq, &op, &r.EventID, &r.TopicID, &kind, &r.CreatedAt,
			&r.IngestedAt, &effectiveKey, &reason); err != nil {
			return out, fmt.Errorf("scan outbox row: %w", err)
		}
		r.Op, r.Kind, r.EffectiveKey, r.Reason = Op(op), int(kind), effectiveKey.String, Reason(reason.String)
		out = append(out, r)
	}
	return out, rows.Err()
}
