package store

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanKnowsNoRoom: the plan's own files (what every event needs) import
// neither internal/groups nor internal/membership and name none of their
// tables; those live in the parts (parts.go), so a new NIP's room is a new
// part with no change to plan.load, decideEvent or queueWrites.
func TestPlanKnowsNoRoom(t *testing.T) {
	for _, file := range []string{"plan_load.go", "plan_decide.go", "plan_write.go", "ingest.go", "parts.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			for _, room := range []string{"internal/groups", "internal/membership"} {
				require.False(t, strings.HasSuffix(strings.Trim(imp.Path.Value, `"`), room), "%s imports %s", file, room)
			}
		}
		for _, table := range []string{"cn_relay.group", "cn_relay.nip43", "cn_relay.membership"} {
			require.NotContains(t, string(src), table, "%s names a room's table", file)
		}
	}
}
