package relayadmin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

// TestAdminDispatch runs the dispatch of NIP-86 calls with no database:
// supportedmethods lists the relay's methods in NIP-86 order, then the
// groups', replayconsumer and the extensions'; every other call below is
// refused for its params before anything is read, with the texts the relay
// has answered (checked against 5bc501a's Admin.Do).
func TestAdminDispatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &relayadmin.Admin{} // no Pool: a call that reached the database would panic
	got, err := a.Do(ctx, relayadmin.Actor{Name: "op@host", Source: "cnctl"}, "supportedmethods", nil)
	require.NoError(t, err)
	own := []string{"supportedmethods",
		"banpubkey", "unbanpubkey", "listbannedpubkeys",
		"allowpubkey", "unallowpubkey", "listallowedpubkeys",
		"listeventsneedingmoderation",
		"allowevent", "unallowevent", "banevent", "unbanevent", "listbannedevents", "listallowedevents",
		"changerelayname", "changerelaydescription", "changerelayicon",
		"allowkind", "disallowkind", "listallowedkinds", "listdisallowedkinds",
		"blockip", "unblockip", "listblockedips",
		"listgroups", "listgroupmembers",
		"replayconsumer"}
	require.Equal(t, own, got)

	pk := strings.Repeat("ab", 32)
	for _, c := range []struct {
		method string
		params []any
		want   string
	}{
		{"nosuchmethod", nil, `unsupported method "nosuchmethod"`},
		{"supportedmethods", []any{nil}, "supportedmethods takes 0 parameters, got 1"},
		{"listbannedpubkeys", []any{"x"}, "listbannedpubkeys takes 0 parameters, got 1"},
		{"banpubkey", nil, "banpubkey takes 1 to 2 parameters, got 0"},
		{"banpubkey", []any{pk, "r", "x"}, "banpubkey takes 1 to 2 parameters, got 3"},
		{"banpubkey", []any{"npub1xyz"}, "pubkey must be 64 lowercase hex characters"},
		{"banpubkey", []any{nil}, "parameter 1 (pubkey) must be a string"},
		{"banpubkey", []any{pk, nil}, "parameter 2 (reason) must be a string"},
		{"unbanevent", []any{pk, 5}, "parameter 2 (reason) must be a string"},
		{"allowevent", []any{"x"}, "event id must be 64 lowercase hex characters"},
		{"allowkind", []any{"one"}, "the kind must be a number from 0 to 65535"},
		{"disallowkind", []any{70000}, "the kind must be a number from 0 to 65535"},
		{"allowkind", []any{1, 2}, "allowkind takes 1 parameters, got 2"},
		{"blockip", []any{"not an ip"}, `"not an ip" is not an IP address or CIDR prefix`},
		{"blockip", []any{7}, "parameter 1 (ip address) must be a string"},
		{"changerelayname", []any{7}, "parameter 1 (value) must be a string"},
		{"listgroups", []any{"tea"}, "listgroups takes 0 parameters, got 1"},
		{"listgroupmembers", nil, "listgroupmembers takes 1 parameters (the group id), got 0"},
		{"listgroupmembers", []any{7}, "parameter 1 (group id) must be a string"},
		{"replayconsumer", []any{"c", 1}, "replayconsumer takes 3 parameters, got 2"},
		{"replayconsumer", []any{"c", -1, 0}, "parameter 2 (to_seq) must be an outbox seq (an integer, 0 or more)"},
		{"replayconsumer", []any{7, 0, 0}, "parameter 1 (consumer) must be a string"},
	} {
		var raw []json.RawMessage
		for _, p := range c.params {
			b, err := json.Marshal(p)
			require.NoError(t, err)
			raw = append(raw, b)
		}
		_, err := a.Do(ctx, relayadmin.Actor{Name: pk, Source: "nip86"}, c.method, raw)
		require.Error(t, err, "%s %v", c.method, c.params)
		require.Equal(t, "bad request: "+c.want, err.Error(), "%s %v", c.method, c.params)
		require.True(t, errors.As(err, new(*nip86.BadRequest)), "%s %v", c.method, c.params)
	}
}

// listed is an Extension that declares two methods.
type listed struct{}

func (listed) Methods() []nip86.Method {
	do := func(_ context.Context, c *nip86.Call) (any, error) { return c.Method + " by " + c.Actor, c.Err() }
	return []nip86.Method{{Name: "listthings", Do: do}, {Name: "addthing", Min: 1, Max: 1, Do: do}}
}

// TestAdminExtensions: an extension's methods are served as the relay's own
// (the same arity check and error type) and listed after them.
func TestAdminExtensions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &relayadmin.Admin{Extensions: []relayadmin.Extension{listed{}}}
	actor := relayadmin.Actor{Name: "op@host", Source: "cnctl"}
	got, err := a.Do(ctx, actor, "supportedmethods", nil)
	require.NoError(t, err)
	names := got.([]string)
	require.Equal(t, []string{"replayconsumer", "listthings", "addthing"}, names[len(names)-3:])
	res, err := a.Do(ctx, actor, "listthings", nil)
	require.NoError(t, err)
	require.Equal(t, "listthings by op@host", res)
	_, err = a.Do(ctx, actor, "addthing", nil)
	require.EqualError(t, err, "bad request: addthing takes 1 parameters, got 0")
	require.True(t, errors.As(err, new(*nip86.BadRequest)))
}
