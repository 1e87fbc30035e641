package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/tidwall/gjson"
)

// Client message types (the first element of the JSON array).
const (
	TypeEvent = "EVENT"
	TypeReq   = "REQ"
	TypeClose = "CLOSE"
	TypeCount = "COUNT"
	TypeAuth  = "AUTH"

	// NIP-77 negentropy sync.
	TypeNegOpen  = "NEG-OPEN"
	TypeNegMsg   = "NEG-MSG"
	TypeNegClose = "NEG-CLOSE"
)

// ClientMessage is a parsed client->relay message.
type ClientMessage struct {
	Type    string         // one of the Type* constants
	Event   *nostr.Event   // EVENT, AUTH: the seven NIP-01 fields only, Tags never nil
	SubID   string         // REQ, CLOSE, COUNT, NEG-*: 1..MaxSubIDBytes bytes
	Filters []nostr.Filter // REQ, COUNT: 1..MaxFilters filters; NEG-OPEN: exactly one; not yet validated
	// Neg is the negentropy message of NEG-OPEN and NEG-MSG: a string, not yet
	// checked (internal/negentropy.Check does that).
	Neg string
}

// ParseError is why a client message was refused. Error returns Reason, a NIP-01
// message ("invalid: ...") fit for a NOTICE.
//
// When enough of the message was readable to answer it properly, the error says so:
// Type is the recognised message type, SubID is set for a REQ or COUNT whose
// subscription id was valid (answer with CLOSED, so the client does not wait for an
// EOSE that never comes), and EventID is set for an EVENT whose object had a
// well-formed id (answer with OK false, as NIP-01 requires for every EVENT).
// For the NEG-* messages SubID is set when the subscription id was valid
// (answer with NEG-ERR).
type ParseError struct {
	Type    string
	SubID   string
	EventID string
	Reason  string
}

func (e *ParseError) Error() string { return e.Reason }

// maxEcho bounds how much client input is quoted back in a reason.
const maxEcho = 64

// ParseClientMessage parses one WebSocket text message. Every failure is a
// *ParseError; it never panics, whatever the input.
//
// The message must be at most MaxMessageBytes, valid UTF-8 and valid JSON: an array
// whose first element is one of the type strings (case-sensitive). Then:
//
//	["EVENT", <event>] and ["AUTH", <event>]: exactly two elements; the event is an
//	  object with all seven NIP-01 fields, of the right JSON types (strings, integer
//	  numbers, an array of arrays of strings). Other fields are dropped.
//	["REQ", <sub>, <filter>...] and ["COUNT", <sub>, <filter>...]: a non-empty string
//	  subscription id of at most MaxSubIDBytes, then 1..MaxFilters filter objects with
//	  well-typed values. A key with a null value counts as absent. A key other than
//	  ids, authors, kinds, since, until, limit, search and "#" followed by a tag name
//	  is refused ("invalid: unknown filter field ..."): go-nostr's decoder would drop
//	  it, and the filter would match more than its author meant.
//	["CLOSE", <sub>]: exactly two elements.
//	["NEG-OPEN", <sub>, <filter>, <message>]: exactly four elements, the filter as
//	  for REQ, the message a string. ["NEG-MSG", <sub>, <message>]: exactly three.
//	  ["NEG-CLOSE", <sub>]: exactly two (NIP-77).
//
// Parsing checks shape only; the caller runs ValidateEvent and ValidateFilter.
func ParseClientMessage(data []byte, l Limits) (ClientMessage, error) {
	if l.MaxMessageBytes > 0 && len(data) > l.MaxMessageBytes {
		err := fail("", "invalid: message too large (%d bytes, limit %d)", len(data), l.MaxMessageBytes)
		err.Type, err.SubID = peekSub(data, l)
		return ClientMessage{}, err
	}
	if !utf8.Valid(data) {
		return ClientMessage{}, fail("", "invalid: message is not valid UTF-8")
	}
	if !gjson.ValidBytes(data) {
		return ClientMessage{}, fail("", "invalid: message is not valid JSON")
	}
	root := gjson.ParseBytes(data)
	if !root.IsArray() {
		return ClientMessage{}, fail("", "invalid: message must be a JSON array")
	}
	arr := root.Array()
	if len(arr) == 0 {
		return ClientMessage{}, fail("", "invalid: empty message")
	}
	if arr[0].Type != gjson.String {
		return ClientMessage{}, fail("", "invalid: message type must be a string")
	}
	switch typ := arr[0].Str; typ {
	case TypeEvent, TypeAuth:
		return parseEventMessage(typ, arr)
	case TypeReq, TypeCount:
		return parseReqMessage(typ, arr, l)
	case TypeClose:
		if len(arr) != 2 {
			return ClientMessage{}, fail(typ, "invalid: CLOSE takes exactly one subscription id")
		}
		sub, reason := subID(arr[1], l)
		if reason != "" {
			return ClientMessage{}, fail(typ, "%s", reason)
		}
		return ClientMessage{Type: typ, SubID: sub}, nil
	case TypeNegOpen, TypeNegMsg, TypeNegClose:
		return parseNegMessage(typ, arr, l)
	default:
		return ClientMessage{}, fail("", "invalid: unknown message type %q", truncate(typ))
	}
}

