package node

import (
	"context"
	"slices"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust/gate"
)

// relayLive are the parts of a running relay a configuration reload changes.
type relayLive struct {
	relay *relay.Relay
	store *store.Store
	api   *relayadmin.API
	ranks *gate.Gate
	self  string // the node's key, exempt from the rank gate
}

// applyRelayReload installs the live settings of next (cmd/relay's live
// flags) into the relay started with start; everything else keeps its
// running value. It checks all it can before it changes anything: a refused
// reload leaves the relay as it was.
//
// What is live: the relay's Live part (relay.Live: limits, topic rules,
// rates, subscriptions, connections per address, query timeout, the admins
// who read every group), the store's topic rules (allowed topics, default
// topic, topics per event, identity writers), the NIP-86 admins
// (relayadmin.API.SetAdmins) and the rank gate's threshold and exemptions
// (--min-rank, the admins: gate.Gate.SetPolicy). The admins' other roles
// (NIP-29 group creation with --group-creators admins, NIP-43 membership)
// take the new list at a restart.
func applyRelayReload(ctx context.Context, start, next RelayOptions, live relayLive) error {
	l := next.Relay.LiveOf()
	if start.NodeKey.PubKey != "" {
		l.GroupAdmins = slices.Clone(next.AdminPubkeys)
	}
	if err := live.relay.CheckLive(l); err != nil {
		return err
	}
	exempt := slices.Clone(next.AdminPubkeys)
	if live.self != "" {
		exempt = append(exempt, live.self)
	}
	if err := live.ranks.SetPolicy(ctx, next.MinRank, exempt); err != nil {
		return err
	}
	if err := live.relay.SetLive(l); err != nil {
		return err // CheckLive passed: not reached
	}
	rules := next.Relay.Limits.TopicRules
	rules.RequireTopic = start.Relay.Limits.TopicRules.RequireTopic // a restart setting (relay.Live)
	live.store.SetRules(rules)
	live.api.SetAdmins(next.AdminPubkeys)
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
