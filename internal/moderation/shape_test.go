package moderation

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestVersionThatComesBackInOneBatch: article version A, a newer version B that
// replaces it, B deleted (NIP-09), so the store makes A effective again: the
// outbox reads `A upsert, B upsert, B delete, A upsert`. Both versions match a
// label rule. Applied in one batch or row by row, A keeps its label and B's
// label is taken back, and both runs end in the same state.
func TestVersionThatComesBackInOneBatch(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.applyRules(t, `
rules:
  - {name: casino, kinds: [30023], content_regex: "(?i)casino", label: spam, action: label}
`)
	a := newAuthor(t)
	tags := nostr.Tags{{"d", "x"}, {"t", "a"}}
	vA := sign(t, a, 30023, 1_700_000_100, tags, "casino, version A")
	vB := sign(t, a, 30023, 1_700_000_200, tags, "casino, version B")
	ctx := context.Background()
	for _, ev := range []*nostr.Event{vA, vB, sign(t, a, 5, 1_700_000_300, nostr.Tags{{"e", vB.ID}}, "")} {
		res, err := n.store.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
	}
	rows, err := outbox.ReadAfter(ctx, n.db.Pool, 0, 100, nil)
	require.NoError(t, err)
	var shape []string
	for _, r := range rows {
		if r.Kind == 30023 {
			shape = append(shape, map[string]string{vA.ID: "A", vB.ID: "B"}[r.EventID]+" "+string(r.Op))
		}
	}
	require.Equal(t, []string{"A upsert", "B upsert", "B delete", "A upsert"}, shape, "the outbox shape under test")

	labels := func() map[string]bool { // target -> label live (not retracted)
		rows, err := n.db.Pool.Query(ctx, "SELECT target_id, retracted_by IS NULL FROM cn_moderation.labels")
		require.NoError(t, err)
		out := map[string]bool{}
		for rows.Next() {
			var id string
			var live bool
			require.NoError(t, rows.Scan(&id, &live))
			out[id] = live
		}
		require.NoError(t, rows.Err())
		return out
	}
	var states []string
	for _, batch := range []int{0, 1} { // one batch, then a replay row by row
		n.batch = batch
		n.startModerator(t)
		n.sync(t, ConsumerName)
		n.stopMod()
		require.Equal(t, map[string]bool{vA.ID: true, vB.ID: false}, labels(), "batch size %d", batch)
		states = append(states, dump(t, n))
		resetTo(t, n, 0)
	}
	require.Equal(t, states[0], states[1], "one batch and row by row end alike")
}
