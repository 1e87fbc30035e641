package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// TestExampleConfig loads ops/communitynode.yaml (the example in the docs)
// into relay: every key of its section is one of relay's flags, and the values
// reach them.
func TestExampleConfig(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	var dbURL, listen string
	app.Action = func(c *cli.Context) error {
		dbURL, listen = c.String("database-url"), c.String("listen")
		return nil
	}
	require.NoError(t, app.Run([]string{"relay", "--config", "../../ops/communitynode.yaml"}))
	require.Equal(t, "postgres://cn@127.0.0.1:5432/node?sslmode=disable", dbURL)
	require.Equal(t, "127.0.0.1:7777", listen)
}
