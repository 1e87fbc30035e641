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
	mp := partOf[*membershipPart](p)
	mp.mchanges = changes
	for _, c := range changes {
		if c.Add {
			p.admitting = append(p.admitting, c.Pubkey)
		}
	}
	r, err := p.runTx(ctx, tx)
	if err != nil {
		return MembershipResult{}, fmt.Errorf("membership: %w", err)
	}
	return MembershipResult{Outcomes: mp.moutcomes, Range: r}, nil
}

// membershipPart is the plan's NIP-43 room (see part): the changes to
// make (MembershipTx), the registers, members, roles and role definitions
// loaded and changed, and the node events it makes.
type membershipPart struct {
	p     *plan
	mship *Membership // nil: open, no changes (the node kinds are still refused)

	mchanges   []membership.Change            // changes to make (MembershipTx)
	mregs      map[string]membership.Register // loaded NIP-43 registers, then changed
	mlist      map[string]bool                // the NIP-43 members (loaded when changing), then changed
	mgenerated map[string]bool                // ids of the node's NIP-43 events made by this plan
	mtouched   []string                       // keys whose register changed
	moutcomes  []membership.Outcome           // one per change
	mdefs      map[string]membership.Role     // the defined roles (loaded when changing), then changed
	mroles     map[string][]string            // each NIP-43 member's roles (loaded when changing), then changed
	mdefsDirty map[string]bool                // role ids whose definition changed (written)
	mrolesSet  map[string]bool                // keys whose roles changed (written; a new 13534)
	err        error                          // the membership path failed (the batch fails)
}

func newMembershipPart(p *plan) *membershipPart {
	return &membershipPart{p: p, mregs: map[string]membership.Register{}, mlist: map[string]bool{}, mgenerated: map[string]bool{},
		mdefs: map[string]membership.Role{}, mroles: map[string][]string{}, mdefsDirty: map[string]bool{}, mrolesSet: map[string]bool{}}
}

func (m *membershipPart) need(*nostr.Event, *needs) {}
func (m *membershipPart) needBatch(n *needs)        { m.membershipLoad(n.keys, n.addrs, n.people) }
func (m *membershipPart) queueLocks(*pgx.Batch)     {}
func (m *membershipPart) queueLoad(b *pgx.Batch, n *needs) {
	m.queueMembershipLoad(b, n.people)
}
func (m *membershipPart) loadMore(context.Context, outbox.Batcher) error { return nil }
func (m *membershipPart) loaded()                                        {}
func (m *membershipPart) duplicate(*nostr.Event) (protocol.Verdict, bool) {
	return protocol.Verdict{}, false
}
func (m *membershipPart) refuse(ev *nostr.Event) (protocol.Verdict, bool) {
	return m.membershipRefuses(ev)
}
func (m *membershipPart) decide(*nostr.Event) (protocol.Verdict, func(), bool, bool) {
	return protocol.Verdict{}, nil, false, false
}
func (m *membershipPart) scope(*nostr.Event) string { return "" }
func (m *membershipPart) made(ev *nostr.Event) bool { return m.membershipScope(ev) }
func (m *membershipPart) queueWrites(b *pgx.Batch)  { m.queueMembershipWrites(b) }

func (m *membershipPart) begin() {
	if m.mship != nil {
		m.decideMembership()
	}
}

func (m *membershipPart) signer() string {
	if m.mship == nil {
		return ""
	}
	return m.mship.Self
}

func (m *membershipPart) finish() error {
	if m.mship != nil {
		m.finishMembership()
	}
	return m.err
}

// membersKey is the effective key of the node's 13534.
func (m *membershipPart) membersKey() string {
	return fmt.Sprintf("%d:%s", membership.KindMembers, m.mship.Self)
}

// membershipLoad adds to a load what membership needs: the lock and the
// versions of the node's 13534 when the plan changes membership, the lock,
// versions and deletions of the 33534 of each role it sets or removes, and
// the registers of the keys whose membership the decisions ask.
func (m *membershipPart) membershipLoad(keys, addrs, people map[string]bool) {
	if m.mship == nil {
		return
	}
	if len(m.mchanges) > 0 {
		keys[m.membersKey()] = true
		for _, c := range m.mchanges {
			switch c.Op {
			case membership.OpSetRole, membership.OpRemoveRole:
				a := membership.RoleAddress(m.mship.Self, c.Role)
				keys[a], addrs[a] = true, true // (an addressable kind's key is its address)
			default:
				people[c.Pubkey] = true
			}
		}
	}
}

// queueMembershipLoad queues the reads (after the locks).
func (m *membershipPart) queueMembershipLoad(b *pgx.Batch, people map[string]bool) {
	if m.mship == nil || (m.mship.Mode != membership.InviteOnly && len(m.mchanges) == 0) {
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
				m.mregs[pk] = r
			}
			return rows.Err()
		})
	if len(m.mchanges) > 0 {
		b.Queue(`SELECT pubkey, roles FROM cn_relay.nip43_members WHERE member`).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var pk string
				var roles []string
				if err := rows.Scan(&pk, &roles); err != nil {
					return fmt.Errorf("load members: %w", err)
				}
				m.mlist[pk] = true
				if len(roles) > 0 {
					m.mroles[pk] = roles
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
				m.mdefs[r.ID] = r
			}
			return rows.Err()
		})
	}
}

