// Package nip86 declares the relay's NIP-86 management methods one way. The
// package that owns a method declares it once, as a Method: its name, how
// many params it takes, and its handler, which reads the params with the one
// reader (Params) and refuses a call with the one error type (BadRequest).
// relayadmin serves every declared method (its own, the groups' and, when the
// node keeps NIP-43 membership, membership's) through Set.Do, as cnctl does.
//
// It imports none of the packages that declare methods (relayadmin, groups,
// membership), so the store may import membership while relayadmin imports
// the store.
package nip86

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kukuri/communitynode/internal/protocol"
)

// AnyParams as a Method's Max: the handler reads the params it needs and
// ignores any others (membership's methods, as they always have).
const AnyParams = -1

// Method is one NIP-86 method.
type Method struct {
	Name string
	// Min and Max bound the number of params: a call outside is refused
	// before the handler runs (extra params are an error, not ignored),
	// unless Max is AnyParams.
	Min, Max int
	// About names the params in that refusal, e.g. "the group id"; optional.
	About string
	// Do runs the method. A change commits in one transaction with its log
	// row (cn_admin.log) before Do returns.
	Do func(ctx context.Context, c *Call) (any, error)
}

// Call is one call of a method: who makes it and its params.
type Call struct {
	// Actor is an admin's pubkey (Source "nip86") or an operator's user@host
	// (Source "cnctl").
	Actor, Source string
	Params
}

// Set is the methods a relay serves, in the order supportedmethods lists them.
type Set []Method

// Names lists the methods' names in order.
func (s Set) Names() []string {
	out := make([]string, len(s))
	for i, m := range s {
		out[i] = m.Name
	}
	return out
}

// Do runs the named method with params (NIP-86's JSON values) as actor. An
// unknown method, or a number of params the method does not take, is a
// BadRequest.
func (s Set) Do(ctx context.Context, actor, source, method string, params []json.RawMessage) (any, error) {
	i := slices.IndexFunc(s, func(m Method) bool { return m.Name == method })
	if i < 0 {
		return nil, Refuse("unsupported method %q", method)
	}
	m := s[i]
	if err := m.checkArity(len(params)); err != nil {
		return nil, err
	}
	return m.Do(ctx, &Call{Actor: actor, Source: source, Params: Params{Method: method, Raw: params}})
}

func (m Method) checkArity(n int) error {
	if m.Max == AnyParams || n >= m.Min && n <= m.Max {
		return nil
	}
	want := fmt.Sprintf("%d to %d parameters", m.Min, m.Max)
	if m.Min == m.Max {
		want = fmt.Sprintf("%d parameters", m.Min)
	}
	if m.About != "" {
		want += " (" + m.About + ")"
	}
	return Refuse("%s takes %s, got %d", m.Name, want, n)
}

// BadRequest is a call refused for what it asks: an unknown method, bad
// params, or a change the state refuses (no such group, no open invite). The
// relay answers it HTTP 400 with {"error": Error()}; cnctl exits 2.
type BadRequest struct {
	// Reason says what is wrong, without the "bad request: " of Error.
	Reason string
}

func (e *BadRequest) Error() string { return "bad request: " + e.Reason }

// Refuse returns a BadRequest whose Reason is formatted as fmt.Sprintf does.
func Refuse(format string, args ...any) error {
	return &BadRequest{Reason: fmt.Sprintf(format, args...)}
}

// Params reads a call's params. The first problem is kept (Err), as a
// BadRequest, and later reads return zero values, so that a handler reads
// all its params and then checks Err once.
type Params struct {
	Method string
	Raw    []json.RawMessage
	err    error
}

// Err is the first problem a read found, or nil.
func (p *Params) Err() error { return p.err }

// Fail keeps a problem (formatted as fmt.Sprintf does) unless one is kept.
func (p *Params) Fail(format string, args ...any) {
	if p.err == nil {
		p.err = Refuse(format, args...)
	}
}

// Len is the number of params.
func (p *Params) Len() int { return len(p.Raw) }

// String reads param i, which must be a JSON string (null is not).
func (p *Params) String(i int, what string) string {
	if p.err != nil {
		return ""
	}
	if i >= len(p.Raw) {
		p.Fail("missing parameter %d (%s)", i+1, what)
		return ""
	}
	var s string
	raw := bytes.TrimSpace(p.Raw[i])
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		p.Fail("parameter %d (%s) must be a string", i+1, what)
	}
	return s
}

// OptString reads param i as String does, or "" when there is none.
func (p *Params) OptString(i int, what string) string {
	if i >= len(p.Raw) {
		return ""
	}
	return p.String(i, what)
}

// Hex64 reads param i, which must be 64 lowercase hex characters (a pubkey or
// an event id).
func (p *Params) Hex64(i int, what string) string {
	s := p.String(i, what)
	if p.err == nil && !protocol.IsHex64(s) {
		p.Fail("%s must be 64 lowercase hex characters", what)
	}
	return s
}

// Kind reads param i, which must be an event kind (0 to 65535).
func (p *Params) Kind(i int) int {
	if p.err != nil {
		return 0
	}
	if i >= len(p.Raw) {
		p.Fail("missing parameter %d (kind)", i+1)
		return 0
	}
	var k int
	raw := bytes.TrimSpace(p.Raw[i])
	if len(raw) == 0 || raw[0] == 'n' || json.Unmarshal(raw, &k) != nil || k < 0 || k > 65535 {
		p.Fail("the kind must be a number from 0 to 65535")
	}
	return k
}

// Seq reads param i, which must be a non-negative integer (an outbox seq).
func (p *Params) Seq(i int, what string) int64 {
	if p.err != nil {
		return 0
	}
	if i >= len(p.Raw) {
		p.Fail("missing parameter %d (%s)", i+1, what)
		return 0
	}
	var n int64
	if err := json.Unmarshal(p.Raw[i], &n); err != nil || n < 0 {
		p.Fail("parameter %d (%s) must be an outbox seq (an integer, 0 or more)", i+1, what)
	}
	return n
}

// The reads below keep the texts membership's methods have always answered
// ("addmember needs a pubkey"): a JSON null reads as "".

// Text reads param i as a string named what ("a role id"); a missing one is
// a problem only when required.
func (p *Params) Text(i int, what string, required bool) string {
	if p.err != nil {
		return ""
	}
	if i >= len(p.Raw) {
		if required {
			p.Fail("%s needs %s", p.Method, what)
		}
		return ""
	}
	var v string
	if err := json.Unmarshal(p.Raw[i], &v); err != nil {
		p.Fail("%s: %s must be a string", p.Method, what)
	}
	return v
}

// Pubkey reads param i, a required 64-character hex pubkey.
func (p *Params) Pubkey(i int) string {
	pk := p.Text(i, "a pubkey", true)
	if p.err == nil && !protocol.IsHex64(pk) {
		p.Fail("%s: %q is not a 64-character hex pubkey", p.Method, pk)
	}
	return pk
}

// Decode reads param i, when there is one, into v (encoding/json, unknown
// object fields refused); problem is the BadRequest's reason when it fails.
// It reports whether param i was there.
func (p *Params) Decode(i int, v any, problem string) bool {
	if p.err != nil || i >= len(p.Raw) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(p.Raw[i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		p.Fail("%s", problem)
	}
	return true
}
