package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Membership is how the store keeps NIP-43 relay membership (package
// membership, docs/membership.md). Without it (a publisher that was never
// given one: cnctl import and sync, the consumers' publishers) membership
// changes fail and every mode is open; the NIP-43 node kinds are refused from
// everyone either way.
type Membership struct {
	// Self is the node's pubkey (NIP-11 self); Sign signs with its key.
	Self string
	Sign func(*nostr.Event) error
	// Mode: in membership.InviteOnly only members' events are stored.
	Mode membership.Mode
	// Admins are members from the start.
	Admins map[string]bool
}

// SetMembership makes the publisher keep NIP-43 membership; call it before
// the publisher is used.
func (pub *Publisher) SetMembership(m Membership) error {
	switch {
	case !protocol.IsHex64(m.Self):
		return errors.New("membership: the node's pubkey is missing")
	case m.Sign == nil:
		return errors.New("membership: no signer")
	}
	if _, err := membership.ParseMode(string(m.Mode)); err != nil {
		return err
	}
	pub.membership = &m
	return nil
}

// SetMembership makes the store keep NIP-43 membership (Publisher.SetMembership).
func (s *Store) SetMembership(m Membership) error { return s.pub.SetMembership(m) }

// MembershipResult is what MembershipTx did.
type MembershipResult struct {
	Outcomes []membership.Outcome // one per change, in order
	Range    outbox.Range         // the outbox rows appended (announce them after the commit)
}

// MembershipTx applies changes inside the caller's transaction, which the
// caller commits and then announces (as with PublishTx): for each change that
// changes something it signs and stores the node's 8000 or 8001, updates the
// key's register (cn_relay.nip43_members), and, once per call, signs and
// stores a new 13534 listing every NIP-43 member with its roles; a change that
// changes nothing is answered membership.Already. Role changes sign and store
// the node's 33534 (OpSetRole) or its NIP-09 deletion (OpRemoveRole, which
// takes the role off every member) and keep cn_relay.nip43_roles and the
// members' roles; assigning an undefined role, or to a key that is not a
// NIP-43 member, is answered membership.NoRole or membership.NotMember and
// changes nothing (the caller should roll back). A key removed loses its
// roles. A key added here also becomes a
// member of cn_relay.members (its pending identity events are published). The
// plan holds the effective-key lock of the node's 13534 from before it reads
// the registers, so membership changes are serialised across relays. The
// outbox append is the plan's last statement.
func (pub *Publisher) MembershipTx(ctx context.Context, tx outbox.Batcher, rules protocol.TopicRules, changes []membership.Change) (MembershipResult, error) {
	if pub.membership == nil {
		return MembershipResult{}, errors.New("membership: this publisher keeps no NIP-43 membership (no node key)")
	}
	p := pub.newPlan(nil, rules)
	p.mchanges = changes
	for _, c := range changes {
		if c.Add {
			p.admitting = append(p.admitting, c.Pubkey)
		}
	}
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return MembershipResult{}, fmt.Errorf("membership: %w", err)
	}
	return MembershipResult{Outcomes: p.moutcomes, Range: r}, nil
}

// membersKey is the effective key of the node's 13534.
func (p *plan) membersKey() string {
	return fmt.Sprintf("%d:%s", membership.KindMembers, p.mship.Self)
}

// membershipLoad adds to a load what membership needs: the lock and the
// versions of the node's 13534 when the plan changes membership, the lock,
// versions and deletions of the 33534 of each role it sets or removes, and
// the registers of the keys whose membership the decisions ask.
func (p *plan) membershipLoad(keys, addrs, people map[string]bool) {
	if p.mship == nil {
		return
	}
	if len(p.mchanges) > 0 {
		keys[p.membersKey()] = true
		for _, c := range p.mchanges {
			switch c.Op {
			case membership.OpSetRole, membership.OpRemoveRole:
				a := membership.RoleAddress(p.mship.Self, c.Role)
				keys[a], addrs[a] = true, true // (an addressable kind's key is its address)
			default:
				people[c.Pubkey] = true
			}
		}
	}
}

