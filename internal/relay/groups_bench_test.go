package relay

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/loadgen"
)

// TestGroupBenchWorkloads: the benchmarks of docs/benchmarks.md (cnctl bench
// join, cnctl bench ingest --group) run against the relay's group path under
// the default policy (creators: community members): every join is accepted
// and seen live (the node's 9000 and a 39002 listing the joiner), every
// group message accepted.
func TestGroupBenchWorkloads(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, nil)
	ctx := context.Background()
	jr, err := loadgen.Joins(ctx, loadgen.JoinConfig{URL: g.url, Joins: 8, Warmup: 2, Group: "bench-joins", Topic: "go", Timeout: waitTimeout})
	require.NoError(t, err)
	require.Zero(t, jr.Failed(), "refused %s, errors %s", jr.Refused, jr.Errors)
	require.Equal(t, 8, jr.Accepted)
	require.Equal(t, 8, jr.Put.Count)
	require.Equal(t, 8, jr.Members.Count)
	require.Positive(t, jr.Members.P50)

	ir, err := loadgen.Ingest(ctx, loadgen.IngestConfig{URL: g.url, Connections: 2, Events: 40, Authors: 4, Topic: "go",
		Kind: loadgen.KindGroupChat, Group: "bench-chat", Pipeline: 1, Timeout: waitTimeout})
	require.NoError(t, err)
	require.Equal(t, 40, ir.Accepted, "rejected %s, errors %s", ir.RejectedBy, ir.Errors)
	evs := g.query(t, dial(t, g.url), map[string]any{"kinds": []int{9}, "#h": []string{"bench-chat"}, "limit": 100})
	require.Len(t, evs, 40)

	// A second run uses the groups as they are.
	jr, err = loadgen.Joins(ctx, loadgen.JoinConfig{URL: g.url, Joins: 2, Group: "bench-joins", Topic: "go", Timeout: waitTimeout})
	require.NoError(t, err)
	require.Zero(t, jr.Failed())
}
