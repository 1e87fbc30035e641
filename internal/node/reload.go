package node

import (
	"context"
	"slices"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust/gate"
)

// relayLive are the parts of a running relay a configuration reload changes.
type relayLive struct {
	relay      *relay.Relay
	store      *store.Store
	api        *relayadmin.API
	ranks      *gate.Gate          // --min-rank
	joinRanks  *gate.Gate          // --group-admit-min-rank; nil without groups
	admitRanks *gate.Gate          // --admit-min-rank; nil without NIP-43
	members    *membership.Service // nil without NIP-43
	groups     store.Groups        // the groups' policy as set at start (Sign nil: no groups)
	self       string              // the node's key, exempt from the rank gates
}

// applyRelayReload installs the live settings of next (cmd/relay's live
// flags) into the relay started with start; everything else keeps its
// running value. It checks all it can before it changes anything, and undoes
// what it changed when a later step fails: a refused reload leaves the relay
// as it was.
//
// What is live: the relay's Live part (relay.Live: limits, topic rules,
// rates, subscriptions, connections per address, query timeout, the admins
// who read every group), the store's topic rules (allowed topics, default
// topic, topics per event, identity writers), the NIP-86 admins
// (relayadmin.API.SetAdmins), the NIP-29 policy's admins and admission rank
// (store.Store.SetGroups), and the rank gates' thresholds and exemptions
// (--min-rank, --group-admit-min-rank, --admit-min-rank: gate.Gate.SetPolicy,
// which reads the ranks again at once). The admins are made NIP-43 members
// at start only (membership.Service.EnsureAdmins): a new admin manages
// members through NIP-86 at once, and is listed as a member after a restart.
func applyRelayReload(ctx context.Context, start, next RelayOptions, live relayLive) error {
	l := next.Relay.LiveOf()
	if start.NodeKey.PubKey != "" {
		l.GroupAdmins = slices.Clone(next.AdminPubkeys)
	}
	if err := live.relay.CheckLive(l); err != nil {
		return err
	}
	var hosted store.Groups
	if live.groups.Sign != nil {
		hosted = live.groups
		hosted.Policy.Admins = map[string]bool{}
		for _, pk := range next.AdminPubkeys {
			hosted.Policy.Admins[pk] = true
		}
		hosted.Policy.AdmitMinRank = next.GroupAdmitMinRank
		if err := hosted.Validate(); err != nil {
			return err
		}
	}
	exempt := slices.Clone(next.AdminPubkeys)
	if live.self != "" {
		exempt = append(exempt, live.self)
	}
	// The gates read the ranks for their new policy now; a failure undoes
	// the ones already set.
	type step struct {
		g            *gate.Gate
		rank         int
		exempt       []string
		oldRank      int
		oldExemption []string
	}
	var steps []step
	for _, st := range []step{{g: live.ranks, rank: next.MinRank, exempt: exempt},
		{g: live.joinRanks, rank: next.GroupAdmitMinRank, exempt: exempt},
		{g: live.admitRanks, rank: next.AdmitMinRank}} {
		if st.g == nil {
			continue
		}
		st.oldRank, st.oldExemption = st.g.Policy()
		if err := st.g.SetPolicy(ctx, st.rank, st.exempt); err != nil {
			for _, done := range steps {
				_ = done.g.SetPolicy(context.WithoutCancel(ctx), done.oldRank, done.oldExemption)
			}
			return err
		}
		steps = append(steps, st)
	}
	if err := live.relay.SetLive(l); err != nil {
		return err // CheckLive passed: not reached
	}
	rules := next.Relay.Limits.TopicRules
	rules.RequireTopic = start.Relay.Limits.TopicRules.RequireTopic // a restart setting (relay.Live)
	live.store.SetRules(rules)
	live.api.SetAdmins(next.AdminPubkeys)
	if hosted.Sign != nil {
		_ = live.store.SetGroups(hosted) // validated above
	}
	return nil
}

// reloadMethod is the NIP-86 method reloadconfig: it reloads this relay
// process's configuration as SIGHUP does and answers what changed, or the
// reason the new configuration was refused (a 400: nothing changed).
type reloadMethod func(context.Context) (daemon.Result, error)

func (m reloadMethod) Methods() []nip86.Method {
	return []nip86.Method{{Name: "reloadconfig", Min: 0, Max: 0, Do: func(ctx context.Context, _ *nip86.Call) (any, error) {
		res, err := m(ctx)
		if err != nil {
			return nil, &nip86.BadRequest{Reason: "configuration refused, the running one stays: " + err.Error()}
		}
		return map[string]any{"generation": res.Generation, "changed": orEmpty(res.Changed), "needs_restart": orEmpty(res.NeedsRestart)}, nil
	}}}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
