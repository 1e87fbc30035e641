package indexer

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestVersionThatComesBackInOneBatch: article version A, a newer version B that
// replaces it, B deleted (NIP-09), so the store makes A effective again: the
// outbox reads `A upsert, B upsert, B delete, A upsert`. Applied in one batch,
// the index holds A's document and only it.
func TestVersionThatComesBackInOneBatch(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.stop() // the four rows wait for one batch
	tags := nostr.Tags{{"d", "x"}, topic("go")}
	vA := n.event(t, 0, 30023, base+100, tags, "version A about channels")
	vB := n.event(t, 0, 30023, base+200, tags, "version B about channels")
	n.publish(t, vA)
	n.publish(t, vB)
	n.publish(t, n.event(t, 0, 5, base+300, nostr.Tags{{"e", vB.ID}}, ""))
	ctx := context.Background()
	rows, err := outbox.ReadAfter(ctx, n.db.Pool, 0, 100, nil)
	require.NoError(t, err)
	var shape []string
	for _, r := range rows {
		if r.Kind == 30023 {
			shape = append(shape, map[string]string{vA.ID: "A", vB.ID: "B"}[r.EventID]+" "+string(r.Op))
		}
	}
	require.Equal(t, []string{"A upsert", "B upsert", "B delete", "A upsert"}, shape, "the outbox shape under test")

	n.start(t)
	n.sync(t)
	dq, err := n.db.Pool.Query(ctx, "SELECT event_id FROM cn_index.documents")
	require.NoError(t, err)
	docs, err := pgx.CollectRows(dq, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{vA.ID}, docs, "A's document, and only it")
	require.Equal(t, []string{vA.ID}, n.search(t, "channels", SearchParams{}))
}
