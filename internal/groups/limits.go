package groups

import (
	"fmt"
	"slices"
)

// Limits bound what one key may make of the relay's groups (issue 47: no
// bound on the new surfaces). Each is set by a relay flag; a zero field is
// its default. The defaults are far above what a real community does (a
// group of 10,000 members is normal; a key creating hundreds of groups, a
// subgroup chain dozens deep or a 9009 with hundreds of codes is not).
//
// The node and the relay's admins (Policy.Admins) are not bound by
// CreatedPerDay and CreatedInAll; Policy.History (an operator's import of a
// moved group) by none of them.
type Limits struct {
	// CreatedPerDay bounds the groups one key creates (9007) in 24 hours,
	// by the time the relay took them (Stamp.Seq).
	CreatedPerDay int
	// CreatedInAll bounds the groups one key has created, deleted ones
	// included (a deleted group's id stays reserved and its events stored).
	CreatedInAll int
	// Members bounds a group's members: a 9000 that would take the group
	// past it is refused whole, and so is a join request (9021) that would
	// be honoured at once.
	Members int
	// Depth bounds how far below its root a group sits (a root is at depth
	// 0, its subgroups at 1): a 9002 whose parent would put the group, or
	// one of its subgroups, deeper is refused.
	Depth int
	// CodesPerInvite bounds the codes of one 9009.
	CodesPerInvite int
	// OpenCodes bounds a group's invite codes still valid (not expired):
	// a 9009 that would take the group past it is refused whole.
	OpenCodes int
}

// The defaults of Limits (relay flags --group-max-*).
const (
	DefaultCreatedPerDay  = 20
	DefaultCreatedInAll   = 100
	DefaultMembers        = 100_000
	DefaultDepth          = 16
	DefaultCodesPerInvite = 100
	DefaultOpenCodes      = 1_000
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	or := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	return Limits{
		CreatedPerDay:  or(l.CreatedPerDay, DefaultCreatedPerDay),
		CreatedInAll:   or(l.CreatedInAll, DefaultCreatedInAll),
		Members:        or(l.Members, DefaultMembers),
		Depth:          or(l.Depth, DefaultDepth),
		CodesPerInvite: or(l.CodesPerInvite, DefaultCodesPerInvite),
		OpenCodes:      or(l.OpenCodes, DefaultOpenCodes),
	}
}

// Created is how many groups a key has created (Facts.Created; CountCreated).
type Created struct {
	// Day: in the last 24 hours (by the relay's ingest time); All: ever,
	// deleted ones included.
	Day, All int
}

// DayMicros is the per-day window of Limits.CreatedPerDay, in Stamp.Seq units.
const DayMicros = int64(24 * 3600 * 1_000_000)

// ReasonCreatedPerDay is the refusal of a 9007 past Limits.CreatedPerDay.
func ReasonCreatedPerDay(n int) string {
	return fmt.Sprintf("restricted: this key created %d groups in the last 24 hours, the most this relay allows; try again later", n)
}

// ReasonCreatedInAll is the refusal of a 9007 past Limits.CreatedInAll.
func ReasonCreatedInAll(n int) string {
	return fmt.Sprintf("restricted: this key has created %d groups (deleted ones count), the most this relay allows one key", n)
}

// ReasonMembersCap is the refusal of a 9000, or of a join request honoured
// at once, that would take a group past Limits.Members.
func ReasonMembersCap(n int) string {
	return fmt.Sprintf("restricted: this group has reached the most members this relay allows in one group (%d)", n)
}

// ReasonDepth is the refusal of a 9002 whose parent would put a group, or
// one of its subgroups, deeper than Limits.Depth.
func ReasonDepth(n int) string {
	return fmt.Sprintf("restricted: subgroups nest at most %d levels below their root group on this relay; this parent would put this group or one of its subgroups deeper", n)
}

// ReasonCodesPerInvite is the refusal of a 9009 with more codes than
// Limits.CodesPerInvite.
func ReasonCodesPerInvite(n int) string {
	return fmt.Sprintf("restricted: a create-invite (kind 9009) carries at most %d codes on this relay", n)
}

// ReasonOpenCodes is the refusal of a 9009 that would give a group more
// valid codes than Limits.OpenCodes.
func ReasonOpenCodes(n int) string {
	return fmt.Sprintf("restricted: this group would have more than %d valid invite codes, the most this relay allows; wait for some to expire", n)
}

// MemberCount returns the number of members.
func (s *State) MemberCount() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, m := range s.Members {
		if m.In {
			n++
		}
	}
	return n
}

// Depth returns how far below its root id is (0 for a root), as far as f
// holds its ancestors.
func (f Forest) Depth(id string) int {
	d := 0
	for range len(f) + 1 {
		if id = f.Parent(id); id == "" {
			return d
		}
		d++
	}
	return d // a cycle: never made (Decide), but never loop
}

// openCodes returns the number of s's codes valid at now, those in skip
// aside.
func (p Policy) openCodes(s *State, now int64, skip []string) int {
	n := 0
	for code := range s.Invites {
		if p.ValidInvite(s, code, now) && !slices.Contains(skip, code) {
			n++
		}
	}
	return n
}
