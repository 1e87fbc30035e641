package store

import (
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// readOpts is how a read of the read contract (Reader.Read, readpath) reads:
// take is the Request's Take, and sv receives the events' JSON. A nil
// *readOpts reads whole events (Content, Sig and Tags decoded), without a
// budget: Query, QuerySnapshot and Events for the store's other callers.
//
// Under sv, the events carry ID, PubKey, CreatedAt and Kind, Tags only for
// addressable kinds (so that protocol.EffectiveKey works on every one of
// them), and neither Content nor Sig: their JSON, built from the stored
// bytes (the tags' jsonb text and the content) instead of decoding the tags
// and encoding the event again, holds the whole event. take is asked, for
// each row, for the bytes held for it: its JSON, ID, PubKey and any decoded
// tags (without sv: the row's raw size, about its JSON size). When take
// refuses, the read stops (the rest of that filter's rows and any further
// filter are skipped) and returns what it read so far, without an error.
type readOpts struct {
	take    func(n int) bool
	sv      *served
	stopped bool // take refused (newReadOpts)
}

// newReadOpts returns the options of a read that req asks for: its events
// come with their JSON, under req.Take; a refusal is recorded (result:
// Stopped).
func newReadOpts(req readpath.Request) *readOpts {
	o := &readOpts{sv: &served{}}
	if req.Take != nil {
		o.take = func(n int) bool {
			if !req.Take(n) {
				o.stopped = true
				return false
			}
			return true
		}
	}
	return o
}

// result returns the read contract's answer for evs, which the read returned
// under o, read at seq.
func (o *readOpts) result(evs []*nostr.Event, seq int64) readpath.Result {
	res := o.sv.result(evs, seq)
	res.Stopped = o.stopped
	return res
}

// budget returns o's take, or nil.
func (o *readOpts) budget() func(int) bool {
	if o == nil {
		return nil
	}
	return o.take
}

// json returns o's served, or nil.
func (o *readOpts) json() *served {
	if o == nil {
		return nil
	}
	return o.sv
}

// served holds the JSON of the events a read returned (see readOpts) and,
// for a read of 2 to 64 filters, which filters' own answers held each.
// A served is used by one goroutine at a time.
type served struct {
	json map[*nostr.Event][]byte
	from map[*nostr.Event]uint64
}

// result returns the read contract's answer for evs, which the read returned
// under sv.
func (sv *served) result(evs []*nostr.Event, seq int64) readpath.Result {
	res := readpath.Result{Events: evs, JSON: make([][]byte, len(evs)), Seq: seq, Source: readpath.Primary}
	for i, ev := range evs {
		res.JSON[i] = sv.json[ev]
	}
	if sv.from != nil {
		res.From = make([]uint64, len(evs))
		for i, ev := range evs {
			res.From[i] = sv.from[ev]
		}
	}
	return res
}

// scanServed reads eventColumns (then extra) as scanEvent does, but keeps the
// event's JSON in sv instead of its tags, content and sig; size is the bytes
// held for it.
func scanServed(sv *served, row pgx.CollectableRow, extra ...any) (ev *nostr.Event, size int, err error) {
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
