package storerules

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// fromArgs parses args with Flags alone and maps them.
func fromArgs(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	var got Config
	var mapErr error
	app := &cli.App{Name: "x", Flags: Flags(), Writer: io.Discard, ErrWriter: io.Discard,
		Action: func(c *cli.Context) error { got, mapErr = FromFlags(c); return nil }}
	require.NoError(t, app.RunContext(context.Background(), append([]string{"x"}, args...)))
	return got, mapErr
}

// TestDefaultsAreTheProtocols: with no flag set, the rules are the ones the
// relay had before they were declared here.
func TestDefaultsAreTheProtocols(t *testing.T) {
	got, err := fromArgs(t)
	require.NoError(t, err)
	require.Equal(t, Default(), got)
	require.Equal(t, protocol.DefaultLimits(), got.Limits(protocol.DefaultLimits()))
	require.Equal(t, store.DefaultPendingLimits(), got.Pending)
}

func TestFromFlags(t *testing.T) {
	got, err := fromArgs(t, "--default-topic", " Lounge ", "--allowed-topics", "Lounge,Go", "--max-topics-per-event", "2",
		"--created-at-lower-limit", "24h", "--identity-writers", "any", "--pending-per-key", "3", "--require-topic=false")
	require.NoError(t, err)
	l := got.Limits(protocol.DefaultLimits())
	require.Equal(t, "lounge", l.DefaultTopic)
	require.Equal(t, map[string]bool{"lounge": true, "go": true}, l.AllowedTopics)
	require.Equal(t, 2, l.MaxTopics)
	require.Equal(t, "24h0m0s", l.MaxPastAge.String())
	require.Equal(t, protocol.IdentityWritersAny, l.IdentityWriters)
	require.False(t, l.RequireTopic)
	require.Equal(t, 3, got.Pending.PerKey)
	require.Equal(t, protocol.DefaultLimits().MaxFilters, l.MaxFilters, "what is not a store rule stays the base's")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--default-topic", "  "}, "normalises to nothing"},
		{[]string{"--default-topic", "lounge", "--allowed-topics", "go"}, "not an allowed topic"},
		{[]string{"--identity-writers", "some"}, "identity writers must be"},
		{[]string{"--max-topics-per-event", "0"}, "MaxTopics must be positive"},
		{[]string{"--pending-max", "0"}, "pending limits"},
	} {
		_, err := fromArgs(t, tc.args...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
