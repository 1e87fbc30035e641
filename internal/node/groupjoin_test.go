package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust/gate"
)

// TestGroupJoinsByRank: with --group-admit-min-rank, a join request to an
// open group is honoured at once from a key the trust daemon ranks at or
// above it (the OK message says so), and kept for the group's admins from
// any other; before the first trust run every join is honoured as without
// the setting; closed groups still need an invite code.
func TestGroupJoinsByRank(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	ctx := context.Background()
	k := testkit.SecretKeys(5)
	seed, alice, mallory, eve, admin := k[0], k[1], k[2], k[3], k[4]
	e.ingest(t, testkit.Follows(t, seed, 100, testkit.Pub(alice)), note(t, alice, 100), note(t, mallory, 100))

	// The gate the relay builds for joins (node.Relay), read from cn_trust.
	ranks := &gate.Gate{Pool: e.db.Pool, MinRank: 1, Exempt: []string{e.node.PubKey}}
	require.NoError(t, ranks.Load(ctx))
	policy := groups.Policy{Node: e.node.PubKey, Creators: groups.CreatorsAny, AdmitMinRank: 1}
	testkit.HostGroups(t, e.store, testkit.GroupOpts{Node: e.node, Policy: policy, Admission: JoinAdmission(ranks)})
	answer := func(ev *nostr.Event) protocol.Verdict {
		t.Helper()
		res, err := e.store.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		return res[0]
	}
	now := int64(nostr.Now())
	join := func(sk, group string, at int64) *nostr.Event {
		return testkit.Sign(t, sk, groups.KindJoinRequest, at, nostr.Tags{{"h", group}}, "")
	}
	require.True(t, answer(testkit.Sign(t, admin, groups.KindCreateGroup, now, nostr.Tags{{"h", "open"}}, "")).OK)
	require.True(t, answer(testkit.Sign(t, admin, groups.KindCreateGroup, now, nostr.Tags{{"h", "shut"}}, "")).OK)
	require.True(t, answer(testkit.Sign(t, admin, groups.KindEditMetadata, now+1, nostr.Tags{{"h", "shut"}, {"closed"}}, "")).OK)

	// No trust run yet: ranks cannot tell, every join to an open group is honoured.
	require.Equal(t, protocol.Verdict{OK: true}, answer(join(eve, "open", now)))

	// A trust run: the seed follows alice; mallory is unranked.
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Trust(tctx, TrustOptions{DatabaseURL: e.db.URL, Listen: "127.0.0.1:0", NodeKey: e.node, Seeds: []string{testkit.Pub(seed)},
			RecomputeInterval: time.Hour, PublishInterval: time.Hour, AsOf: func() int64 { return asOf }, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	var rank int
	require.Eventually(t, func() bool {
		return e.db.Pool.QueryRow(ctx, `SELECT rank FROM cn_trust.scores WHERE pubkey = $1`, testkit.Pub(alice)).Scan(&rank) == nil
	}, 20*time.Second, 20*time.Millisecond, "a trust run ranks alice")
	require.Positive(t, rank)
	ranks.MinRank, policy.AdmitMinRank = rank, rank // alice exactly at the threshold
	require.NoError(t, ranks.Load(ctx))
	testkit.HostGroups(t, e.store, testkit.GroupOpts{Node: e.node, Policy: policy, Admission: JoinAdmission(ranks)})

	require.Equal(t, protocol.Verdict{OK: true, Message: groups.MessageAdmittedRank(rank)}, answer(join(alice, "open", now)))
	pending := join(mallory, "open", now)
	require.Equal(t, protocol.Verdict{Message: groups.ReasonPendingRank(rank), Code: groups.CodePendingRank}, answer(pending))
	require.Equal(t, protocol.Verdict{Message: groups.ReasonPendingRank(rank), Code: groups.CodePendingRank}, answer(pending), "sent again: still pending")
	require.Equal(t, protocol.Verdict{Message: groups.ReasonPending, Code: groups.RefusePending.Code}, answer(join(alice, "shut", now)), "a closed group needs an invite code, whatever the rank")

	// The admins read the pending request and let mallory in.
	var pendingIDs []string
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(e.id), '{}') FROM cn_relay.events e
		JOIN cn_relay.event_tags g ON g.event_id = e.id AND g.name = 'h' AND g.value = 'open' WHERE e.kind = 9021 AND e.pubkey = $1`, testkit.Pub(mallory)).Scan(&pendingIDs))
	require.Equal(t, []string{pending.ID}, pendingIDs)
	require.True(t, answer(testkit.Sign(t, admin, groups.KindPutUser, now+2, nostr.Tags{{"h", "open"}, {"p", testkit.Pub(mallory)}}, "")).OK)
	require.Equal(t, protocol.Verdict{Message: groups.ReasonMember, Code: groups.RefuseMember.Code}, answer(join(mallory, "open", now+3)))
}
