package testkit

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Ingester is what GroupFlood needs of a store (store.Store).
type Ingester interface {
	Ingest(ctx context.Context, evs []*nostr.Event) ([]protocol.Verdict, error)
}

// GroupFlood has a new key create group id and add n made-up members with
// one kind 9000 each, at created_at from at on (returned: the last one used),
// on a store that hosts groups (HostGroups with groups.CreatorsAny):
// the node re-signs the group's member list (39002) n times, so the outbox
// holds n upsert rows of versions superseded since, which the store removes
// (issue 47). Every event must be accepted.
func GroupFlood(t testing.TB, st Ingester, id string, n int, at nostr.Timestamp) nostr.Timestamp {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	send := func(kind int, tags nostr.Tags) {
		t.Helper()
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", id}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		res, err := st.Ingest(context.Background(), []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, "kind %d: %s", kind, res[0].Message)
	}
	send(9007, nil)
	for range n {
		pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
		send(9000, nostr.Tags{{"p", pk}})
	}
	return at
}