// queueMembershipLoad queues the reads (after the locks).
func (p *plan) queueMembershipLoad(b *pgx.Batch, people map[string]bool) {
	if p.mship == nil || (p.mship.Mode != membership.InviteOnly && len(p.mchanges) == 0) {
		return
	}
	b.Queue(`SELECT pubkey, member, at, event_id, via FROM cn_relay.nip43_members WHERE pubkey = ANY($1)`, setSlice(people)).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var pk string
				var r membership.Register
				if err := rows.Scan(&pk, &r.Member, &r.At, &r.ID, &r.Via); err != nil {
					return fmt.Errorf("load membership: %w", err)
				}
				p.mregs[pk] = r
			}
			return rows.Err()
		})
	if len(p.mchanges) > 0 {
		b.Queue(`SELECT pubkey, roles FROM cn_relay.nip43_members WHERE member`).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var pk string
				var roles []string
				if err := rows.Scan(&pk, &roles); err != nil {
					return fmt.Errorf("load members: %w", err)
				}
				p.mlist[pk] = true
				if len(roles) > 0 {
					p.mroles[pk] = roles
				}
			}
			return rows.Err()
		})
		b.Queue(`SELECT id, label, description, color, ord, at, event_id FROM cn_relay.nip43_roles`).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r membership.Role
				if err := rows.Scan(&r.ID, &r.Label, &r.Description, &r.Color, &r.Order, &r.At, &r.EventID); err != nil {
					return fmt.Errorf("load roles: %w", err)
				}
				p.mdefs[r.ID] = r
			}
			return rows.Err()
		})
	}
}

// membershipRefuses answers an event the membership rules refuse: a NIP-43
// node kind this plan did not make, and, in invite mode, any event of a key
// that is not a relay member (relayMember). The node's own events (trusted)
// pass.
func (p *plan) membershipRefuses(ev *nostr.Event) (protocol.Verdict, bool) {
	if membership.IsNodeKind(ev.Kind) && !p.mgenerated[ev.ID] {
		return membership.RefuseNodeKind.Verdict(), true
	}
	if p.mship != nil && p.mship.Mode == membership.InviteOnly && !p.trusted && !p.mgenerated[ev.ID] && !p.relayMember(ev.PubKey) {
		return membership.RefuseInviteOnly.Verdict(), true
	}
	return protocol.Verdict{}, false
}

// relayMember is the node's one notion of a relay member (docs/membership.md):
// the node, an admin, a key whose NIP-43 register says member, and a key
// without a NIP-43 register that is a member by posting or by an operator
// (cn_relay.members: first post in open mode, allowpubkey, the trust gate).
// A NIP-43 removal or leave (8001) overrides cn_relay.members.
func (p *plan) relayMember(pk string) bool {
	if pk == p.mship.Self || p.mship.Admins[pk] {
		return true
	}
	if r, ok := p.mregs[pk]; ok && r.Known() {
		return r.Member
	}
	return p.members[pk]
}

