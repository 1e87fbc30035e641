package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// TestGroupCounts: the database's count (the metrics') of groups by flags,
// members and pending join requests is State's, on the edge cases of
// State.Pending: a request newer than a removal waits, one older than the
// user's last 9000/9001 does not, a member's never does; deleted groups'
// members and requests are not counted.
func TestGroupCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	st := func(at int64) groups.Stamp { return groups.Stamp{At: at, ID: "x"} }
	mk := func(id string, closed, restricted, deleted bool) *groups.State {
		s := groups.New(id)
		s.Created, s.Creator = st(1), "c"
		s.Meta.Closed, s.Meta.Restricted = closed, restricted
		if deleted {
			s.Deleted = st(50)
		}
		s.Members["m1"] = groups.Membership{In: true, Roles: []string{"admin"}, Stamp: st(10)}
		s.Members["m2"] = groups.Membership{In: true, Stamp: st(10)}
		s.Members["gone"] = groups.Membership{In: false, Stamp: st(20)}
		s.Members["back"] = groups.Membership{In: false, Stamp: st(20)}
		s.Requests["m2"] = st(30)   // a member: not pending
		s.Requests["gone"] = st(15) // older than the removal: not pending
		s.Requests["back"] = st(25) // newer than the removal: pending
		s.Requests["new"] = st(5)   // never named: pending
		return s
	}
	states := map[string]*groups.State{
		"a": mk("a", false, false, false), "b": mk("b", true, false, false), "c": mk("c", false, true, false),
		"d": mk("d", true, true, false), "e": mk("e", true, false, true), "f": mk("f", false, false, false),
		"u": groups.New("u"),
	}
	want := groups.CountsOf(states)
	require.Equal(t, groups.Counts{Groups: map[string]int{"open": 2, "closed": 1, "restricted": 1, "closed_restricted": 1,
		"deleted": 1, "uncreated": 1}, Members: 10, Pending: 10}, want)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, groups.Replace(ctx, tx, states))
	require.NoError(t, tx.Commit(ctx))
	got, err := groups.CountLive(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
