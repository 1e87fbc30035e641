package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// This file holds the operator's controls (cnctl status, reset-offset, dlq). They
// read and write the same rows as the runtime and respect its lease.

// ErrUnknownConsumer reports a consumer name with no row in cn_relay.consumer_offsets.
var ErrUnknownConsumer = errors.New("unknown consumer")

// ErrActive reports an operation refused because an instance holds the lease.
var ErrActive = errors.New("consumer is active")

// ConsumerStatus is one consumer's line of `cnctl status`. The JSON field names are
// a stable interface for dashboards and scripts.
type ConsumerStatus struct {
	Consumer    string  `json:"consumer"`
	LastSeq     int64   `json:"last_seq"`
	Backlog     int64   `json:"backlog"`
	LagSeconds  float64 `json:"lag_seconds"`
	Owner       *string `json:"owner"` // the instance holding an unexpired lease, or null
	DeadLetters int64   `json:"dead_letters"`
	// Halted is set when the last active instance halted (policy halt) and none
	// has taken the lease since; HaltedReason says on what. Not in
	// `cnctl status --json` (its shape is stable); the dashboard shows them.
	Halted       bool       `json:"-"`
	HaltedReason string     `json:"-"`
	LeaseExpires *time.Time `json:"-"`
}

// Status is the whole of `cnctl status --json`.
type Status struct {
	HeadSeq   int64            `json:"head_seq"`
	Consumers []ConsumerStatus `json:"consumers"`
}

// ReadStatus reports the outbox head and every registered consumer, by name.
func ReadStatus(ctx context.Context, q outbox.Querier) (Status, error) {
	rows, err := q.Query(ctx, `
		SELECT o.consumer, o.last_seq,
		       CASE WHEN o.lease_expires_at > now() THEN o.owner_id END,
		       (SELECT count(*) FROM cn_relay.consumer_dead_letters d WHERE d.consumer = o.consumer),
		       o.halted_at IS NOT NULL, coalesce(o.halted_reason, ''), CASE WHEN o.lease_expires_at > now() THEN o.lease_expires_at END
		FROM cn_relay.consumer_offsets o ORDER BY o.consumer`)
	if err != nil {
		return Status{}, fmt.Errorf("read consumers: %w", err)
	}
	consumers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConsumerStatus, error) {
		var s ConsumerStatus
		err := row.Scan(&s.Consumer, &s.LastSeq, &s.Owner, &s.DeadLetters, &s.Halted, &s.HaltedReason, &s.LeaseExpires)
		return s, err
	})
	if err != nil {
		return Status{}, fmt.Errorf("read consumers: %w", err)
	}
	st := Status{Consumers: consumers}
	if st.HeadSeq, err = outbox.Head(ctx, q); err != nil {
		return Status{}, err
	}
	for i := range st.Consumers {
		s := &st.Consumers[i]
		_, lag, err := backlogOf(ctx, q, s.LastSeq)
		if err != nil {
			return Status{}, err
		}
		s.Backlog, s.LagSeconds = max(st.HeadSeq-s.LastSeq, 0), lag
	}
	if st.Consumers == nil {
		st.Consumers = []ConsumerStatus{}
	}
	return st, nil
}

// ResetTarget says where reset-offset should move a consumer: exactly one of the
// fields applies.
type ResetTarget struct {
	Seq      *int64     // resume after this seq (last_seq = Seq)
	Time     *time.Time // resume at the first row ingested at or after Time
	Earliest bool       // replay everything still retained
	Latest   bool       // skip everything up to the head
}

// ResetPlan is what a reset would do, computed without changing anything.
type ResetPlan struct {
	Consumer  string
	From      int64 // current last_seq
	To        int64 // new last_seq: the consumer next reads seq > To
	Requested int64 // the target before clamping
	Head      int64 // the outbox head; a Requested beyond it skips rows appended until then
	Horizon   int64 // the retention horizon: rows up to it are gone from the outbox
	Clamped   bool  // Requested was below Horizon, so To was raised to it
	Replay    int64 // retained rows in (To, From] that will be applied again
	Skip      int64 // rows in (From, To] that will never be applied
	Owner     *string
}

// PlanReset resolves target against the outbox and the consumer's offset.
func PlanReset(ctx context.Context, q outbox.Querier, name string, target ResetTarget) (ResetPlan, error) {
	p := ResetPlan{Consumer: name}
	err := q.QueryRow(ctx, `SELECT last_seq, CASE WHEN lease_expires_at > now() THEN owner_id END
		FROM cn_relay.consumer_offsets WHERE consumer = $1`, name).Scan(&p.From, &p.Owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("%w %q", ErrUnknownConsumer, name)
	}
	if err != nil {
		return p, fmt.Errorf("read offset: %w", err)
	}
	if p.Head, err = outbox.Head(ctx, q); err != nil {
		return p, err
	}
	if p.Horizon, err = outbox.Horizon(ctx, q); err != nil {
		return p, err
	}
	head, horizon := p.Head, p.Horizon
	switch {
	case target.Seq != nil:
		if *target.Seq < 0 {
			return p, fmt.Errorf("seq %d is negative", *target.Seq)
		}
		p.Requested = *target.Seq
	case target.Time != nil:
		// The first row ingested at or after the time; the consumer resumes just before it.
		var first *int64
		if err := q.QueryRow(ctx, `SELECT min(seq) FROM cn_relay.events_outbox WHERE ingested_at >= $1`,
			*target.Time).Scan(&first); err != nil {
			return p, fmt.Errorf("resolve time: %w", err)
		}
		if first == nil {
			p.Requested = head
		} else {
			p.Requested = *first - 1
		}
	case target.Earliest:
		p.Requested = horizon
	case target.Latest:
		p.Requested = head
	default:
		return p, errors.New("no reset target")
	}
	p.To = p.Requested
	if p.To < horizon {
		p.To, p.Clamped = horizon, true
	}
	if p.To < p.From {
		err = q.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox WHERE seq > $1 AND seq <= $2", p.To, p.From).Scan(&p.Replay)
	} else if p.To > p.From {
		err = q.QueryRow(ctx, "SELECT count(*) FROM cn_relay.events_outbox WHERE seq > $1 AND seq <= $2", p.From, p.To).Scan(&p.Skip)
	}
	if err != nil {
		return p, fmt.Errorf("count rows: %w", err)
	}
	return p, nil
}

