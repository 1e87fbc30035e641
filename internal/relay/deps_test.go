package relay

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRelayDoesNotImportTheStore: the relay owns its read contract (Store,
// Reader, Primary and the types of package readpath); it depends on neither
// of its implementations, the primary's store nor the read replicas, which
// the composition root (package node) wires into Deps.
func TestRelayDoesNotImportTheStore(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		for _, f := range []string{
			"github.com/kukuri/communitynode/internal/store",
			"github.com/kukuri/communitynode/internal/replica",
			"github.com/kukuri/communitynode/internal/node",
		} {
			require.False(t, dep == f || strings.HasPrefix(dep, f+"/"), "package relay links %s", dep)
		}
	}
	require.Contains(t, deps, "github.com/kukuri/communitynode/internal/readpath", "the check lists real dependencies")
}
