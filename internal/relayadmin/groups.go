package relayadmin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/kukuri/communitynode/internal/groups"
)

// The NIP-29 methods (docs/groups.md "Operators"): reads of the groups' live
// state (cn_relay.groups) for the relay's admins. Group admins change their
// groups with signed moderation events (9000-9009), which the relay decides
// with the group's roles; there is no second permission system here.

// groupSummary is one row of listgroups.
type groupSummary struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Flags     string `json:"flags"` // groups.FlagsOf: open, closed, restricted, closed_restricted, deleted
	Members   int    `json:"members"`
	Pending   int    `json:"pending"`
	Invites   int    `json:"invites"` // invite codes (counted, never shown)
	CreatedAt int64  `json:"created_at"`
	Creator   string `json:"creator"`
}

// groupMember is one member in listgroupmembers.
type groupMember struct {
	PubKey string   `json:"pubkey"`
	Roles  []string `json:"roles"`
	Since  int64    `json:"since"` // created_at of the 9000 that added them
}

// groupRequest is one pending join request in listgroupmembers.
type groupRequest struct {
	PubKey    string `json:"pubkey"`
	CreatedAt int64  `json:"created_at"`
}

// groupDetail is listgroupmembers' result.
type groupDetail struct {
	ID      string         `json:"id"`
	Flags   string         `json:"flags"`
	Members []groupMember  `json:"members"`
	Pending []groupRequest `json:"pending"`
	Invites int            `json:"invites"`
}

// groupRead runs a group method; ok is false for any other method.
func (a *Admin) groupRead(ctx context.Context, method string, params []json.RawMessage) (result any, ok bool, err error) {
	switch method {
	case "listgroups":
		if len(params) != 0 {
			return nil, true, fmt.Errorf("%w: listgroups takes 0 parameters, got %d", ErrBadRequest, len(params))
		}
		live, err := groups.Live(ctx, a.Pool)
		if err != nil {
			return nil, true, err
		}
		out := []groupSummary{}
		for _, id := range slices.Sorted(maps.Keys(live)) {
			s := live[id]
			out = append(out, groupSummary{ID: id, Name: s.Meta.Name, Flags: groups.FlagsOf(s), Members: len(s.MemberList()),
				Pending: len(s.PendingUsers()), Invites: len(s.Invites), CreatedAt: s.Created.At, Creator: s.Creator})
		}
		return out, true, nil
	case "listgroupmembers":
		if len(params) != 1 {
			return nil, true, fmt.Errorf("%w: listgroupmembers takes 1 parameters (the group id), got %d", ErrBadRequest, len(params))
		}
		p := paramReader{params: params}
		id := p.string(0, "group id")
		if p.err != nil {
			return nil, true, p.err
		}
		s, err := groups.LiveOne(ctx, a.Pool, id)
		if err != nil {
			return nil, true, err
		}
		if s == nil {
			return nil, true, fmt.Errorf("%w: no group %q", ErrBadRequest, id)
		}
		d := groupDetail{ID: id, Flags: groups.FlagsOf(s), Members: []groupMember{}, Pending: []groupRequest{}, Invites: len(s.Invites)}
		for _, pk := range s.MemberList() {
			d.Members = append(d.Members, groupMember{PubKey: pk, Roles: append([]string{}, s.RolesOf(pk)...), Since: s.Members[pk].Stamp.At})
		}
		for _, pk := range s.PendingUsers() {
			d.Pending = append(d.Pending, groupRequest{PubKey: pk, CreatedAt: s.Requests[pk].At})
		}
		return d, true, nil
	}
	return nil, false, nil
}