// ExecuteReset moves the consumer's offset to plan.To and records who did it. It
// refuses while an instance holds the lease unless force; a forced reset under a
// running instance makes its next commit fail, after which it reloads the offset
// (an idle instance notices at its next poll).
// It also refuses if the offset moved since the plan was made.
func ExecuteReset(ctx context.Context, pool *pgxpool.Pool, plan ResetPlan, force bool, requestedBy string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Never overlap a running prune: the horizon and the plan's clamp stay true.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", outbox.PruneLockKey); err != nil {
			return fmt.Errorf("wait for outbox prune: %w", err)
		}
		horizon, err := outbox.Horizon(ctx, tx)
		if err != nil {
			return err
		}
		if plan.To < horizon {
			return fmt.Errorf("the outbox was pruned through seq %d since the plan; run again", horizon)
		}
		var last int64
		var owner *string
		err = tx.QueryRow(ctx, `SELECT last_seq, CASE WHEN lease_expires_at > now() THEN owner_id END
			FROM cn_relay.consumer_offsets WHERE consumer = $1 FOR UPDATE`, plan.Consumer).Scan(&last, &owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ErrUnknownConsumer, plan.Consumer)
		}
		if err != nil {
			return fmt.Errorf("lock offset: %w", err)
		}
		if owner != nil && !force {
			return fmt.Errorf("%w: %s holds %s", ErrActive, *owner, plan.Consumer)
		}
		if last != plan.From {
			return fmt.Errorf("offset of %s moved from %d to %d since the plan; run again", plan.Consumer, plan.From, last)
		}
		if _, err := tx.Exec(ctx, `UPDATE cn_relay.consumer_offsets SET last_seq = $2, updated_at = now() WHERE consumer = $1`,
			plan.Consumer, plan.To); err != nil {
			return fmt.Errorf("move offset: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_relay.consumer_offset_resets (consumer, from_seq, to_seq, requested_by, forced)
			VALUES ($1, $2, $3, $4, $5)`, plan.Consumer, plan.From, plan.To, requestedBy, owner != nil); err != nil {
			return fmt.Errorf("record reset: %w", err)
		}
		return nil
	})
}

// DeadLetter is a parked row.
type DeadLetter struct {
	outbox.Row
	Consumer         string     `json:"consumer"`
	Error            string     `json:"error"`
	Attempts         int        `json:"attempts"`
	ParkedAt         time.Time  `json:"parked_at"`
	RetryRequestedAt *time.Time `json:"retry_requested_at"`
}

// ListDeadLetters returns up to limit parked rows of the consumer, oldest seq first.
func ListDeadLetters(ctx context.Context, q outbox.Querier, name string, limit int) ([]DeadLetter, error) {
	if err := mustExist(ctx, q, name); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `
		SELECT consumer, seq, op, event_id, topic_id, kind, created_at, ingested_at,
		       coalesce(effective_key, ''), coalesce(reason, ''), error, attempts, parked_at, retry_requested_at
		FROM cn_relay.consumer_dead_letters WHERE consumer = $1 ORDER BY seq LIMIT $2`, name, limit)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		var op string
		err := row.Scan(&d.Consumer, &d.Seq, &op, &d.EventID, &d.TopicID, &d.Kind, &d.CreatedAt, &d.IngestedAt,
			&d.EffectiveKey, &d.Reason, &d.Error, &d.Attempts, &d.ParkedAt, &d.RetryRequestedAt)
		d.Op = outbox.Op(op)
		return d, err
	})
}

// RequestRetry marks parked rows (all of the consumer's when seqs is empty) for the
// running consumer to re-apply; it returns how many it marked.
func RequestRetry(ctx context.Context, q outbox.Querier, name string, seqs []int64) (int64, error) {
	if err := mustExist(ctx, q, name); err != nil {
		return 0, err
	}
	tag, err := q.Exec(ctx, `UPDATE cn_relay.consumer_dead_letters SET retry_requested_at = now()
		WHERE consumer = $1 AND (coalesce(cardinality($2::bigint[]), 0) = 0 OR seq = ANY($2))`, name, seqs)
	if err != nil {
		return 0, fmt.Errorf("mark dead letters for retry: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DropDeadLetters deletes parked rows (all of the consumer's when seqs is empty) for
// good; it returns how many it deleted.
func DropDeadLetters(ctx context.Context, q outbox.Querier, name string, seqs []int64) (int64, error) {
	if err := mustExist(ctx, q, name); err != nil {
		return 0, err
	}
	tag, err := q.Exec(ctx, `DELETE FROM cn_relay.consumer_dead_letters
		WHERE consumer = $1 AND (coalesce(cardinality($2::bigint[]), 0) = 0 OR seq = ANY($2))`, name, seqs)
	if err != nil {
		return 0, fmt.Errorf("drop dead letters: %w", err)
	}
	return tag.RowsAffected(), nil
}

func mustExist(ctx context.Context, q outbox.Querier, name string) error {
	var ok bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.consumer_offsets WHERE consumer = $1)", name).Scan(&ok); err != nil {
		return fmt.Errorf("look up consumer: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownConsumer, name)
	}
	return nil
}
