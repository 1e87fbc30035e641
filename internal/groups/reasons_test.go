package groups

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// refusals is reasons.go's table, row by row.
var refusals = []protocol.Reason{RefuseNoGroups, RefuseStateKind, RefuseNoHTag, RefuseManyHTags, RefuseBadID, RefuseUnknown,
	RefuseDeleted, RefuseDeletedID, RefuseExists, RefuseMember, RefuseNotMember, RefuseRestricted, RefusePrivate,
	RefuseManyParents, RefuseBadParent, RefuseBadChild, RefuseDupChild, RefuseSelfParent, RefuseCycle, RefuseNoPinTarget,
	RefusePinKind, RefuseBadPrevious, RefuseLivekit, RefuseBadKinds, RefuseNoUsers, RefuseNoCode, RefuseNoTargets,
	RefuseTargetKind, RefuseStale, RefusePending, RefusePendingCode, RefuseAdminsCreate, RefuseMembersCreate,
	RefuseManyRoles, RefuseManyPins,
	CodePendingRank.With(ReasonPendingRank(10)), CodeUnsupportedKind.With(ReasonUnsupportedKind(9003)),
	CodeKindNotSupported.With(ReasonKindNotSupported(1)), CodeNoParent.With(ReasonNoParent("p")),
	CodeParentAdmin.With(ReasonParentAdmin("p")), CodeMissingChild.With(ReasonMissingChild("c")),
	CodeNotChild.With(ReasonNotChild("c")), CodeLate.With(ReasonLate(DefaultLateWindow)),
	CodeUnknownPrevious.With(ReasonUnknownPrevious([]string{"0123abcd"})), CodeFewPrevious.With(ReasonFewPrevious(2)),
	CodeRole.With(reasonRole("adding users")), CodeCreatedPerDay.With(ReasonCreatedPerDay(3)),
	CodeCreatedInAll.With(ReasonCreatedInAll(3)), CodeMembersCap.With(ReasonMembersCap(3)), CodeDepth.With(ReasonDepth(3)),
	CodeCodesPerInvite.With(ReasonCodesPerInvite(3)), CodeOpenCodes.With(ReasonOpenCodes(3))}

// TestRefusalsTable: each refusal's text starts with its code's NIP-01
// prefix, and each label names one reason (the pending review answers
// share theirs) and is its metric label.
func TestRefusalsTable(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, r := range refusals {
		require.NotEmpty(t, r.Code.Label, r.Text)
		require.Equal(t, protocol.Code{Prefix: r.Code.Prefix}, protocol.UntypedCode(r.Text), "%s: the text's prefix is the code's", r.Code.Label)
		if other, dup := seen[r.Code.Label]; dup {
			require.Equal(t, ResultPending, r.Code.Label, "label %s names %q and %q", r.Code.Label, other, r.Text)
		}
		seen[r.Code.Label] = r.Text
		require.Equal(t, r.Code.Label, ResultLabel(false, r.Code))
	}
}

// TestResultLabelReadsNoText: the group events counter's label comes from
// the answer's code; a refusal not declared yet is labelled by its prefix.
func TestResultLabelReadsNoText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "unknown_group", ResultLabel(false, RefuseUnknown.Code))
	require.Equal(t, ResultPending, ResultLabel(false, CodePendingRank), "a join kept for review on its rank is pending")
	require.Equal(t, "role", ResultLabel(false, CodeRole))
	require.Equal(t, ResultAccepted, ResultLabel(true, protocol.Code{}))
	require.Equal(t, "rate-limited", ResultLabel(false, protocol.UntypedCode("rate-limited: slow down")))
	require.Equal(t, "other", ResultLabel(false, protocol.UntypedCode("no prefix here")))
}

// TestDecideRefusalsCarryCodes: every refusal Decide gives, over kinds,
// authors and states, carries a code whose prefix is its text's.
func TestDecideRefusalsCarryCodes(t *testing.T) {
	t.Parallel()
	node, admin, member, stranger := newUser(t), newUser(t), newUser(t), newUser(t)
	pol := Policy{Node: node.pk, Creators: CreatorsMembers, InviteTTL: 3600e9, AdmitMinRank: 5, MinPrevious: 0}
	s := New("g")
	for _, ev := range []*nostr.Event{
		admin.ev(t, KindCreateGroup, now-100, nostr.Tag{"h", "g"}),
		node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", admin.pk, "admin"}),
		node.ev(t, KindPutUser, now-100, nostr.Tag{"h", "g"}, nostr.Tag{"p", member.pk}),
	} {
		require.True(t, s.Apply(ev, 0))
	}
	closed := s.Clone()
	closed.Meta.Closed, closed.Meta.Restricted = true, true
	deleted := s.Clone()
	deleted.Deleted = Stamp{At: now - 50, ID: strings.Repeat("1", 64)}
	review := func(string) Admission { return AdmitReview }
	refused := map[string]bool{}
	for _, st := range []*State{nil, s, closed, deleted} {
		for _, u := range []user{admin, member, stranger} {
			for _, kind := range []int{9, KindPutUser, KindRemoveUser, KindEditMetadata, KindDeleteEvent, KindCreateGroup,
				KindDeleteGroup, KindCreateInvite, KindJoinRequest, KindLeaveRequest, 9003, 9010, 39000} {
				for _, tags := range []nostr.Tags{nil, {{"h", "g"}}, {{"h", "g"}, {"h", "x"}}, {{"h", "bad id!"}},
					{{"h", "g"}, {"p", stranger.pk}}, {{"h", "g"}, {"code", "nope"}}, {{"h", "g"}, {"parent", "g"}},
					{{"h", "g"}, {"previous", "xyz"}}} {
					for _, at := range []int64{now, now - 3600} {
						d := pol.Decide(st, u.ev(t, kind, at, tags...), Facts{Now: now, Seq: 1, Admission: review,
							Target: func(string) (Target, bool) { return Target{}, false }})
						if d.OK {
							continue
						}
						require.False(t, d.Code.IsZero(), "kind %d %v: %q has no code", kind, tags, d.Message)
						require.Equal(t, protocol.Code{Prefix: d.Code.Prefix}, protocol.UntypedCode(d.Message), d.Message)
						refused[d.Code.Label] = true
					}
				}
			}
		}
	}
	require.Greater(t, len(refused), 10, "the sweep reaches many refusals: %v", refused)
}
