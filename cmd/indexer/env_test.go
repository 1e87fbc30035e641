package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// TestNATSURLEnv: the indexer reads the NATS URL from CN_NATS_URL, the name
// the bridge and cnctl read, and still from its old name CN_INDEXER_NATS_URL;
// the new name wins when both are set.
func TestNATSURLEnv(t *testing.T) {
	read := func() string {
		t.Helper()
		app := newApp(io.Discard, io.Discard)
		var got string
		app.Action = func(c *cli.Context) error { got = c.String("nats-url"); return nil }
		require.NoError(t, app.Run([]string{"indexer"}))
		return got
	}
	t.Setenv("CN_INDEXER_NATS_URL", "nats://old.example:4222")
	require.Equal(t, "nats://old.example:4222", read(), "the old name")
	t.Setenv("CN_NATS_URL", "nats://new.example:4222")
	require.Equal(t, "nats://new.example:4222", read(), "the shared name, first")
	t.Setenv("CN_INDEXER_NATS_URL", "")
	require.Equal(t, "nats://new.example:4222", read(), "the shared name alone")
}
