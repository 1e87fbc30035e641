package membership_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

// TestAdminDispatch runs the membership methods' dispatch with no relay and no
// database: every call below is refused for its params before anything is
// read or written, with the texts NIP-86 and cnctl members have answered
// since the methods were written (checked against 5bc501a's Service.Do).
func TestAdminDispatch(t *testing.T) {
	t.Parallel()
	svc := &membership.Service{} // no Pool: a call that reached the database would panic
	pk := strings.Repeat("ab", 32)
	for _, c := range []struct {
		method string
		params []any
		want   string
	}{
		{"addmember", nil, "addmember needs a pubkey"},
		{"addmember", []any{"nothex"}, `addmember: "nothex" is not a 64-character hex pubkey`},
		{"addmember", []any{7}, "addmember: a pubkey must be a string"},
		{"addmember", []any{pk, 5}, "addmember: a reason must be a string"},
		{"addmember", []any{pk, "r", "admin"}, "addmember: roles must be an array of role ids"},
		{"removemember", nil, "removemember needs a pubkey"},
		{"removemember", []any{strings.ToUpper(pk)}, `removemember: "` + strings.ToUpper(pk) + `" is not a 64-character hex pubkey`},
		{"setrole", nil, "setrole needs a role id"},
		{"setrole", []any{"no spaces"}, "setrole: " + membership.ValidRoleID("no spaces").Error()},
		{"setrole", []any{"mod", map[string]any{"colour": "red"}}, "setrole: the second param is an object with string fields label, description, color, order"},
		{"removerole", []any{""}, "removerole: " + membership.ValidRoleID("").Error()},
		{"assignrole", []any{pk}, "assignrole needs a role id"},
		{"unassignrole", []any{"x", "mod"}, `unassignrole: "x" is not a 64-character hex pubkey`},
		{"admitmember", nil, "admitmember needs a pubkey"},
		{"denymember", []any{pk[:63]}, `denymember: "` + pk[:63] + `" is not a 64-character hex pubkey`},
		{"mintinvite", []any{0}, "mintinvite: ttl_seconds must be a positive number of seconds, at most 30 days"},
		{"mintinvite", []any{"3600"}, "mintinvite: ttl_seconds must be a positive number of seconds, at most 30 days"},
		{"mintinvite", []any{30*24*3600 + 1}, "mintinvite: ttl_seconds must be a positive number of seconds, at most 30 days"},
		{"revokeinvite", nil, "revokeinvite needs a claim or an invite id"},
		{"revokeinvite", []any{true}, "revokeinvite: a claim or an invite id must be a string"},
		{"nosuchmethod", nil, `unsupported method "nosuchmethod"`},
	} {
		var raw []json.RawMessage
		for _, p := range c.params {
			b, err := json.Marshal(p)
			require.NoError(t, err)
			raw = append(raw, b)
		}
		_, err := svc.Do(context.Background(), pk, "nip86", c.method, raw)
		var bad *nip86.BadRequest
		require.True(t, errors.As(err, &bad), "%s %v: %v", c.method, c.params, err)
		require.Equal(t, c.want, bad.Reason, "%s %v", c.method, c.params)
		require.Equal(t, "bad request: "+c.want, err.Error(), "the NIP-86 answer's error")
	}
}

// TestAdminMethodsDeclared: each membership method is declared once, takes
// any number of params (as it always has), and AdminMethods lists them.
func TestAdminMethodsDeclared(t *testing.T) {
	t.Parallel()
	ms := (&membership.Service{}).Methods()
	seen := map[string]bool{}
	for _, m := range ms {
		require.False(t, seen[m.Name], "%s declared twice", m.Name)
		seen[m.Name] = true
		require.Equal(t, nip86.AnyParams, m.Max, m.Name)
		require.NotNil(t, m.Do, m.Name)
	}
	require.Equal(t, membership.AdminMethods, nip86.Set(ms).Names())
	require.Equal(t, []string{"listmembers", "addmember", "removemember", "mintinvite", "revokeinvite", "listinvites",
		"listpendingmembers", "admitmember", "denymember", "listroles", "setrole", "removerole", "assignrole", "unassignrole"},
		membership.AdminMethods)
}