// membershipRefuses answers an event the membership rules refuse: a NIP-43
// node kind this plan did not make, and, in invite mode, any event of a key
// that is not a relay member (relayMember). The node's own events (trusted)
// pass.
func (m *membershipPart) membershipRefuses(ev *nostr.Event) (protocol.Verdict, bool) {
	if membership.IsNodeKind(ev.Kind) && !m.mgenerated[ev.ID] {
		return membership.RefuseNodeKind.Verdict(), true
	}
	if m.mship != nil && m.mship.Mode == membership.InviteOnly && !m.p.trusted && !m.mgenerated[ev.ID] && !m.relayMember(ev.PubKey) {
		return membership.RefuseInviteOnly.Verdict(), true
	}
	return protocol.Verdict{}, false
}

// relayMember is the node's one notion of a relay member (docs/membership.md):
// the node, an admin, a key whose NIP-43 register says member, and a key
// without a NIP-43 register that is a member by posting or by an operator
// (cn_relay.members: first post in open mode, allowpubkey, the trust gate).
// A NIP-43 removal or leave (8001) overrides cn_relay.members.
func (m *membershipPart) relayMember(pk string) bool {
	if pk == m.mship.Self || m.mship.Admins[pk] {
		return true
	}
	if r, ok := m.mregs[pk]; ok && r.Known() {
		return r.Member
	}
	return m.p.members[pk]
}

// decideMembership applies the plan's changes (MembershipTx), storing the
// node's 8000/8001 for each that changes something.
func (m *membershipPart) decideMembership() {
	now := m.p.ingestedAt.Unix()
	for _, c := range m.mchanges {
		if c.Op != membership.OpMember {
			out, err := m.decideRole(c)
			if err != nil {
				m.err = errors.Join(m.err, err)
				return
			}
			m.moutcomes = append(m.moutcomes, out)
			continue
		}
		r := m.mregs[c.Pubkey]
		// Add: unless the register says member (a key that is a member by
		// posting only gets its 8000, so it is listed). Remove: unless the
		// register says removed, or the key was never a member at all.
		// (m.p.members is as loaded: decide runs this before admitting.)
		if r.Known() && r.Member == c.Add || (!c.Add && !r.Known() && !m.p.members[c.Pubkey]) {
			m.moutcomes = append(m.moutcomes, membership.Already)
			continue
		}
		at := max(now, r.At+1) // a key's events are strictly ordered by created_at
		ev := membership.RemoveEvent(c.Pubkey, c.Via, at)
		out := membership.Removed
		if c.Add {
			ev, out = membership.AddEvent(c.Pubkey, c.Via, at), membership.Added
		}
		if err := m.mship.Sign(ev); err != nil {
			m.err = errors.Join(m.err, fmt.Errorf("sign the node's kind %d: %w", ev.Kind, err))
			return
		}
		m.mgenerated[ev.ID] = true
		if v := m.p.decideEvent(-1, ev); !v.OK {
			m.err = errors.Join(m.err, fmt.Errorf("the node's kind %d was refused: %s", ev.Kind, v.Message))
			return
		}
		m.mregs[c.Pubkey] = r.Apply(ev)
		m.mtouched = append(m.mtouched, c.Pubkey)
		m.mlist[c.Pubkey] = c.Add
		if !c.Add && len(m.mroles[c.Pubkey]) > 0 {
			delete(m.mroles, c.Pubkey)
			m.mrolesSet[c.Pubkey] = true
		}
		m.moutcomes = append(m.moutcomes, out)
	}
}

// decideRole applies one role change (see MembershipTx).
func (m *membershipPart) decideRole(c membership.Change) (membership.Outcome, error) {
	now := m.p.ingestedAt.Unix()
	key := membership.RoleAddress(m.mship.Self, c.Role)
	old, defined := m.mdefs[c.Role]
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
		for _, v := range m.p.versions[key] {
			at = max(at, v.createdAt+1)
		}
		if del, ok := m.p.tombAddr[key]; ok {
			at = max(at, del+1)
		}
		ev := membership.RoleEvent(next, at)
		if err := m.signNode(ev); err != nil {
			return "", err
		}
		next.At, next.EventID = at, ev.ID
		m.mdefs[c.Role], m.mdefsDirty[c.Role] = next, true
		return membership.Defined, nil
	case membership.OpRemoveRole:
		at := now // (covering every version: NIP-09 deletes those up to it)
		for _, v := range m.p.versions[key] {
			at = max(at, v.createdAt)
		}
		if err := m.signNode(membership.RoleDeletion(m.mship.Self, c.Role, at)); err != nil {
			return "", err
		}
		delete(m.mdefs, c.Role)
		m.mdefsDirty[c.Role] = true
		for pk, ids := range m.mroles {
			if slices.Contains(ids, c.Role) {
				m.setRoles(pk, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == c.Role }))
			}
		}
		return membership.Removed, nil
	}
	if !m.mlist[c.Pubkey] {
		return membership.NotMember, nil
	}
	ids := m.mroles[c.Pubkey]
	has := slices.Contains(ids, c.Role)
	switch {
	case c.Op == membership.OpAssign && !has:
		m.setRoles(c.Pubkey, slices.Sorted(slices.Values(append(slices.Clone(ids), c.Role))))
		return membership.Assigned, nil
	case c.Op == membership.OpUnassign && has:
		m.setRoles(c.Pubkey, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == c.Role }))
		return membership.Unassigned, nil
	}
	return membership.Already, nil
}