func parseEventMessage(typ string, arr []gjson.Result) (ClientMessage, error) {
	if len(arr) != 2 {
		return ClientMessage{}, fail(typ, "invalid: %s takes exactly one event", typ)
	}
	obj := arr[1]
	if !obj.IsObject() {
		return ClientMessage{}, fail(typ, "invalid: %s needs an event object", typ)
	}
	// Record the JSON type of each NIP-01 field. Keys are compared as written, without
	// unescaping, and with duplicate keys the last one wins: both as in go-nostr's
	// decoder below, so the checks see the fields it decodes.
	kinds := map[string]string{}
	eventID := ""
	obj.ForEach(func(k, v gjson.Result) bool {
		name := strings.TrimSuffix(strings.TrimPrefix(k.Raw, `"`), `"`)
		switch name {
		case "id", "pubkey", "created_at", "kind", "tags", "content", "sig":
			kinds[name] = jsonKind(v)
		}
		if name == "id" {
			eventID = ""
			if v.Type == gjson.String && isLowerHex(v.Str, 64) {
				eventID = v.Str
			}
		}
		return true
	})
	perr := func(format string, args ...any) error {
		e := fail(typ, format, args...)
		e.EventID = eventID
		return e
	}
	for _, field := range [...]struct{ name, want string }{
		{"id", "string"},
		{"pubkey", "string"},
		{"created_at", "number"},
		{"kind", "number"},
		{"tags", "array"},
		{"content", "string"},
		{"sig", "string"},
	} {
		got := kinds[field.name]
		if got == "" || got == "null" {
			return ClientMessage{}, perr("invalid: event has no %q", field.name)
		}
		if got != field.want {
			return ClientMessage{}, perr("invalid: event field %q must be a JSON %s", field.name, field.want)
		}
	}
	var decoded nostr.Event
	if err := decoded.UnmarshalJSON([]byte(obj.Raw)); err != nil {
		// easyjson rejects non-integer numbers and non-string tag elements.
		return ClientMessage{}, perr("invalid: malformed event (created_at and kind must be integers, tags arrays of strings)")
	}
	// Copy the NIP-01 fields only: go-nostr would otherwise keep unknown fields and
	// write them back out when the event is marshalled.
	ev := &nostr.Event{
		ID:        decoded.ID,
		PubKey:    decoded.PubKey,
		CreatedAt: decoded.CreatedAt,
		Kind:      decoded.Kind,
		Tags:      decoded.Tags,
		Content:   decoded.Content,
		Sig:       decoded.Sig,
	}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	return ClientMessage{Type: typ, Event: ev}, nil
}

// jsonKind names the JSON type of v: string, number, array, object, bool or null.
func jsonKind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "bool"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "array"
	}
	return "object"
}

func parseReqMessage(typ string, arr []gjson.Result, l Limits) (ClientMessage, error) {
	if len(arr) < 2 {
		return ClientMessage{}, fail(typ, "invalid: %s needs a subscription id and at least one filter", typ)
	}
	sub, perr, err := subscription(typ, arr[1], l)
	if err != nil {
		return ClientMessage{}, err
	}
	n := len(arr) - 2
	if n == 0 {
		return ClientMessage{}, perr("invalid: %s needs at least one filter", typ)
	}
	if l.MaxFilters > 0 && n > l.MaxFilters {
		return ClientMessage{}, perr("invalid: too many filters (%d, limit %d)", n, l.MaxFilters)
	}
	filters := make([]nostr.Filter, n)
	for i := range filters {
		raw := arr[i+2]
		if !raw.IsObject() {
			return ClientMessage{}, perr("invalid: filter %d is not a JSON object", i+1)
		}
		if name, ok := unknownFilterField(raw); ok {
			return ClientMessage{}, perr("invalid: unknown filter field %q", truncate(name))
		}
		if err := filters[i].UnmarshalJSON([]byte(raw.Raw)); err != nil {
			return ClientMessage{}, perr("invalid: filter %d is malformed (lists of strings or integers, integer since/until/limit)", i+1)
		}
	}
	return ClientMessage{Type: typ, SubID: sub, Filters: filters}, nil
}

