package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleConfigDev: cnctl dev reads the dev section (and the shared
// database-url) of ops/communitynode.yaml into its options; the command line
// overrides the file; a key dev does not have exits 2 naming its line.
func TestExampleConfigDev(t *testing.T) {
	o, err := devOptionsOf(t, "--config", "../../ops/communitynode.yaml")
	require.NoError(t, err)
	require.Equal(t, "postgres://cn@127.0.0.1:5432/node?sslmode=disable", o.DatabaseURL)
	require.Equal(t, ".cn/pg", o.DataDir)

	o, err = devOptionsOf(t, "--config", "../../ops/communitynode.yaml", "--data-dir", "/elsewhere")
	require.NoError(t, err)
	require.Equal(t, "/elsewhere", o.DataDir)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("dev:\n  relay-listen: 127.0.0.1:1\n  relay-listn: x\n"), 0o600))
	out, err := cnctl(t, "dev", "--config", bad)
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err), out)
	require.Contains(t, oneLine(err), `bad.yaml:3: unknown key "relay-listn" in section dev`)
}