// setRoles gives a member its roles (sorted).
func (m *membershipPart) setRoles(pk string, ids []string) {
	if len(ids) == 0 {
		delete(m.mroles, pk)
	} else {
		m.mroles[pk] = ids
	}
	m.mrolesSet[pk] = true
}

// signNode signs one of the node's NIP-43 events made by this plan and
// stores it through the plan (decideEvent).
func (m *membershipPart) signNode(ev *nostr.Event) error {
	if err := m.mship.Sign(ev); err != nil {
		return fmt.Errorf("sign the node's kind %d: %w", ev.Kind, err)
	}
	m.mgenerated[ev.ID] = true
	if v := m.p.decideEvent(-1, ev); !v.OK {
		return fmt.Errorf("the node's kind %d was refused: %s", ev.Kind, v.Message)
	}
	return nil
}

// finishMembership stores a new 13534 when the plan changed membership or
// some member's roles, with a created_at above the stored version's.
func (m *membershipPart) finishMembership() {
	if len(m.mtouched) == 0 && len(m.mrolesSet) == 0 {
		return
	}
	at := m.p.ingestedAt.Unix()
	for _, v := range m.p.versions[m.membersKey()] {
		at = max(at, v.createdAt+1)
	}
	members := map[string][]string{}
	for pk, in := range m.mlist {
		if in {
			members[pk] = m.mroles[pk]
		}
	}
	ev := membership.ListEvent(members, at)
	if err := m.mship.Sign(ev); err != nil {
		m.err = errors.Join(m.err, fmt.Errorf("sign the node's 13534: %w", err))
		return
	}
	m.mgenerated[ev.ID] = true
	if v := m.p.decideEvent(-1, ev); !v.OK {
		m.err = errors.Join(m.err, fmt.Errorf("the node's 13534 was refused: %s", v.Message))
	}
}

// membershipScope is the scope of the node's NIP-43 events: the person scope
// (protocol.NodeTopic), as events for the whole node.
func (m *membershipPart) membershipScope(ev *nostr.Event) bool { return m.mgenerated[ev.ID] }

// queueMembershipWrites queues the upsert of the changed registers, then the
// changed members' roles and role definitions.
func (m *membershipPart) queueMembershipWrites(b *pgx.Batch) {
	m.queueRegisterWrites(b)
	if len(m.mrolesSet) > 0 {
		set := map[string][]string{}
		for pk := range m.mrolesSet {
			set[pk] = append([]string{}, m.mroles[pk]...) // (never null)
		}
		raw, _ := json.Marshal(set)
		b.Queue(`UPDATE cn_relay.nip43_members m SET roles = ARRAY(SELECT jsonb_array_elements_text(j.value))
			FROM jsonb_each($1::jsonb) j WHERE m.pubkey = j.key`, string(raw))
	}
	var gone []string
	for _, id := range slices.Sorted(maps.Keys(m.mdefsDirty)) {
		r, ok := m.mdefs[id]
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

func (m *membershipPart) queueRegisterWrites(b *pgx.Batch) {
	if len(m.mtouched) == 0 {
		return
	}
	var pks, ids, vias []string
	var members []bool
	var ats []int64
	for _, pk := range slices.Sorted(slices.Values(m.mtouched)) {
		if slices.Contains(pks, pk) {
			continue
		}
		r := m.mregs[pk]
		pks, ids, vias, members, ats = append(pks, pk), append(ids, r.ID), append(vias, r.Via), append(members, r.Member), append(ats, r.At)
	}
	b.Queue(`INSERT INTO cn_relay.nip43_members (pubkey, member, at, event_id, via)
		SELECT * FROM unnest($1::text[], $2::bool[], $3::bigint[], $4::text[], $5::text[])
		ON CONFLICT (pubkey) DO UPDATE SET member = excluded.member, at = excluded.at, event_id = excluded.event_id, via = excluded.via`,
		pks, members, ats, ids, vias)
}

func (m *membershipPart) passesOn(string) bool { return true }