// parseNegMessage parses the NIP-77 messages.
func parseNegMessage(typ string, arr []gjson.Result, l Limits) (ClientMessage, error) {
	if len(arr) < 2 {
		return ClientMessage{}, fail(typ, "invalid: %s needs a subscription id", typ)
	}
	sub, perr, err := subscription(typ, arr[1], l)
	if err != nil {
		return ClientMessage{}, err
	}
	want := map[string]int{TypeNegOpen: 4, TypeNegMsg: 3, TypeNegClose: 2}[typ]
	if len(arr) != want {
		return ClientMessage{}, perr("invalid: %s takes exactly %d elements", typ, want)
	}
	msg := ClientMessage{Type: typ, SubID: sub}
	if typ == TypeNegClose {
		return msg, nil
	}
	neg := arr[len(arr)-1]
	if neg.Type != gjson.String {
		return ClientMessage{}, perr("invalid: %s message must be a string", typ)
	}
	msg.Neg = neg.Str
	if typ == TypeNegOpen {
		raw := arr[2]
		if !raw.IsObject() {
			return ClientMessage{}, perr("invalid: NEG-OPEN filter is not a JSON object")
		}
		if name, ok := unknownFilterField(raw); ok {
			return ClientMessage{}, perr("invalid: unknown filter field %q", truncate(name))
		}
		var f nostr.Filter
		if err := f.UnmarshalJSON([]byte(raw.Raw)); err != nil {
			return ClientMessage{}, perr("invalid: filter is malformed (lists of strings or integers, integer since/until/limit)")
		}
		msg.Filters = []nostr.Filter{f}
	}
	return msg, nil
}

// unknownFilterField returns the first key of the filter object raw that is not a
// NIP-01 filter field. Keys are compared as written, without unescaping (as for
// events), so an escaped spelling of a field name is unknown too. A tag filter is
// "#" and a name; names longer than one letter are known here and refused by
// ValidateFilter as unsupported, "#" alone is unknown.
func unknownFilterField(raw gjson.Result) (string, bool) {
	var unknown string
	found := false
	raw.ForEach(func(k, _ gjson.Result) bool {
		name := strings.TrimSuffix(strings.TrimPrefix(k.Raw, `"`), `"`)
		switch name {
		case "ids", "authors", "kinds", "since", "until", "limit", "search":
			return true
		}
		if len(name) > 1 && name[0] == '#' {
			return true
		}
		unknown, found = name, true
		return false
	})
	return unknown, found
}

// subID returns a valid subscription id, or "" and a reason.
func subID(v gjson.Result, l Limits) (string, string) {
	if v.Type != gjson.String {
		return "", "invalid: subscription id must be a string"
	}
	if v.Str == "" {
		return "", "invalid: subscription id must not be empty"
	}
	if l.MaxSubIDBytes > 0 && len(v.Str) > l.MaxSubIDBytes {
		return "", fmt.Sprintf("invalid: subscription id longer than %d bytes", l.MaxSubIDBytes)
	}
	return v.Str, ""
}

// subscription reads a message's subscription id and returns it with the
// constructor of its refusals, which name it (so that the answer is a CLOSED
// or NEG-ERR for that subscription, not a NOTICE).
func subscription(typ string, raw gjson.Result, l Limits) (string, func(format string, args ...any) error, error) {
	sub, reason := subID(raw, l)
	if reason != "" {
		return "", nil, fail(typ, "%s", reason)
	}
	return sub, func(format string, args ...any) error {
		e := fail(typ, format, args...)
		e.SubID = sub
		return e
	}, nil
}

func fail(typ, format string, args ...any) *ParseError {
	return &ParseError{Type: typ, Reason: fmt.Sprintf(format, args...)}
}

// truncate shortens client input quoted in a reason to at most maxEcho bytes,
// cutting at a rune boundary.
func truncate(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	i := maxEcho
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// peekSub reads the type and subscription id at the head of a message too
// large to parse (["REQ", "sub", ... or ["NEG-MSG", "sub", ...), so that the
// refusal can name the subscription; it reads at most the first 1 KiB and
// returns "", "" for anything else.
func peekSub(data []byte, l Limits) (typ, sub string) {
	dec := json.NewDecoder(bytes.NewReader(data[:min(len(data), 1024)]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return "", ""
	}
	t, err := dec.Token()
	typ, ok := t.(string)
	if err != nil || !ok {
		return "", ""
	}
	switch typ {
	case TypeReq, TypeCount, TypeNegOpen, TypeNegMsg, TypeNegClose:
	default:
		return "", ""
	}
	t, err = dec.Token()
	sub, ok = t.(string)
	if err != nil || !ok || sub == "" || len(sub) > l.MaxSubIDBytes || !utf8.ValidString(sub) {
		return "", ""
	}
	return typ, sub
}
