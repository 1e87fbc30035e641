package relayadmin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestGroupMethods: a relay admin lists the groups and one group's members,
// roles and pending join requests over NIP-86; invite codes are counted, not
// shown; a group's own admin (not a relay admin) gets 403: group admins act
// with signed moderation events, decided by the group's roles.
func TestGroupMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	st := testkit.NewStore(db.Pool)
	testkit.HostGroups(t, st, testkit.GroupOpts{})
	admin, owner, mod, waiting := testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t), testkit.NewKey(t)
	at := nostr.Now()
	ev := func(k testkit.Key, kind int, tags ...nostr.Tag) *nostr.Event {
		return k.Sign(t, &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", "tea"}}, tags...)})
	}
	res, err := st.Ingest(ctx, []*nostr.Event{
		ev(owner, groups.KindCreateGroup),
		ev(owner, groups.KindEditMetadata, nostr.Tag{"name", "Tea"}, nostr.Tag{"closed"}),
		ev(owner, groups.KindPutUser, nostr.Tag{"p", mod.PK, "moderator"}),
		ev(owner, groups.KindCreateInvite, nostr.Tag{"code", "oolong"}),
		ev(waiting, groups.KindJoinRequest, nostr.Tag{"code", "wrong"}),
	})
	require.NoError(t, err)
	for i, v := range res[:4] {
		require.True(t, v.OK, "%d: %s", i, v.Message)
	}
	require.False(t, res[4].OK, "a wrong code waits for review")

	r := startRelay(t, db, admin.PK)
	status, body := call(t, r, admin, "supportedmethods", nil, nil)
	require.Equal(t, http.StatusOK, status)
	require.Subset(t, body["result"], []any{"listgroups", "listgroupmembers"})

	status, body = call(t, r, admin, "listgroups", nil, nil)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, []any{map[string]any{"id": "tea", "name": "Tea", "flags": "closed", "members": 2.0, "pending": 1.0,
		"invites": 1.0, "created_at": float64(at), "creator": owner.PK}}, body["result"])

	status, body = call(t, r, admin, "listgroupmembers", []any{"tea"}, nil)
	require.Equal(t, http.StatusOK, status, body)
	got := body["result"].(map[string]any)
	require.Equal(t, "closed", got["flags"])
	require.Equal(t, 1.0, got["invites"])
	require.ElementsMatch(t, []any{
		map[string]any{"pubkey": owner.PK, "roles": []any{"admin"}, "since": float64(at)},
		map[string]any{"pubkey": mod.PK, "roles": []any{"moderator"}, "since": float64(at)},
	}, got["members"])
	require.Equal(t, []any{map[string]any{"pubkey": waiting.PK, "created_at": float64(at)}}, got["pending"],
		"a withheld request (it carried a code) is listed, its code is not")
	require.NotContains(t, mustJSON(t, body), "oolong")
	require.NotContains(t, mustJSON(t, body), "wrong")

	status, body = call(t, r, admin, "listgroupmembers", []any{"coffee"}, nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body["error"], `no group "coffee"`)
	status, _ = call(t, r, admin, "listgroupmembers", nil, nil)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = call(t, r, admin, "listgroupmembers", []any{7}, nil)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = call(t, r, admin, "listgroups", []any{"tea"}, nil)
	require.Equal(t, http.StatusBadRequest, status)

	status, body = call(t, r, owner, "listgroupmembers", []any{"tea"}, nil)
	require.Equal(t, http.StatusForbidden, status, "the group's admin is no relay admin")
	require.Contains(t, body["error"], "not an admin of this relay")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
