package store

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
)

// ruleGate is a protocol.GroupGate over GroupAccess's answer.
type ruleGate map[string]protocol.GroupRule

func (g ruleGate) Any() bool { return len(g) > 0 }

func (g ruleGate) Rule(id string, pubkeys []string) (private, hidden, member bool) {
	r, ok := g[id]
	if !ok {
		return false, false, false
	}
	return r.Private, r.Hidden, slices.ContainsFunc(pubkeys, func(pk string) bool { return slices.Contains(r.Readers, pk) })
}

// checkGroupReadRule checks, after a random group history (randomGroupHistory),
// that cn_relay.group_access says what the live states say (groups.Access;
// deleted groups included: read by no one),
// and that the SQL engine applies protocol.Viewer.MayReadGroup exactly: for
// an anonymous reader, each user authenticated alone, and a relay admin,
// Query, Count and SyncItems return the stored events the Go rule lets
// them read, over the rule read back from the database. It returns how many
// deleted groups the rule holds.
func checkGroupReadRule(t *testing.T, st *Store, live map[string]*groups.State, pks []string) (deleted int) {
	t.Helper()
	ctx := context.Background()
	rules, err := st.GroupAccess(ctx, nil)
	require.NoError(t, err)
	want := ruleGate{}
	for id, s := range live {
		if r, ok := groups.Access(s); ok {
			want[id] = r
		}
	}
	require.Equal(t, map[string]protocol.GroupRule(want), rules, "group_access follows the states")
	require.NotEmpty(t, rules, "the history made some group private or hidden")
	for id, r := range rules {
		if r.Deleted {
			deleted++
			require.True(t, r.Private && r.Hidden && len(r.Readers) == 0, "deleted group %s: read by no one", id)
		}
	}

	all := nostr.Filter{Limit: 100_000}
	stored, _, err := st.QuerySnapshot(ctx, []nostr.Filter{all}, protocol.Viewer{Operator: true})
	require.NoError(t, err)
	viewers := []protocol.Viewer{{}, {AllGroups: true, Authed: pks[:1]}}
	for _, pk := range pks {
		viewers = append(viewers, protocol.Viewer{Authed: []string{pk}})
	}
	kept := 0
	for _, v := range viewers {
		var exp []string
		goRule := v
		goRule.Groups = want
		for _, ev := range stored {
			if goRule.MayRead(ev) {
				exp = append(exp, ev.ID)
			}
		}
		kept += len(stored) - len(exp)
		got, _, err := st.QuerySnapshot(ctx, []nostr.Filter{all}, v)
		require.NoError(t, err)
		var ids []string
		for _, ev := range got {
			ids = append(ids, ev.ID)
		}
		require.ElementsMatch(t, exp, ids, "viewer %v: REQ", v)
		n, err := st.Count(ctx, []nostr.Filter{all}, v)
		require.NoError(t, err)
		require.EqualValues(t, len(exp), n, "viewer %v: COUNT", v)
		items, err := st.SyncItems(ctx, nostr.Filter{}, v, 100_000, nil)
		require.NoError(t, err)
		ids = ids[:0]
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		require.ElementsMatch(t, exp, ids, "viewer %v: NIP-77", v)
	}
	require.Positive(t, kept, "some reader was kept from something")
	return deleted
}
