package relay

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
)

// TestGroupMetrics: the relay counts its answers to group events by class
// and result (and no other event), and the groups collector reports the
// groups by flags, their members and the pending join requests.
func TestGroupMetrics(t *testing.T) {
	t.Parallel()
	g := startGroupRelay(t, func(p *groups.Policy) { p.Creators = groups.CreatorsAny })
	c := dial(t, g.url)
	alice, bob, carol, dave := newKey(t), newKey(t), newKey(t), newKey(t)
	c.accepted(alice.note(t, "not a group event", nil))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("tea")}, ""))
	c.accepted(alice.signed(t, groups.KindCreateGroup, nostr.Tags{h("chat")}, ""))
	c.accepted(alice.signed(t, groups.KindEditMetadata, nostr.Tags{h("tea"), {"name", "Tea"}, {"closed"}, {"restricted"}}, ""))
	c.accepted(bob.signed(t, groups.KindJoinRequest, nostr.Tags{h("chat")}, ""))
	c.refused(carol.signed(t, groups.KindJoinRequest, nostr.Tags{h("tea")}, ""), "restricted: pending review")
	c.refused(dave.signed(t, 9, nostr.Tags{h("tea")}, "hi"), "restricted: only members")
	c.refused(dave.signed(t, 9, nostr.Tags{h("nope")}, "hi"), "restricted: unknown group")
	c.refused(dave.signed(t, groups.KindPutUser, nostr.Tags{h("chat"), {"p", dave.pk}}, ""), "restricted: your roles")
	c.accepted(bob.signed(t, 9, nostr.Tags{h("chat")}, "hello"))

	ev := func(class, result string) float64 {
		return testutil.ToFloat64(g.m.groupEvents.WithLabelValues(class, result))
	}
	require.Equal(t, 3.0, ev("moderation", "accepted"))
	require.Equal(t, 1.0, ev("moderation", "role"))
	require.Equal(t, 1.0, ev("join", "accepted"))
	require.Equal(t, 1.0, ev("join", "pending"))
	require.Equal(t, 1.0, ev("message", "members_only"))
	require.Equal(t, 1.0, ev("message", "unknown_group"))
	require.Equal(t, 1.0, ev("message", "accepted"))
	require.Equal(t, 7, testutil.CollectAndCount(g.m.groupEvents), "one series per class and result seen; the kind 1 is not a group event")

	col := &groups.Collector{Q: g.db.Pool}
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(`
# HELP cn_relay_group_members Members of the NIP-29 groups that exist (not deleted), summed over groups: node-wide.
# TYPE cn_relay_group_members gauge
cn_relay_group_members 3
# HELP cn_relay_group_pending_joins Join requests (kind 9021) waiting for a group admin (closed groups, no valid invite code), in groups that exist: node-wide.
# TYPE cn_relay_group_pending_joins gauge
cn_relay_group_pending_joins 1
`), groups.MetricMembers, groups.MetricPending))
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(`
# HELP cn_relay_groups NIP-29 groups this node hosts, by flags (open, closed, restricted, closed_restricted, deleted): node-wide, the same on every relay process (read cn_relay.groups at scrape time, cached for 10 s).
# TYPE cn_relay_groups gauge
cn_relay_groups{flags="closed"} 0
cn_relay_groups{flags="closed_restricted"} 1
cn_relay_groups{flags="deleted"} 0
cn_relay_groups{flags="open"} 1
cn_relay_groups{flags="restricted"} 0
`), groups.MetricGroups))
}
