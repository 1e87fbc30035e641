package devnode

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDaemonsDoNotLinkTheDevServers: the daemons' binaries link neither the
// embedded Postgres nor nats-server nor the status page; only cnctl (through
// this package) does.
func TestDaemonsDoNotLinkTheDevServers(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	forbidden := []string{
		"github.com/nats-io/nats-server/",
		"github.com/fergusstrange/embedded-postgres",
		"github.com/kukuri/communitynode/internal/pgembed",
		"github.com/kukuri/communitynode/internal/devnode",
		"github.com/kukuri/communitynode/internal/dashboard",
	}
	for _, cmd := range []string{"relay", "indexer", "moderator", "trust", "bridge"} {
		out, err := exec.Command(goTool, "list", "-deps", "../../cmd/"+cmd).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				require.False(t, strings.HasPrefix(dep, f), "cmd/%s links %s", cmd, dep)
			}
		}
	}
	out, err := exec.Command(goTool, "list", "-deps", "../../cmd/cnctl").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "github.com/kukuri/communitynode/internal/devnode\n", "the check lists real dependencies")
}
