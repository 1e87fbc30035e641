package store

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/protocol"
)

// TestDecideRoleAfterItsDeletion: a role defined again is stamped after the
// node's deletion of its earlier definition, even one stamped later than the
// plan's clock and than every stored version (another relay's clock ahead),
// so the new 33534 is not covered by the deletion.
func TestDecideRoleAfterItsDeletion(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	self, _ := nostr.GetPublicKey(sk)
	p := newPlan(nil, time.Unix(1000, 0), protocol.DefaultTopicRules())
	mp := partOf[*membershipPart](p)
	mp.mship = &Membership{Self: self, Sign: func(ev *nostr.Event) error { return ev.Sign(sk) }, Mode: membership.Open}
	key := membership.RoleAddress(self, "mod")
	p.versions[key] = []*stored{{id: "v1", pubkey: self, kind: membership.KindRole, createdAt: 990, effectiveKey: key, deleted: true}}
	p.tombAddr[key] = 1005
	mp.mchanges = []membership.Change{{Op: membership.OpSetRole, Role: "mod", Patch: membership.RolePatch{Label: new(string)}}}
	p.decide()
	require.NoError(t, p.finish())
	require.Equal(t, []membership.Outcome{membership.Defined}, mp.moutcomes)
	require.Equal(t, int64(1006), mp.mdefs["mod"].At)
	st := p.byID[mp.mdefs["mod"].EventID]
	require.NotNil(t, st)
	require.False(t, st.deleted)
}
