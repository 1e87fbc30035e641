// Package relayadmin is relay management: the state every relay process
// enforces (banned and allowed pubkeys and events, accepted kinds, blocked
// addresses, NIP-11 name, description and icon), the changes an admin makes
// through NIP-86 (with NIP-98 auth) or an operator through cnctl, and the log of
// those changes.
//
// Promises: a change, its effects on stored events (a ban hides the pubkey's
// events for readers with outbox `delete` rows, reason moderation; lifting it
// shows exactly those again) and its log row commit in one transaction, which
// also bumps cn_admin.state.version. Every relay process polls that version
// (Watcher, every 250 ms) and applies the new state within a second.
package relayadmin

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Querier is what loading the state needs (a pool, a connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// State is one version of the management state. It is immutable once loaded.
type State struct {
	Version         int64
	BannedPubkeys   map[string]string // pubkey -> reason
	AllowedPubkeys  map[string]string
	BannedEvents    map[string]string // event id -> reason
	AllowedEvents   map[string]string
	AllowedKinds    map[int]bool
	DisallowedKinds map[int]bool
	BlockedIPs      map[netip.Prefix]string // -> reason
	Info            map[string]string       // name, description, icon
}

// Load reads the current state.
func Load(ctx context.Context, q Querier) (*State, error) {
	s := &State{
		BannedPubkeys: map[string]string{}, AllowedPubkeys: map[string]string{},
		BannedEvents: map[string]string{}, AllowedEvents: map[string]string{},
		AllowedKinds: map[int]bool{}, DisallowedKinds: map[int]bool{},
		BlockedIPs: map[netip.Prefix]string{}, Info: map[string]string{},
	}
	if err := q.QueryRow(ctx, "SELECT version FROM cn_admin.state").Scan(&s.Version); err != nil {
		return nil, fmt.Errorf("load management state: %w", err)
	}
	// each runs sql and hands every row's columns to put.
	each := func(sql string, put func(row pgx.CollectableRow) error) error {
		rows, err := q.Query(ctx, sql)
		if err != nil {
			return fmt.Errorf("load management state: %w", err)
		}
		_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) { return struct{}{}, put(row) })
		if err != nil {
			return fmt.Errorf("load management state: %w", err)
		}
		return nil
	}
	lists := func(table, key string, banned, allowed map[string]string) error {
		return each("SELECT "+key+", status, reason FROM cn_admin."+table, func(row pgx.CollectableRow) error {
			var k, status, reason string
			if err := row.Scan(&k, &status, &reason); err != nil {
				return err
			}
			if status == "banned" {
				banned[k] = reason
			} else {
				allowed[k] = reason
			}
			return nil
		})
	}
	if err := lists("pubkeys", "pubkey", s.BannedPubkeys, s.AllowedPubkeys); err != nil {
		return nil, err
	}
	if err := lists("events", "event_id", s.BannedEvents, s.AllowedEvents); err != nil {
		return nil, err
	}
	if err := each("SELECT kind, allowed FROM cn_admin.kinds", func(row pgx.CollectableRow) error {
		var kind int32
		var allowed bool
		if err := row.Scan(&kind, &allowed); err != nil {
			return err
		}
		if allowed {
			s.AllowedKinds[int(kind)] = true
		} else {
			s.DisallowedKinds[int(kind)] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := each("SELECT prefix, reason FROM cn_admin.ips", func(row pgx.CollectableRow) error {
		var prefix, reason string
		if err := row.Scan(&prefix, &reason); err != nil {
			return err
		}
		p, err := netip.ParsePrefix(prefix)
		if err != nil {
			return fmt.Errorf("stored blocked address %q: %w", prefix, err)
		}
		s.BlockedIPs[p] = reason
		return nil
	}); err != nil {
		return nil, err
	}
	if err := each("SELECT field, value FROM cn_admin.info", func(row pgx.CollectableRow) error {
		var field, value string
		if err := row.Scan(&field, &value); err != nil {
			return err
		}
		s.Info[field] = value
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// PubkeyBanned reports whether pubkey's new events are refused.
func (s *State) PubkeyBanned(pubkey string) bool {
	_, ok := s.BannedPubkeys[pubkey]
	return ok
}

// EventBanned reports whether the event is banned (refused, hidden if stored).
func (s *State) EventBanned(id string) bool {
	_, ok := s.BannedEvents[id]
	return ok
}

// KindAccepted reports whether events of kind are accepted: not disallowed, and
// allowed when any kind is explicitly allowed.
func (s *State) KindAccepted(kind int) bool {
	if s.DisallowedKinds[kind] {
		return false
	}
	return len(s.AllowedKinds) == 0 || s.AllowedKinds[kind]
}

// IPBlocked reports whether a client address (IPv4, IPv6, IPv4-mapped; with or
// without a port) is in a blocked address or prefix.
func (s *State) IPBlocked(ip string) bool {
	if len(s.BlockedIPs) == 0 {
		return false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		ap, perr := netip.ParseAddrPort(ip)
		if perr != nil {
			return false
		}
		addr = ap.Addr()
	}
	addr = addr.Unmap().WithZone("")
	for p := range s.BlockedIPs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// InfoOverride returns the NIP-11 name, description and icon set through NIP-86
// ("" where none was set).
func (s *State) InfoOverride() (name, description, icon string) {
	return s.Info["name"], s.Info["description"], s.Info["icon"]
}

// sortedKinds returns the keys of a kind set in order.
func sortedKinds(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// parsePrefix reads an IP address or a CIDR prefix into its canonical prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p.Addr())).Masked(), nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
	}
	addr = addr.Unmap().WithZone("")
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// unmapBits is how many prefix bits an IPv4-mapped IPv6 address spends on the mapping.
func unmapBits(a netip.Addr) int {
	if a.Is4In6() {
		return 96
	}
	return 0
}

// PubkeyStatuses returns the NIP-86 list each key of pks is on
// (cn_admin.pubkeys): "banned" or "allowed"; a key on neither is absent.
// It reads the table now, not a loaded State: the console's pages show the
// lists as they are.
func PubkeyStatuses(ctx context.Context, q Querier, pks []string) (map[string]string, error) {
	out := map[string]string{}
	if len(pks) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, "SELECT pubkey, status FROM cn_admin.pubkeys WHERE pubkey = ANY($1)", pks)
	if err != nil {
		return nil, fmt.Errorf("read pubkey statuses: %w", err)
	}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var pk, status string
		if err := row.Scan(&pk, &status); err != nil {
			return struct{}{}, err
		}
		out[pk] = status
		return struct{}{}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pubkey statuses: %w", err)
	}
	return out, nil
}

// Version is cn_admin.state.version, which every change of the management
// state increments (the marker relays poll, Watcher).
func Version(ctx context.Context, q Querier) (int64, error) {
	var v int64
	if err := q.QueryRow(ctx, "SELECT version FROM cn_admin.state").Scan(&v); err != nil {
		return 0, fmt.Errorf("management state version: %w", err)
	}
	return v, nil
}
