package backoff

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPkgImportsNothingInternal: the packages under pkg/ are the node's
// public API (a consumer written outside this module builds on pkg/consumer
// and pkg/outbox), so none of them may link a package under internal/,
// which Go would refuse such a consumer.
func TestPkgImportsNothingInternal(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "../...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		require.NotContains(t, dep, "github.com/kukuri/communitynode/internal/", "a package under pkg/ links %s", dep)
	}
	require.Contains(t, deps, "github.com/kukuri/communitynode/pkg/consumer", "the check lists real dependencies")
}
