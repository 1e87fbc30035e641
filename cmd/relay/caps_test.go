package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
)

// TestCapFlags: the bounds of issue 47 reach the relay's options, from
// their defaults, flags and environment variables; below 1 is refused.
func TestCapFlags(t *testing.T) {
	run := func(args ...string) (node.RelayOptions, error) {
		app := newApp(io.Discard, io.Discard)
		var got node.RelayOptions
		app.Action = func(c *cli.Context) error {
			var err error
			got, err = relayOptions(c)
			return err
		}
		err := app.RunContext(context.Background(), append([]string{"relay", "--database-url", "postgres://x"}, args...))
		return got, err
	}
	got, err := run()
	require.NoError(t, err)
	require.Equal(t, groups.Limits{}.WithDefaults(), got.GroupLimits)
	require.Equal(t, membership.DefaultClaimsPerMember, got.ClaimsPerMember)
	require.Equal(t, membership.DefaultOpenClaims, got.OpenClaims)

	t.Setenv("CN_RELAY_GROUP_MAX_DEPTH", "4")
	t.Setenv("CN_RELAY_MAX_OPEN_CLAIMS", "7")
	got, err = run("--group-max-members", "12", "--max-claims-per-member", "2")
	require.NoError(t, err)
	require.Equal(t, 4, got.GroupLimits.Depth)
	require.Equal(t, 12, got.GroupLimits.Members)
	require.Equal(t, 2, got.ClaimsPerMember)
	require.Equal(t, 7, got.OpenClaims)

	_, err = run("--group-max-invite-codes", "0")
	require.ErrorContains(t, err, "--group-max-invite-codes must be at least 1")
}
