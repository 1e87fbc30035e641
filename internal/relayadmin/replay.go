package relayadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
func (a *Admin) replay(ctx context.Context, actor Actor, params []json.RawMessage) (any, error) {
	p := paramReader{params: params}
	name := p.string(0, "consumer")
	to, from := p.seq(1, "to_seq"), p.seq(2, "from_seq")
	if p.err != nil {
		return nil, p.err
	}
	plan, err := consumer.PlanReset(ctx, a.Pool, name, consumer.ResetTarget{Seq: &to})
	switch {
	case errors.Is(err, consumer.ErrUnknownConsumer):
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	case err != nil:
		return nil, err
	case plan.From != from:
		return nil, fmt.Errorf("%w: the offset of %s is %d now, not %d: preview again", ErrBadRequest, name, plan.From, from)
	case to > plan.From:
		return nil, fmt.Errorf("%w: %s only replays (to_seq at most the offset %d); skipping rows is `cnctl reset-offset`", ErrBadRequest, ReplayMethod, plan.From)
	case plan.Clamped:
		return nil, fmt.Errorf("%w: the outbox is pruned through seq %d, so rows after %d are gone; replay from %d at the earliest", ErrBadRequest, plan.Horizon, to, plan.Horizon)
	}
	if err := consumer.ExecuteReset(ctx, a.Pool, plan, true, actor.Source+":"+actor.Name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	logParams, _ := json.Marshal(params)
	if _, err := a.Pool.Exec(ctx, `INSERT INTO cn_admin.log (method, params, actor, source, at) VALUES ($1, $2, $3, $4, $5)`,
		ReplayMethod, logParams, actor.Name, actor.Source, a.now()); err != nil {
		return nil, fmt.Errorf("%s: log: %w", ReplayMethod, err)
	}
	return map[string]any{"consumer": name, "from": plan.From, "to": plan.To, "replayed": plan.Replay}, nil
}

// seq reads a parameter that must be a non-negative integer (an outbox seq).
func (p *paramReader) seq(i int, what string) int64 {
	if i >= len(p.params) {
		p.fail("missing parameter %d (%s)", i+1, what)
		return 0
	}
	var n int64
	if err := json.Unmarshal(p.params[i], &n); err != nil || n < 0 {
		p.fail("parameter %d (%s) must be an outbox seq (an integer, 0 or more)", i+1, what)
	}
	return n
}
