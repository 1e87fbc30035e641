package membership

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// Role is one role the operators defined: the node's newest kind 33534 with
// that `d`, unless the node's NIP-09 deletion covers it. Color and Order are
// the tag values as published ("" when there is no such tag). Roles are
// published for clients to display; this relay gives them no access effect
// (NIP-43 lets a relay ignore them).
type Role struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Color       string `json:"color"` // a hue, "0" to "360", or ""
	Order       string `json:"order"` // an integer, or ""
	At          int64  `json:"at"`    // created_at of its 33534
	EventID     string `json:"event_id"`
}

// RolePatch changes a role's fields: a nil field keeps the role's value, ""
// removes the tag.
type RolePatch struct {
	Label       *string `json:"label,omitempty"`
	Description *string `json:"description,omitempty"`
	Color       *string `json:"color,omitempty"`
	Order       *string `json:"order,omitempty"`
}

// Apply returns r with p's fields set.
func (p RolePatch) Apply(r Role) Role {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.Label, p.Label)
	set(&r.Description, p.Description)
	set(&r.Color, p.Color)
	set(&r.Order, p.Order)
	return r
}

// Validate refuses a color that is not an integer hue from 0 to 360 and an
// order that is not an integer (NIP-43); "" (no tag) is allowed.
func (p RolePatch) Validate() error {
	if p.Color != nil && *p.Color != "" {
		if h, err := strconv.Atoi(*p.Color); err != nil || h < 0 || h > 360 {
			return fmt.Errorf("color: want a hue from 0 to 360, got %q", *p.Color)
		}
	}
	if p.Order != nil && *p.Order != "" {
		if _, err := strconv.Atoi(*p.Order); err != nil {
			return fmt.Errorf("order: want an integer, got %q", *p.Order)
		}
	}
	return nil
}

// ValidRoleID refuses a role id (the 33534's `d`) that is empty, longer than
// 64 characters, or has characters other than letters, digits, '.', '_' and '-'.
func ValidRoleID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("a role id has 1 to 64 characters, got %q", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("a role id has only letters, digits, '.', '_' and '-', got %q", id)
		}
	}
	return nil
}

// RoleEvent is the unsigned 33534 defining r: the NIP-70 `-` tag, `d`, and
// `label`, `description`, `color`, `order` for the fields that are set.
func RoleEvent(r Role, at int64) *nostr.Event {
	tags := nostr.Tags{{"-"}, {"d", r.ID}}
	for _, t := range [][2]string{{"label", r.Label}, {"description", r.Description}, {"color", r.Color}, {"order", r.Order}} {
		if t[1] != "" {
			tags = append(tags, nostr.Tag{t[0], t[1]})
		}
	}
	return &nostr.Event{Kind: KindRole, CreatedAt: nostr.Timestamp(at), Tags: tags}
}

// ParseRole reads a 33534.
func ParseRole(ev *nostr.Event) Role {
	return Role{ID: tagValue(ev, "d"), Label: tagValue(ev, "label"), Description: tagValue(ev, "description"),
		Color: tagValue(ev, "color"), Order: tagValue(ev, "order"), At: int64(ev.CreatedAt), EventID: ev.ID}
}

// RoleAddress is the NIP-01 address of the node's 33534 for role id.
func RoleAddress(self, id string) string { return fmt.Sprintf("%d:%s:%s", KindRole, self, id) }

// RoleDeletion is the unsigned NIP-09 deletion (kind 5) of the node's 33534
// for role id: an `a` tag (covering every version up to at) and `k`.
func RoleDeletion(self, id string, at int64) *nostr.Event {
	return &nostr.Event{Kind: nostr.KindDeletion, CreatedAt: nostr.Timestamp(at), Content: "this role was removed",
		Tags: nostr.Tags{{"a", RoleAddress(self, id)}, {"k", strconv.Itoa(KindRole)}}}
}

// ProjectRoles folds the node's stored 33534 and kind 5 events (whatever
// their visibility; others' are skipped) into the defined roles: per `d` the
// newest 33534 (later created_at, ties to the lower id), dropped when a
// deletion by the node addresses it with a created_at at or after it (NIP-09).
// The result does not depend on the order of evs.
func ProjectRoles(self string, evs []*nostr.Event) map[string]Role {
	newest := map[string]Role{}
	deleted := map[string]int64{}
	prefix := fmt.Sprintf("%d:%s:", KindRole, self)
	for _, ev := range evs {
		if ev.PubKey != self {
			continue
		}
		switch ev.Kind {
		case KindRole:
			r := ParseRole(ev)
			old, ok := newest[r.ID]
			if !ok || r.At > old.At || (r.At == old.At && r.EventID < old.EventID) {
				newest[r.ID] = r
			}
		case nostr.KindDeletion:
			for _, t := range ev.Tags {
				if len(t) >= 2 && t[0] == "a" && strings.HasPrefix(t[1], prefix) {
					id := strings.TrimPrefix(t[1], prefix)
					deleted[id] = max(deleted[id], int64(ev.CreatedAt))
				}
			}
		}
	}
	out := map[string]Role{}
	for id, r := range newest {
		if at, ok := deleted[id]; ok && r.At <= at {
			continue
		}
		out[id] = r
	}
	return out
}

// MemberRoles returns the roles of each member tag of a 13534 (the arguments
// after the pubkey), for the members that have some.
func MemberRoles(list *nostr.Event) map[string][]string {
	out := map[string][]string{}
	if list == nil {
		return out
	}
	for _, t := range list.Tags {
		if len(t) >= 3 && t[0] == "member" {
			out[t[1]] = slices.Clone(t[2:])
		}
	}
	return out
}

// ProjectAssignments is who has which role: the role arguments of the
// node's newest 13534 (list; nil when there is none), kept for the keys regs
// says are members and for the roles defined in roles, sorted. Members
// without roles are left out.
func ProjectAssignments(list *nostr.Event, regs map[string]Register, roles map[string]Role) map[string][]string {
	out := map[string][]string{}
	for pk, ids := range MemberRoles(list) {
		if !regs[pk].Member {
			continue
		}
		var keep []string
		for _, id := range ids {
			if _, ok := roles[id]; ok {
				keep = append(keep, id)
			}
		}
		slices.Sort(keep)
		if keep = slices.Compact(keep); len(keep) > 0 {
			out[pk] = keep
		}
	}
	return out
}

// DiffRoles lists the role ids whose live definition differs from the projected one.
func DiffRoles(live, projected map[string]Role) []string {
	return diffKeys(live, projected, func(a, b Role) bool { return a == b })
}

// DiffAssignments lists the keys whose live roles differ from the projected ones.
func DiffAssignments(live, projected map[string][]string) []string {
	return diffKeys(live, projected, slices.Equal[[]string])
}

func diffKeys[V any](a, b map[string]V, eq func(V, V) bool) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !eq(a[k], b[k]) {
			out = append(out, k)
		}
	}
	return out
}