// decideMembership applies the plan's changes (MembershipTx), storing the
// node's 8000/8001 for each that changes something.
func (p *plan) decideMembership() {
	now := p.ingestedAt.Unix()
	for _, c := range p.mchanges {
		if c.Op != membership.OpMember {
			out, err := p.decideRole(c)
			if err != nil {
				p.groupErr = errors.Join(p.groupErr, err)
				return
			}
			p.moutcomes = append(p.moutcomes, out)
			continue
		}
		r := p.mregs[c.Pubkey]
		// Add: unless the register says member (a key that is a member by
		// posting only gets its 8000, so it is listed). Remove: unless the
		// register says removed, or the key was never a member at all.
		// (p.members is as loaded: decide runs this before admitting.)
		if r.Known() && r.Member == c.Add || (!c.Add && !r.Known() && !p.members[c.Pubkey]) {
			p.moutcomes = append(p.moutcomes, membership.Already)
			continue
		}
		at := max(now, r.At+1) // a key's events are strictly ordered by created_at
		ev := membership.RemoveEvent(c.Pubkey, c.Via, at)
		out := membership.Removed
		if c.Add {
			ev, out = membership.AddEvent(c.Pubkey, c.Via, at), membership.Added
		}
		if err := p.mship.Sign(ev); err != nil {
			p.groupErr = errors.Join(p.groupErr, fmt.Errorf("sign the node's kind %d: %w", ev.Kind, err))
			return
		}
		p.mgenerated[ev.ID] = true
		if v := p.decideEvent(-1, ev); !v.OK {
			p.groupErr = errors.Join(p.groupErr, fmt.Errorf("the node's kind %d was refused: %s", ev.Kind, v.Message))
			return
		}
		p.mregs[c.Pubkey] = r.Apply(ev)
		p.mtouched = append(p.mtouched, c.Pubkey)
		p.mlist[c.Pubkey] = c.Add
		if !c.Add && len(p.mroles[c.Pubkey]) > 0 {
			delete(p.mroles, c.Pubkey)
			p.mrolesSet[c.Pubkey] = true
		}
		p.moutcomes = append(p.moutcomes, out)
	}
}

// decideRole applies one role change (see MembershipTx).
func (p *plan) decideRole(c membership.Change) (membership.Outcome, error) {
	now := p.ingestedAt.Unix()
	key := membership.RoleAddress(p.mship.Self, c.Role)
	old, defined := p.mdefs[c.Role]
	if !defined && c.Op != membership.OpSetRole {
		return membership.NoRole, nil
	}
	switch c.Op {
	case membership.OpSetRole:
		next := c.Patch.Apply(old)
		next.ID = c.Role
		if defined && next == old {
			return membership.Already, nil
		}
		// Later than every stored version and than the node's deletion of
		// an earlier definition, which would otherwise cover it.
		at := now
		for _, v := range p.versions[key] {
			at = max(at, v.createdAt+1)
		}
		if del, ok := p.tombAddr[key]; ok {
			at = max(at, del+1)
		}
		ev := membership.RoleEvent(next, at)
		if err := p.signNode(ev); err != nil {
			return "", err
		}
		next.At, next.EventID = at, ev.ID
		p.mdefs[c.Role], p.mdefsDirty[c.Role] = next, true
		return membership.Defined, nil
	case membership.OpRemoveRole:
		at := now // (covering every version: NIP-09 deletes those up to it)
		for _, v := range p.versions[key] {
			at = max(at, v.createdAt)
		}
		if err := p.signNode(membership.RoleDeletion(p.mship.Self, c.Role, at)); err != nil {
			return "", err
		}
		delete(p.mdefs, c.Role)
		p.mdefsDirty[c.Role] = true
		for pk, ids := range p.mroles {
			if slices.Contains(ids, c.Role) {
				p.setRoles(pk, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == c.Role }))
			}
		}
		return membership.Removed, nil
	}
	if !p.mlist[c.Pubkey] {
		return membership.NotMember, nil
	}
	ids := p.mroles[c.Pubkey]
	has := slices.Contains(ids, c.Role)
	switch {
	case c.Op == membership.OpAssign && !has:
		p.setRoles(c.Pubkey, slices.Sorted(slices.Values(append(slices.Clone(ids), c.Role))))
		return membership.Assigned, nil
	case c.Op == membership.OpUnassign && has:
		p.setRoles(c.Pubkey, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == c.Role }))
		return membership.Unassigned, nil
	}
	return membership.Already, nil
}

// setRoles gives a member its roles (sorted).
func (p *plan) setRoles(pk string, ids []string) {
	if len(ids) == 0 {
		delete(p.mroles, pk)
	} else {
		p.mroles[pk] = ids
	}
	p.mrolesSet[pk] = true
}

