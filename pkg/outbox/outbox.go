package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kukuri/communitynode/schema"
)

// Channel is the LISTEN/NOTIFY channel that announces new outbox rows. Its payload is
// a decimal seq: every row with a seq up to it has been committed.
const Channel = "cn_relay_outbox"

// LockKey is the pg_advisory_xact_lock key that serialises outbox appends
// (schema.OutboxLock, listed with every other lock in schema/locks.go).
const LockKey = schema.OutboxLock

// Op is what a consumer should do with the event an outbox row names.
type Op string

const (
	// OpUpsert: the event is (now) visible and effective; store or replace it.
	OpUpsert Op = "upsert"
	// OpDelete: the event is no longer visible (Reason says why); remove it.
	OpDelete Op = "delete"
)

// Valid reports whether op is one the outbox accepts.
func (op Op) Valid() bool { return op == OpUpsert || op == OpDelete }

// Reason says why a `delete` row's event is no longer visible. The same values
// are the deleted_reason of the event's row in cn_relay.events.
type Reason string

const (
	// ReasonNIP09: its author deleted it (NIP-09), or a newer deletion of its
	// address covers it. Final: the event never comes back.
	ReasonNIP09 Reason = "nip09"
	// ReasonExpiration: its NIP-40 expiration passed (the expiry sweep). Final.
	ReasonExpiration Reason = "expiration"
	// ReasonModeration: the node hid it (a moderation rule, an operator, a
	// ban). The only reason that can be undone: unhiding writes `upsert` rows.
	ReasonModeration Reason = "moderation"
)

// Record is one row to append. The event itself stays in cn_relay.events; the outbox
// carries references only.
type Record struct {
	Op      Op
	EventID string
	TopicID string
	Kind    int
	// CreatedAt is the event's created_at (unix seconds).
	CreatedAt int64
	// IngestedAt is when the relay accepted the event; zero means the transaction's now().
	IngestedAt time.Time
	// EffectiveKey is set for replaceable and addressable events.
	EffectiveKey string
	// Reason is set for deletes.
	Reason Reason
}

// Row is a committed outbox row.
type Row struct {
	Seq          int64     `json:"seq"`
	Op           Op        `json:"op"`
	EventID      string    `json:"event_id"`
	TopicID      string    `json:"topic_id"`
	Kind         int       `json:"kind"`
	CreatedAt    int64     `json:"created_at"`
	IngestedAt   time.Time `json:"ingested_at"`
	EffectiveKey string    `json:"effective_key,omitempty"` // "" when NULL
	Reason       Reason    `json:"reason,omitempty"`        // "" when NULL
}

// Range is the span of seq values one Append drew: First <= Last, both inclusive.
// Count is the number of rows appended; it equals Last-First+1 under the lock.
type Range struct {
	First, Last int64
	Count       int
}

// Querier is what the read functions need: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
