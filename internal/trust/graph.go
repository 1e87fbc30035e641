package trust

import (
	"context"
	"sync"

	"github.com/kukuri/communitynode/internal/trust/gate"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// ConsumerName is the trust consumer's offset row; Algorithm names the scores
// (declared in the gate package, which the relay links without the rest of trust).
const (
	ConsumerName = "trust-v1"
	Algorithm    = gate.Algorithm
)

// Source event types (cn_trust.sources.etype).
const (
	etPost     = 1
	etReply    = 2
	etReaction = 3
	etRepost   = 4
	etZap      = 5
	etReport   = 6
	etLabel    = 7
)

// Graph applies outbox rows to the graph tables and counters. It is the
// consumer's Handler: everything it writes goes through the consumer's
// transaction, so it commits with the offset.
type Graph struct {
	// NodePubKey: 1985 labels by this key are graph input (other labels are not).
	NodePubKey string

	mu      sync.Mutex
	ids     map[string]int32 // committed pubkey ids (a cache; the table is the truth)
	pending map[string]int32 // ids inserted by the batch in flight
}

const maxCachedIDs = 4 << 20

// graphKinds are the kinds the graph reads; other rows are skipped unread.
func graphKind(kind int) bool {
	switch kind {
	case 1, 1111, 3, 10000, 6, 16, 7, 9735, 1984, 1985:
		return true
	}
	return false
}

type op struct {
	upsert bool
	id     string
}

// Handle applies rows in seq order (see the package comment): it reads what
// the rows' events name (graph_read.go), applies the changes in order to an
// in-memory overlay (graph_apply.go) and writes the difference in the
// consumer's transaction (graph_write.go), so the graph commits with the offset.
func (g *Graph) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	g.mu.Lock()
	g.pending = nil
	g.mu.Unlock()
	ops, upserts, all := opsOf(rows)
	if len(ops) == 0 {
		return nil
	}
	b, err := g.read(ctx, tx, upserts, all)
	if err != nil {
		return err
	}
	delta, changedSets := b.apply(g, ops)
	return writeGraph(ctx, tx, b.srcs, b.existed, b.sets, changedSets, delta)
}

// opsOf turns rows into ops in seq order, with the events the upserts name
// (to read) and every event named (to look up its source row and set).
func opsOf(rows []outbox.Row) (ops []op, upserts, all []string) {
	// The rows of one change of one event (one per topic) are adjacent in seq:
	// they are one op. Rows of the same event that are not adjacent are separate
	// changes and are applied in order: `A upsert, B upsert, B delete, A upsert`
	// (follow list A replaced by B, B deleted, A effective again) needs A's
	// second upsert.
	listed, loaded := map[string]bool{}, map[string]bool{}
	for i, r := range rows {
		if !graphKind(r.Kind) {
			continue
		}
		up := r.Op == outbox.OpUpsert
		if i > 0 && rows[i-1].EventID == r.EventID && rows[i-1].Op == r.Op {
			continue
		}
		ops = append(ops, op{upsert: up, id: r.EventID})
		if !listed[r.EventID] {
			listed[r.EventID] = true
			all = append(all, r.EventID)
		}
		if up && !loaded[r.EventID] {
			loaded[r.EventID] = true
			upserts = append(upserts, r.EventID)
		}
	}
	return ops, upserts, all
}
