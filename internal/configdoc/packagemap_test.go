package configdoc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackageMapListsEveryPackage: docs/architecture.md's package map (the
// only one; the README links to it) names every package of the module, so
// the two maps of old cannot drift again. A directory of test scripts with Go
// files (test/apps, test/community-app) is named as the directory.
func TestPackageMapListsEveryPackage(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	start := strings.Index(string(doc), "## Package map")
	require.GreaterOrEqual(t, start, 0, "docs/architecture.md has a package map")
	named := map[string]bool{}
	for _, line := range strings.Split(string(doc[start:]), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			named[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	cmd := exec.Command("go", "list", "-tags", "ops apps communityapp", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	var missing []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, "test") && named[strings.TrimSuffix(filepath.Dir(rel), "/")] { // nodetest, pgembedtest, ...: their parent's line
			continue
		}
		if !named[rel] {
			missing = append(missing, rel)
		}
	}
	require.Empty(t, missing, "packages docs/architecture.md's package map does not name")
}
