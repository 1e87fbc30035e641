package protocol

import (
	"slices"
	"strings"
)

// NIP-01's machine-readable prefixes of OK and CLOSED messages.
const (
	PrefixDuplicate    = "duplicate"
	PrefixPow          = "pow"
	PrefixBlocked      = "blocked"
	PrefixRateLimited  = "rate-limited"
	PrefixInvalid      = "invalid"
	PrefixRestricted   = "restricted"
	PrefixAuthRequired = "auth-required"
	PrefixMute         = "mute"
	PrefixError        = "error"
)

var prefixes = []string{PrefixDuplicate, PrefixPow, PrefixBlocked, PrefixRateLimited, PrefixInvalid,
	PrefixRestricted, PrefixAuthRequired, PrefixMute, PrefixError}

// Code names a refusal for machines: its NIP-01 prefix and a stable reason
// label ("unknown_group", "pending_full"). Metrics and tests use codes; the
// text of a message is for people and may change without breaking either
// (as with nats-server's JetStream errors, whose code is the API and whose
// description is not). Each package declares its refusals in one table
// (groups/reasons.go, membership/reasons.go, reasons.go here): a Reason per
// fixed text, a Code per formatted one.
type Code struct {
	Prefix string
	Label  string
}

// IsZero reports whether c is no code (an acceptance, or a refusal not
// declared in a table yet).
func (c Code) IsZero() bool { return c == Code{} }

// With is the refusal c with text (formatted by the function its table
// names for c).
func (c Code) With(text string) Reason { return Reason{Code: c, Text: text} }

// Reason is a declared refusal: its code and its text, the whole NIP-01
// message, prefix included.
type Reason struct {
	Code Code
	Text string
}

// Verdict is the refusal r (OK false).
func (r Reason) Verdict() Verdict { return Verdict{Message: r.Text, Code: r.Code} }

// UntypedCode is the code of a refusal not declared in a table yet (the
// relay's own, admission's, ValidateEvent's): its NIP-01 prefix, no label;
// the zero Code when msg has no NIP-01 prefix. It is the one place that
// reads a prefix from a text, until those refusals have tables too.
func UntypedCode(msg string) Code {
	if prefix, _, found := strings.Cut(msg, ":"); found && slices.Contains(prefixes, prefix) {
		return Code{Prefix: prefix}
	}
	return Code{}
}
