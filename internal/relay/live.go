package relay

import (
	"fmt"
	"slices"
	"time"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Live is the part of Config that can change while the relay runs
// (SetLive, on a configuration reload). The relay keeps it as one snapshot
// swapped atomically and reads it at each use, never copying it into
// connections or other long-lived parts, so a change reaches the connections
// already open at their next message:
//
//   - Limits: the message, event and filter limits and the topic rules
//     (allowed topics, default topic, topics per event, identity writers),
//     except TopicRules.RequireTopic and Search, which stay as at New (the
//     NIP-77 tree and the event cache are built on the first; the second is
//     a restart setting too);
//   - MaxSubscriptions, MaxConnsPerIP (a lower limit closes no connection: it
//     refuses the next ones);
//   - the three rates (EventRatePerIP, EventRatePerPubkey, ReqRatePerIP): the
//     buckets keep their tokens, refilled at the new rate up to the new burst;
//   - QueryTimeout;
//   - GroupAdmins.
//
// One exception: a connection's frame cap (twice Limits.MaxMessageBytes,
// above which its socket is closed rather than answered) is taken when it
// opens; a message above the limit and under that cap is refused "invalid:"
// at once. Everything else in Config is fixed at New (a restart changes it).
type Live struct {
	Limits             protocol.Limits
	MaxSubscriptions   int
	MaxConnsPerIP      int
	EventRatePerIP     Rate
	EventRatePerPubkey Rate
	ReqRatePerIP       Rate
	QueryTimeout       time.Duration
	GroupAdmins        []string
}

// LiveOf returns the live part of c.
func (c Config) LiveOf() Live {
	return Live{Limits: c.Limits, MaxSubscriptions: c.MaxSubscriptions, MaxConnsPerIP: c.MaxConnsPerIP,
		EventRatePerIP: c.EventRatePerIP, EventRatePerPubkey: c.EventRatePerPubkey, ReqRatePerIP: c.ReqRatePerIP,
		QueryTimeout: c.QueryTimeout, GroupAdmins: slices.Clone(c.GroupAdmins)}
}

// withLive returns c with l in place of its live part (RequireTopic and
// Search stay c's).
func (c Config) withLive(l Live) Config {
	l.Limits.TopicRules.RequireTopic, l.Limits.Search = c.Limits.TopicRules.RequireTopic, c.Limits.Search
	c.Limits, c.MaxSubscriptions, c.MaxConnsPerIP = l.Limits, l.MaxSubscriptions, l.MaxConnsPerIP
	c.EventRatePerIP, c.EventRatePerPubkey, c.ReqRatePerIP = l.EventRatePerIP, l.EventRatePerPubkey, l.ReqRatePerIP
	c.QueryTimeout, c.GroupAdmins = l.QueryTimeout, l.GroupAdmins
	return c
}

// CheckLive reports why l cannot replace the relay's live settings: the
// Config it would make (the fixed part as at New) must validate.
func (r *Relay) CheckLive(l Live) error {
	return r.cfg.withLive(l).Validate()
}

// SetLive replaces the relay's live settings with l (see Live), after
// checking them as CheckLive does; on error nothing changed.
func (r *Relay) SetLive(l Live) error {
	next := r.cfg.withLive(l)
	if err := next.Validate(); err != nil {
		return fmt.Errorf("live settings: %w", err)
	}
	nl := next.LiveOf()
	r.eventsPerIP.SetRate(nl.EventRatePerIP)
	r.eventsPerPubkey.SetRate(nl.EventRatePerPubkey)
	r.reqsPerIP.SetRate(nl.ReqRatePerIP)
	r.connsPerIP.setMax(nl.MaxConnsPerIP)
	r.live.Store(&nl)
	return nil
}

// Live returns the live settings in force.
func (r *Relay) Live() Live { return *r.live.Load() }

// lv is the live snapshot in force.
func (r *Relay) lv() *Live { return r.live.Load() }

// limits are the live limits.
func (r *Relay) limits() protocol.Limits { return r.live.Load().Limits }
