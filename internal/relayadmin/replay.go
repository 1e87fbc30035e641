package relayadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// ReplayMethod is a NIP-86 method of this relay beyond the NIP's list (NIP-86
// lets a relay add methods): ["consumer", to_seq, from_seq] moves the
// consumer's offset back from from_seq to to_seq, so that it applies the
// retained outbox rows (to_seq, from_seq] again. Consumers apply a row
// idempotently, so a replay changes nothing that the rows do not say again.
//
// It only replays. It refuses (400) when the offset is no longer from_seq (the
// admin saw an older state: preview again), when to_seq is above the offset
// (skipping rows stays with `cnctl reset-offset`), and when the outbox is
// pruned past to_seq (the rows are gone). A running instance is reset under
// its feet (consumer.ExecuteReset with force: its next commit fails and it
// reloads the offset). The reset is recorded in
// cn_relay.consumer_offset_resets (requested_by "nip86:<pubkey>") in its own
// transaction, and then in cn_admin.log. The result is
// {"consumer", "from", "to", "replayed"}.
const ReplayMethod = "replayconsumer"

// replay runs ReplayMethod.
func (a *Admin) replay(ctx context.Context, c *nip86.Call) (any, error) {
	actor, params := Actor{Name: c.Actor, Source: c.Source}, c.Raw
	name := c.String(0, "consumer")
	to, from := c.Seq(1, "to_seq"), c.Seq(2, "from_seq")
	if err := c.Err(); err != nil {
		return nil, err
	}
	plan, err := consumer.PlanReset(ctx, a.Pool, name, consumer.ResetTarget{Seq: &to})
	switch {
	case errors.Is(err, consumer.ErrUnknownConsumer):
		return nil, nip86.Refuse("%v", err)
	case err != nil:
		return nil, err
	case plan.From != from:
		return nil, nip86.Refuse("the offset of %s is %d now, not %d: preview again", name, plan.From, from)
	case to > plan.From:
		return nil, nip86.Refuse("%s only replays (to_seq at most the offset %d); skipping rows is `cnctl reset-offset`", ReplayMethod, plan.From)
	case plan.Clamped:
		return nil, nip86.Refuse("the outbox is pruned through seq %d, so rows after %d are gone; replay from %d at the earliest", plan.Horizon, to, plan.Horizon)
	}
	if err := consumer.ExecuteReset(ctx, a.Pool, plan, true, actor.Source+":"+actor.Name); err != nil {
		return nil, nip86.Refuse("%v", err)
	}
	logParams, _ := json.Marshal(params)
	if _, err := a.Pool.Exec(ctx, `INSERT INTO cn_admin.log (method, params, actor, source, at) VALUES ($1, $2, $3, $4, $5)`,
		ReplayMethod, logParams, actor.Name, actor.Source, a.now()); err != nil {
		return nil, fmt.Errorf("%s: log: %w", ReplayMethod, err)
	}
	if a.Acknowledge != nil {
		if err := a.Acknowledge(ctx); err != nil {
			return nil, fmt.Errorf("%s: committed, not acknowledged: %w", ReplayMethod, err)
		}
	}
	return map[string]any{"consumer": name, "from": plan.From, "to": plan.To, "replayed": plan.Replay}, nil
}
