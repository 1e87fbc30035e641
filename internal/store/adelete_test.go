package store

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// TestAddressDeletionMarksTheStoredVersionDeleted: a NIP-09 deletion by
// address ("a" tag) of a stored version marks that version deleted (as the
// delete row it writes says), not only no longer effective.
func TestAddressDeletionMarksTheStoredVersionDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	v := f.event(t, 0, 30023, 100, nostr.Tags{{"d", "x"}, {"t", "go"}}, "article")
	require.True(t, f.ingest(t, v)[0].OK)
	pk, _ := nostr.GetPublicKey(f.keys[0])
	del := f.event(t, 0, 5, 200, nostr.Tags{{"a", "30023:" + pk + ":x"}}, "")
	require.True(t, f.ingest(t, del)[0].OK)
	var reason *string
	var effective bool
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		"SELECT deleted_reason, is_effective FROM cn_relay.events WHERE id = $1", v.ID).Scan(&reason, &effective))
	require.False(t, effective)
	require.NotNil(t, reason, "the deleted version is marked deleted")
	require.Equal(t, "nip09", *reason)
	rows, _ := f.rows(t, 0)
	require.Contains(t, rows, "delete "+v.ID[:8]+" go 30023:"+pk+":x nip09")
}