// signNode signs one of the node's NIP-43 events made by this plan and
// stores it through the plan (decideEvent).
func (p *plan) signNode(ev *nostr.Event) error {
	if err := p.mship.Sign(ev); err != nil {
		return fmt.Errorf("sign the node's kind %d: %w", ev.Kind, err)
	}
	p.mgenerated[ev.ID] = true
	if v := p.decideEvent(-1, ev); !v.OK {
		return fmt.Errorf("the node's kind %d was refused: %s", ev.Kind, v.Message)
	}
	return nil
}

// finishMembership stores a new 13534 when the plan changed membership or
// some member's roles, with a created_at above the stored version's.
func (p *plan) finishMembership() {
	if len(p.mtouched) == 0 && len(p.mrolesSet) == 0 {
		return
	}
	at := p.ingestedAt.Unix()
	for _, v := range p.versions[p.membersKey()] {
		at = max(at, v.createdAt+1)
	}
	members := map[string][]string{}
	for pk, in := range p.mlist {
		if in {
			members[pk] = p.mroles[pk]
		}
	}
	ev := membership.ListEvent(members, at)
	if err := p.mship.Sign(ev); err != nil {
		p.groupErr = errors.Join(p.groupErr, fmt.Errorf("sign the node's 13534: %w", err))
		return
	}
	p.mgenerated[ev.ID] = true
	if v := p.decideEvent(-1, ev); !v.OK {
		p.groupErr = errors.Join(p.groupErr, fmt.Errorf("the node's 13534 was refused: %s", v.Message))
	}
}

// membershipScope is the scope of the node's NIP-43 events: the person scope
// (protocol.NodeTopic), as events for the whole node.
func (p *plan) membershipScope(ev *nostr.Event) bool { return p.mgenerated[ev.ID] }

// queueMembershipWrites queues the upsert of the changed registers, then the
// changed members' roles and role definitions.
func (p *plan) queueMembershipWrites(b *pgx.Batch) {
	p.queueRegisterWrites(b)
	if len(p.mrolesSet) > 0 {
		set := map[string][]string{}
		for pk := range p.mrolesSet {
			set[pk] = append([]string{}, p.mroles[pk]...) // (never null)
		}
		raw, _ := json.Marshal(set)
		b.Queue(`UPDATE cn_relay.nip43_members m SET roles = ARRAY(SELECT jsonb_array_elements_text(j.value))
			FROM jsonb_each($1::jsonb) j WHERE m.pubkey = j.key`, string(raw))
	}
	var gone []string
	for _, id := range slices.Sorted(maps.Keys(p.mdefsDirty)) {
		r, ok := p.mdefs[id]
		if !ok {
			gone = append(gone, id)
			continue
		}
		b.Queue(`INSERT INTO cn_relay.nip43_roles (id, label, description, color, ord, at, event_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (id) DO UPDATE SET label = excluded.label, description = excluded.description, color = excluded.color,
				ord = excluded.ord, at = excluded.at, event_id = excluded.event_id`,
			r.ID, r.Label, r.Description, r.Color, r.Order, r.At, r.EventID)
	}
	if len(gone) > 0 {
		b.Queue(`DELETE FROM cn_relay.nip43_roles WHERE id = ANY($1)`, gone)
	}
}

func (p *plan) queueRegisterWrites(b *pgx.Batch) {
	if len(p.mtouched) == 0 {
		return
	}
	var pks, ids, vias []string
	var members []bool
	var ats []int64
	for _, pk := range slices.Sorted(slices.Values(p.mtouched)) {
		if slices.Contains(pks, pk) {
			continue
		}
		r := p.mregs[pk]
		pks, ids, vias, members, ats = append(pks, pk), append(ids, r.ID), append(vias, r.Via), append(members, r.Member), append(ats, r.At)
	}
	b.Queue(`INSERT INTO cn_relay.nip43_members (pubkey, member, at, event_id, via)
		SELECT * FROM unnest($1::text[], $2::bool[], $3::bigint[], $4::text[], $5::text[])
		ON CONFLICT (pubkey) DO UPDATE SET member = excluded.member, at = excluded.at, event_id = excluded.event_id, via = excluded.via`,
		pks, members, ats, ids, vias)
}
