package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/trust"
)

func TestTrustCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	pk := nostr.GetPublicKey
	alice, _ := pk(nostr.GeneratePrivateKey())
	seed, _ := pk(nostr.GeneratePrivateKey())

	// A graph written as the consumer would: seed follows alice.
	for _, q := range []string{
		`INSERT INTO cn_trust.pubkeys (pubkey) SELECT unnest(ARRAY[$1, $2]) WHERE $3 <> ''`,
		`INSERT INTO cn_trust.sets (author, kind, source_id, created_at, targets)
			SELECT (SELECT id FROM cn_trust.pubkeys WHERE pubkey = $2), 3, $3, 1, ARRAY[(SELECT id FROM cn_trust.pubkeys WHERE pubkey = $1)]`,
		`INSERT INTO cn_trust.subjects (id, followers) SELECT id, 1 FROM cn_trust.pubkeys WHERE pubkey = $1 AND $2 <> $3`,
	} {
		_, err := db.Pool.Exec(ctx, q, alice, seed, strings.Repeat("e", 64))
		require.NoError(t, err)
	}
	var err error

	out, err := cnctl(t, "trust", "recompute", "--database-url", db.URL)
	require.NoError(t, err)
	require.Contains(t, out, "recompute requested (request 1)")
	// No daemon here: serve the request as cmd/trust does.
	_, err = trust.Recompute(ctx, db.Pool, trust.Seeds{Pubkeys: []string{seed}, Source: "flag"}, trust.DefaultParams(), 1_700_000_000, 1)
	require.NoError(t, err)
	_, err = cnctl(t, "trust", "recompute", "--database-url", db.URL, "--wait", "--timeout", "1s")
	require.ErrorContains(t, err, "no run served request 2", "nothing serves the second request")

	out, err = cnctl(t, "trust", "show", "--database-url", db.URL, alice)
	require.NoError(t, err)
	require.Regexp(t, `rank\s+\d+`, out)
	require.Regexp(t, `followers\s+1`, out)
	require.Regexp(t, `followed by\s+`+seed+`\s+rank 100`, out)
	require.Contains(t, out, "snapshot seq 0, as_of 1700000000")

	_, err = cnctl(t, "trust", "show", "--database-url", db.URL, strings.Repeat("0", 64))
	require.ErrorIs(t, err, trust.ErrUnknown)
	_, err = cnctl(t, "trust", "show", "--database-url", db.URL, "nope")
	require.Equal(t, 2, exitCode(err), "a bad pubkey is a usage error")
}
