package consumer

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// retryDeadLetters re-applies the parked rows an operator marked with `cnctl dlq
// retry`, oldest first, one per transaction. A row that succeeds leaves the table in
// the same transaction as its effects; one that fails stays, with its new error and
// attempt count, and is not retried again until it is marked again. The offset does
// not move; the lease is checked in every transaction.
func (c *Consumer) retryDeadLetters(ctx context.Context, generation int64) error {
	rows, err := c.pool.Query(ctx, `
		SELECT seq, op, event_id, topic_id, kind, created_at, ingested_at,
		       coalesce(effective_key, ''), coalesce(reason, '')
		FROM cn_relay.consumer_dead_letters
		WHERE consumer = $1 AND retry_requested_at IS NOT NULL
		ORDER BY seq LIMIT 100`, c.cfg.Name)
	if err != nil {
		return fmt.Errorf("read dead letters: %w", err)
	}
	marked, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (outbox.Row, error) {
		var r outbox.Row
		var op string
		err := row.Scan(&r.Seq, &op, &r.EventID, &r.TopicID, &r.Kind, &r.CreatedAt, &r.IngestedAt, &r.EffectiveKey, &r.Reason)
		r.Op = outbox.Op(op)
		return r, err
	})
	if err != nil {
		return fmt.Errorf("read dead letters: %w", err)
	}
	for _, r := range marked {
		herr, err := c.retryDeadLetter(ctx, generation, r)
		if err != nil {
			return err
		}
		if herr == nil {
			c.cfg.Logger.Info("dead letter re-applied", "consumer", c.cfg.Name, "seq", r.Seq, "event_id", r.EventID)
			continue
		}
		c.m.failed.Inc()
		c.cfg.Logger.Warn("dead letter retry failed; it stays parked", "consumer", c.cfg.Name, "seq", r.Seq, "err", herr)
		if _, err := c.pool.Exec(ctx, `
			UPDATE cn_relay.consumer_dead_letters
			SET error = $3, attempts = attempts + 1, retry_requested_at = NULL
			WHERE consumer = $1 AND seq = $2`, c.cfg.Name, r.Seq, herr.Error()); err != nil {
			return fmt.Errorf("record dead letter failure: %w", err)
		}
	}
	return nil
}

// retryDeadLetter applies one parked row; herr is the handler's failure, err any other.
func (c *Consumer) retryDeadLetter(ctx context.Context, generation int64, r outbox.Row) (herr, err error) {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `
		UPDATE cn_relay.consumer_offsets SET updated_at = now()
		WHERE consumer = $1 AND owner_id = $2 AND owner_generation = $3`,
		c.cfg.Name, c.cfg.OwnerID, generation)
	if err != nil {
		return nil, fmt.Errorf("check lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errLeaseLost
	}
	if herr := c.callHandler(ctx, tx, []outbox.Row{r}); herr != nil {
		return herr, nil
	}
	if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.consumer_dead_letters WHERE consumer = $1 AND seq = $2",
		c.cfg.Name, r.Seq); err != nil {
		return nil, fmt.Errorf("remove dead letter: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit dead letter retry: %w", err)
	}
	c.m.processed.Inc()
	return nil, nil
}
