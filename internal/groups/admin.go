package groups

import (
	"context"
	"maps"
	"slices"

	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

// The NIP-29 methods (docs/groups.md "Operators"): reads of the groups' live
// state (cn_relay.groups) for the relay's admins, served by relayadmin with
// NIP-86's. Group admins change their groups with signed moderation events
// (9000-9009), which the relay decides with the group's roles; there is no
// second permission system here.

// AdminMethods are the NIP-29 methods, reading the live state through q.
func AdminMethods(q Querier) []nip86.Method {
	return []nip86.Method{
		{Name: "listgroups", Do: func(ctx context.Context, _ *nip86.Call) (any, error) { return listGroups(ctx, q) }},
		{Name: "listgroupmembers", Min: 1, Max: 1, About: "the group id", Do: func(ctx context.Context, c *nip86.Call) (any, error) {
			id := c.String(0, "group id")
			if err := c.Err(); err != nil {
				return nil, err
			}
			return listadminMembers(ctx, q, id)
		}},
	}
}

// adminGroup is one row of listgroups.
type adminGroup struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Flags     string `json:"flags"` // FlagsOf: open, closed, restricted, closed_restricted, deleted
	Members   int    `json:"members"`
	Pending   int    `json:"pending"`
	Invites   int    `json:"invites"` // invite codes (counted, never shown)
	CreatedAt int64  `json:"created_at"`
	Creator   string `json:"creator"`
}

// adminMember is one member in listgroupmembers.
type adminMember struct {
	PubKey string   `json:"pubkey"`
	Roles  []string `json:"roles"`
	Since  int64    `json:"since"` // created_at of the 9000 that added them
}

// adminRequest is one pending join request in listgroupmembers.
type adminRequest struct {
	PubKey    string `json:"pubkey"`
	CreatedAt int64  `json:"created_at"`
}

// adminDetail is listgroupmembers' result.
type adminDetail struct {
	ID      string         `json:"id"`
	Flags   string         `json:"flags"`
	Members []adminMember  `json:"members"`
	Pending []adminRequest `json:"pending"`
	Invites int            `json:"invites"`
}

func listGroups(ctx context.Context, q Querier) ([]adminGroup, error) {
	live, err := Live(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []adminGroup{}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		s := live[id]
		out = append(out, adminGroup{ID: id, Name: s.Meta.Name, Flags: FlagsOf(s), Members: len(s.MemberList()),
			Pending: len(s.PendingUsers()), Invites: len(s.Invites), CreatedAt: s.Created.At, Creator: s.Creator})
	}
	return out, nil
}

func listadminMembers(ctx context.Context, q Querier, id string) (any, error) {
	s, err := LiveOne(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, nip86.Refuse("no group %q", id)
	}
	d := adminDetail{ID: id, Flags: FlagsOf(s), Members: []adminMember{}, Pending: []adminRequest{}, Invites: len(s.Invites)}
	for _, pk := range s.MemberList() {
		d.Members = append(d.Members, adminMember{PubKey: pk, Roles: append([]string{}, s.RolesOf(pk)...), Since: s.Members[pk].Stamp.At})
	}
	for _, pk := range s.PendingUsers() {
		d.Pending = append(d.Pending, adminRequest{PubKey: pk, CreatedAt: s.Requests[pk].At})
	}
	return d, nil
}
