package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errLeaseLost ends an instance's turn as the active one: another instance took
// over, or the lease could not be renewed in time.
var errLeaseLost = errors.New("consumer lease lost")

// errOffsetMoved means last_seq changed under the active instance (an operator's
// forced reset-offset); the instance reloads it and goes on.
var errOffsetMoved = errors.New("consumer offset moved by someone else")

// lease is the active instance's claim: the fencing generation and the offset it
// starts from.
type lease struct {
	generation int64
	lastSeq    int64
}

// register creates the consumer's offset row at 0 if it does not exist.
func (c *Consumer) register(ctx context.Context) error {
	_, err := Register(ctx, c.pool, c.cfg.Name, 0)
	return err
}

// tryAcquire takes the lease if it is free, expired or already ours; a takeover
// increments the generation. ok is false while another instance holds it.
func (c *Consumer) tryAcquire(ctx context.Context) (l lease, ok bool, err error) {
	err = c.pool.QueryRow(ctx, `
		UPDATE cn_relay.consumer_offsets
		SET owner_id = $2,
		    owner_generation = owner_generation + 1,
		    lease_expires_at = now() + $3::interval,
		    halted_at = NULL, halted_reason = NULL
		WHERE consumer = $1
		  AND (owner_id IS NULL OR lease_expires_at IS NULL OR lease_expires_at < now() OR owner_id = $2)
		RETURNING owner_generation, last_seq`,
		c.cfg.Name, c.cfg.OwnerID, c.cfg.LeaseTTL).Scan(&l.generation, &l.lastSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease{}, false, nil
	}
	if err != nil {
		return lease{}, false, fmt.Errorf("acquire lease of %s: %w", c.cfg.Name, err)
	}
	return l, true, nil
}

// renew extends the lease; errLeaseLost if another instance holds it now.
func (c *Consumer) renew(ctx context.Context, generation int64) error {
	tag, err := c.pool.Exec(ctx, `
		UPDATE cn_relay.consumer_offsets SET lease_expires_at = now() + $4::interval
		WHERE consumer = $1 AND owner_id = $2 AND owner_generation = $3`,
		c.cfg.Name, c.cfg.OwnerID, generation, c.cfg.LeaseTTL)
	if err != nil {
		return fmt.Errorf("renew lease of %s: %w", c.cfg.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return errLeaseLost
	}
	return nil
}

// markHalted records in the offset row that this instance halted, and why.
func (c *Consumer) markHalted(ctx context.Context, generation int64, cause error) error {
	_, err := c.pool.Exec(ctx, `
		UPDATE cn_relay.consumer_offsets SET halted_at = now(), halted_reason = $4
		WHERE consumer = $1 AND owner_id = $2 AND owner_generation = $3`,
		c.cfg.Name, c.cfg.OwnerID, generation, cause.Error())
	return err
}

// release gives the lease up so that a standby can take over at once.
func (c *Consumer) release(ctx context.Context, generation int64) error {
	_, err := c.pool.Exec(ctx, `
		UPDATE cn_relay.consumer_offsets SET owner_id = NULL, lease_expires_at = NULL
		WHERE consumer = $1 AND owner_id = $2 AND owner_generation = $3`,
		c.cfg.Name, c.cfg.OwnerID, generation)
	if err != nil {
		return fmt.Errorf("release lease of %s: %w", c.cfg.Name, err)
	}
	return nil
}

// queueAdvance queues the offset move from `from` to `to` for this instance at
// generation: the fencing check. It runs in the same transaction as the handler's
// effects, and the row lock it takes orders it against any takeover. On failure the
// transaction is aborted; advanceError says why.
func (c *Consumer) queueAdvance(b *pgx.Batch, generation, from, to int64) {
	b.Queue("SELECT cn_relay.consumer_advance($1, $2, $3, $4, $5, $6)",
		c.cfg.Name, c.cfg.OwnerID, generation, from, to, c.cfg.SynchronousCommit)
}

// advanceError maps the errors of cn_relay.consumer_advance.
func advanceError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "CN001":
			return errLeaseLost
		case "CN002":
			return errOffsetMoved
		}
	}
	return infraError{fmt.Errorf("commit offset: %w", err)}
}
