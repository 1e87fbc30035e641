package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// This file is the API of cn_relay.consumer_offsets for code outside the
// runtime: no other package reads or writes the table.

// Register creates the offset row of the consumer name at seq (every row with
// a seq up to it counts as applied) unless the consumer is registered already,
// whose offset it leaves as it is. It reports whether it created the row.
// Inside a transaction the row appears when the transaction commits: a
// consumer that starts with effects of its own (a rebuilt index) registers in
// the transaction that writes them.
func Register(ctx context.Context, q outbox.Querier, name string, seq int64) (created bool, err error) {
	tag, err := q.Exec(ctx, `INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ($1, $2)
		ON CONFLICT (consumer) DO NOTHING`, name, seq)
	if err != nil {
		return false, fmt.Errorf("register consumer %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Offset returns the last seq the consumer name has applied (0 when it is not
// registered yet).
func Offset(ctx context.Context, q outbox.Querier, name string) (int64, error) {
	last, _, err := offset(ctx, q, name, "")
	return last, err
}

// LockOffset returns the offset of the registered consumer name and locks its
// row until tx ends: until then neither an instance's commit nor a
// reset-offset can move it. It returns ErrUnknownConsumer for a name that is
// not registered.
func LockOffset(ctx context.Context, tx pgx.Tx, name string) (int64, error) {
	last, ok, err := offset(ctx, tx, name, " FOR UPDATE")
	if err == nil && !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownConsumer, name)
	}
	return last, err
}

// offset reads name's offset; ok is false when it is not registered.
func offset(ctx context.Context, q outbox.Querier, name, lock string) (last int64, ok bool, err error) {
	err = q.QueryRow(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = $1"+lock, name).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read offset of %s: %w", name, err)
	}
	return last, true, nil
}

// Offsets is outbox.Readers over the registered consumers: outbox.Prune keeps
// every row some consumer has not applied yet.
type Offsets struct{}

var _ outbox.Readers = Offsets{}

// Positions returns every registered consumer's offset, lowest first, ties by
// name.
func (Offsets) Positions(ctx context.Context, q outbox.Querier) ([]outbox.Position, error) {
	rows, err := q.Query(ctx, "SELECT consumer, last_seq FROM cn_relay.consumer_offsets ORDER BY last_seq, consumer")
	if err != nil {
		return nil, fmt.Errorf("read consumer offsets: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[outbox.Position])
	if err != nil {
		return nil, fmt.Errorf("read consumer offsets: %w", err)
	}
	return out, nil
}

// FreezeLowest locks the offsets against change until tx ends (SHARE mode:
// they can neither move nor be registered) and returns the lowest; ok is false
// when no consumer is registered.
func (Offsets) FreezeLowest(ctx context.Context, tx pgx.Tx) (lowest outbox.Position, ok bool, err error) {
	if _, err := tx.Exec(ctx, "LOCK TABLE cn_relay.consumer_offsets IN SHARE MODE"); err != nil {
		return lowest, false, err
	}
	err = tx.QueryRow(ctx, "SELECT consumer, last_seq FROM cn_relay.consumer_offsets ORDER BY last_seq LIMIT 1").
		Scan(&lowest.Reader, &lowest.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return lowest, false, nil
	}
	if err != nil {
		return lowest, false, err
	}
	return lowest, true, nil
}
