package relay

import (
	"regexp"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
)

// TestHostileGroupCapsOverWire: the group bounds of issue 47 as a client
// sees them: OK false with restricted: and the reason, and nothing of the
// refused event in the group's state (TestHostile* in internal/groups and
// internal/store check each bound in full).
func TestHostileGroupCapsOverWire(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) {
		p.Limits = groups.Limits{CreatedPerDay: 1, Members: 2, CodesPerInvite: 2}
	})
	c := dial(t, g.url)
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	c.accepted(alice.note(t, "hello", nil))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("caps")}, ""))
	c.refused(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("caps2")}, ""), regexp.QuoteMeta(groups.ReasonCreatedPerDay(1)))
	c.accepted(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("caps")}, ""))
	c.refused(carol.signed(t, groups.KindJoinRequest, nostr.Tags{h("caps")}, ""), regexp.QuoteMeta(groups.ReasonMembersCap(2)))
	c.refused(alice.signed(t, groups.KindPutUser, nostr.Tags{h("caps"), {"p", carol.pk}}, ""), regexp.QuoteMeta(groups.ReasonMembersCap(2)))
	require.ElementsMatch(t, []string{alice.pk, bob.pk}, members(g.stateOf(t, c, groups.KindMembers, "caps")))
	c.refused(alice.signed(t, groups.KindCreateInvite, nostr.Tags{h("caps"), {"code", "a"}, {"code", "b"}, {"code", "c"}}, ""),
		regexp.QuoteMeta(groups.ReasonCodesPerInvite(2)))
	var withheld int
	require.NoError(t, g.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM cn_relay.group_withheld`).Scan(&withheld))
	require.Zero(t, withheld)
}
