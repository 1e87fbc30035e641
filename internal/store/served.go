package store

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Served holds the NIP-01 JSON of the events a query read under WithServed,
// built from the stored bytes (the tags' jsonb text and the content) instead
// of decoding the tags into nostr.Tags and encoding the event again.
//
// Under WithServed, Query, QuerySnapshot and Events return events that carry
// ID, PubKey, CreatedAt and Kind, Tags only for addressable kinds (so that
// protocol.EffectiveKey works on every one of them), and neither Content nor
// Sig: their JSON (Served.JSON) holds the whole event. A row budget
// (WithRowBudget) is asked, for each row, for the bytes held for it: its JSON,
// ID, PubKey and any decoded tags.
//
// A query of several filters (at most 64) also records, for each event it
// returns, which filters' own answers held it (From).
type Served struct {
	json map[*nostr.Event][]byte
	from map[*nostr.Event]uint64
}

type servedKey struct{}

// WithServed returns a context under which the store's reads fill sv (see
// Served). A Served is used by one goroutine at a time.
func WithServed(ctx context.Context, sv *Served) context.Context {
	return context.WithValue(ctx, servedKey{}, sv)
}

// Take returns the event JSON (an object, valid JSON, whose fields are the
// stored event's) of an event returned under WithServed(sv), and forgets it;
// nil for any other event, or once taken.
func (sv *Served) Take(ev *nostr.Event) []byte {
	if sv == nil {
		return nil
	}
	js := sv.json[ev]
	delete(sv.json, ev)
	return js
}

// JSON returns ev's JSON as Take does, but keeps it.
func (sv *Served) JSON(ev *nostr.Event) []byte {
	if sv == nil {
		return nil
	}
	return sv.json[ev]
}

// Put records js as ev's JSON, for events that come from elsewhere than the
// store (the relay's event cache), so that Take returns it.
func (sv *Served) Put(ev *nostr.Event, js []byte) {
	if sv.json == nil {
		sv.json = make(map[*nostr.Event][]byte)
	}
	sv.json[ev] = js
}

// From returns which filters of a query of several (2 to 64) held ev in
// their own answer, newest first and cut to their Limit: bit i for filters[i].
// An event matching filter i may be returned for another filter only (it is
// older than filter i's Limit newest): bit i is then unset. 0 for any other
// event than one such a query returned under WithServed(sv).
func (sv *Served) From(ev *nostr.Event) uint64 {
	if sv == nil {
		return 0
	}
	return sv.from[ev]
}

func served(ctx context.Context) *Served {
	sv, _ := ctx.Value(servedKey{}).(*Served)
	return sv
}

// scanServed reads eventColumns (then extra) as scanEvent does, but keeps the
// event's JSON in sv instead of its tags, content and sig; size is the bytes
// held for it.
func scanServed(sv *Served, row pgx.CollectableRow, extra ...any) (ev *nostr.Event, size int, err error) {
	ev = &nostr.Event{}
	var createdAt int64
	var kind int32
	var tags, content, sig string
	if err := row.Scan(append([]any{&ev.ID, &ev.PubKey, &createdAt, &kind, &tags, &content, &sig}, extra...)...); err != nil {
		return nil, 0, err
	}
	ev.CreatedAt, ev.Kind = nostr.Timestamp(createdAt), int(kind)
	size = len(ev.ID) + len(ev.PubKey)
	if protocol.ClassOf(ev.Kind) == protocol.Addressable {
		if ev.Tags, err = decodeTags(tags); err != nil {
			return nil, 0, err
		}
		size += len(tags) // (about what the decoded tags hold)
	}
	js := appendEventJSON(make([]byte, 0, len(`{"id":"","pubkey":"","created_at":,"kind":,"tags":,"content":"","sig":""}`)+
		len(ev.ID)+len(ev.PubKey)+20+len(tags)+len(content)+len(content)/8+len(sig)), ev.ID, ev.PubKey, createdAt, kind, tags, content, sig)
	if sv.json == nil {
		sv.json = make(map[*nostr.Event][]byte)
	}
	sv.json[ev] = js
	return ev, size + len(js), nil
}

// appendEventJSON appends the event's JSON object: tags is the stored jsonb
// text (valid JSON: Postgres escapes what JSON requires), every string is
// escaped as JSON requires. Key order and whitespace do not matter to a
// client: the id is over the NIP-01 serialization of the parsed values.
func appendEventJSON(b []byte, id, pubkey string, createdAt int64, kind int32, tags, content, sig string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"pubkey":`...)
	b = appendJSONString(b, pubkey)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, createdAt, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(kind), 10)
	b = append(b, `,"tags":`...)
	b = append(b, tags...)
	b = append(b, `,"content":`...)
	b = appendJSONString(b, content)
	b = append(b, `,"sig":`...)
	b = appendJSONString(b, sig)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: '"', '\\' and the control
// characters are escaped, everything else (valid UTF-8, as Postgres text
// always is) is copied.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
