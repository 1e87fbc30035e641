package nip86_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

func raw(t *testing.T, vs ...any) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, v := range vs {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// TestParamsKeepTheFirstProblem: a handler reads all its params and checks
// Err once; the first problem is the answer, and later reads read nothing.
func TestParamsKeepTheFirstProblem(t *testing.T) {
	t.Parallel()
	p := nip86.Params{Method: "m", Raw: raw(t, 7, "ok", -1)}
	require.Equal(t, "", p.String(0, "name"))
	require.Equal(t, "", p.String(1, "other"), "no read after a problem")
	require.Zero(t, p.Seq(2, "seq"))
	var bad *nip86.BadRequest
	require.True(t, errors.As(p.Err(), &bad))
	require.Equal(t, "parameter 1 (name) must be a string", bad.Reason)
	require.EqualError(t, p.Err(), "bad request: parameter 1 (name) must be a string")

	q := nip86.Params{Method: "addmember", Raw: raw(t, nil)}
	require.Equal(t, "", q.Text(0, "a pubkey", true), "membership's reads take null as empty")
	require.NoError(t, q.Err())
	require.Equal(t, "", q.Text(1, "a reason", false))
	require.NoError(t, q.Err(), "a missing optional param is no problem")
	q.Pubkey(0)
	require.EqualError(t, q.Err(), `bad request: addmember: "" is not a 64-character hex pubkey`)
}

// TestSetDo: a Set refuses an unknown method and a number of params its
// method does not take, before the handler runs, unless it takes any.
func TestSetDo(t *testing.T) {
	t.Parallel()
	ran := 0
	do := func(_ context.Context, c *nip86.Call) (any, error) { ran++; return c.Actor + "/" + c.Source, nil }
	s := nip86.Set{{Name: "one", Min: 1, Max: 1, About: "the id", Do: do}, {Name: "some", Min: 0, Max: 2, Do: do},
		{Name: "any", Max: nip86.AnyParams, Do: do}}
	require.Equal(t, []string{"one", "some", "any"}, s.Names())
	ctx := context.Background()
	_, err := s.Do(ctx, "a", "nip86", "none", nil)
	require.EqualError(t, err, `bad request: unsupported method "none"`)
	_, err = s.Do(ctx, "a", "nip86", "one", nil)
	require.EqualError(t, err, "bad request: one takes 1 parameters (the id), got 0")
	_, err = s.Do(ctx, "a", "nip86", "some", raw(t, 1, 2, 3))
	require.EqualError(t, err, "bad request: some takes 0 to 2 parameters, got 3")
	require.Zero(t, ran)
	res, err := s.Do(ctx, "a", "cnctl", "any", raw(t, 1, 2, 3, 4))
	require.NoError(t, err)
	require.Equal(t, "a/cnctl", res)
}
