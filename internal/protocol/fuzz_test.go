package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/protocol"
)

// fuzzAudience is the relay URL fuzzed AUTH events are checked against.
var fuzzAudience, _ = audience.Parse([]string{"wss://relay.example.com"})

// fuzzEvent is a fixed event that parsed filters are matched against.
var fuzzEvent = &nostr.Event{
	ID: strings.Repeat("1", 64), PubKey: strings.Repeat("2", 64), CreatedAt: 100, Kind: 1,
	Tags: nostr.Tags{{"t", "go"}, {"t", "ＮＯＳＴＲ"}, {"p", strings.Repeat("3", 64)}, {"e"}, {}},
}

// FuzzParseClientMessage: no input makes ParseClientMessage (or the validation that
// follows it in the relay) panic, every failure is a *ParseError with an "invalid:"
// reason, and every success respects the limits.
func FuzzParseClientMessage(f *testing.F) {
	ev := &nostr.Event{Kind: 1, CreatedAt: 1700000000, Tags: nostr.Tags{{"t", "go"}}, Content: "hi"}
	if err := ev.Sign(strings.Repeat("01", 32)); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`["EVENT",` + ev.String() + `]`,
		`["AUTH",` + ev.String() + `]`,
		`["EVENT",{"id":"x","pubkey":"y","created_at":1,"kind":1,"tags":[["t","go"],[]],"content":"","sig":"z","extra":{"a":[1,2,{"b":null}]}}]`,
		`["EVENT",{"id":1,"kind":"1","tags":{},"created_at":1.5}]`,
		`["EVENT",null]`,
		`["EVENT","sub",{}]`,
		`["REQ","sub",{"#t":["go"],"kinds":[1],"authors":["` + strings.Repeat("a", 64) + `"],"since":1,"until":2,"limit":0}]`,
		`["REQ","sub",{"ids":[1]},{"#e":null,"search":"x","#tt":["y"],"limit":-1}]`,
		`["REQ","sub",{},{},{},{},{},{},{},{},{},{},{}]`,
		`["REQ",""]`,
		`["REQ",null,[]]`,
		`["COUNT","c",{"#t":["ＮＯＳＴＲ"]}]`,
		`["CLOSE","sub"]`,
		`["NEG-OPEN","n",{"kinds":[1]},"6100000200"]`,
		`["NEG-OPEN","n",{"kinds":[1]},"6101ffffffffffffffffff7f"]`,
		`["NEG-OPEN","n",{"foo":1},"61"]`,
		`["NEG-OPEN","n",{},61]`,
		`["NEG-MSG","n","610000020100"]`,
		`["NEG-MSG","n"]`,
		`["NEG-CLOSE","n"]`,
		`["NEG-CLOSE","n","x"]`,
		`["CLOSE"]`,
		`["NOTICE","x"]`,
		`[]`,
		`{}`,
		`[1e999]`,
		`["\u0045VENT"]`,
		"[\"CLOSE\",\"\\ud800\"]",
		"[\"CLOSE\",\"\xff\"]",
		`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := protocol.DefaultLimits()
		l.MaxMessageBytes = 4096 // keep the fuzzer on structure, not size
		msg, err := protocol.ParseClientMessage(data, l)
		wellFormed := len(data) <= l.MaxMessageBytes && utf8.Valid(data) && json.Valid(data)
		if err == nil && !wellFormed {
			t.Fatalf("accepted a message that is not valid JSON: %q", data)
		}
		if err != nil && wellFormed && err.Error() == "invalid: message is not valid JSON" {
			t.Fatalf("refused valid JSON as invalid: %q", data)
		}
		if err != nil {
			var perr *protocol.ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if !strings.HasPrefix(err.Error(), "invalid: ") || !utf8.ValidString(err.Error()) {
				t.Fatalf("bad reason %q", err.Error())
			}
			if len(perr.SubID) > l.MaxSubIDBytes {
				t.Fatalf("sub id %q in error exceeds the limit", perr.SubID)
			}
			if perr.EventID != "" && len(perr.EventID) != 64 {
				t.Fatalf("malformed event id %q in error", perr.EventID)
			}
			return
		}
		switch msg.Type {
		case protocol.TypeEvent, protocol.TypeAuth:
			if msg.Event == nil || msg.Event.Tags == nil {
				t.Fatalf("%s without event or tags", msg.Type)
			}
			protocol.ValidateEvent(msg.Event, testNow, l)
			protocol.ValidateAuthEvent(msg.Event, "c", fuzzAudience, testNow)
			protocol.Topics(msg.Event)
			protocol.EffectiveKey(msg.Event)
			protocol.Expiration(msg.Event)
			protocol.Protected(msg.Event)
		case protocol.TypeReq, protocol.TypeCount:
			if msg.SubID == "" || len(msg.SubID) > l.MaxSubIDBytes {
				t.Fatalf("bad sub id %q", msg.SubID)
			}
			if len(msg.Filters) == 0 || len(msg.Filters) > l.MaxFilters {
				t.Fatalf("%d filters", len(msg.Filters))
			}
			for _, flt := range msg.Filters {
				out, reason := protocol.ValidateFilter(flt, l)
				protocol.Match(out, fuzzEvent)
				if reason == "" {
					protocol.Match(flt, fuzzEvent)
				}
			}
		case protocol.TypeNegOpen:
			if len(msg.Filters) != 1 {
				t.Fatalf("NEG-OPEN with %d filters", len(msg.Filters))
			}
			out, reason := protocol.ValidateFilter(msg.Filters[0], l)
			protocol.Match(out, fuzzEvent)
			if reason == "" {
				protocol.Match(msg.Filters[0], fuzzEvent)
			}
			fallthrough
		case protocol.TypeClose, protocol.TypeNegMsg, protocol.TypeNegClose:
			if msg.SubID == "" || len(msg.SubID) > l.MaxSubIDBytes {
				t.Fatalf("bad sub id %q", msg.SubID)
			}
		default:
			t.Fatalf("unexpected type %q", msg.Type)
		}
	})
}

// FuzzValidateFilter: no filter makes ValidateFilter or Match panic; an accepted
// filter satisfies the promises of ValidateFilter (limits applied, topics normalised
// and enabled, validation idempotent); a refused one matches nothing; the input is
// never modified.
func FuzzValidateFilter(f *testing.F) {
	for _, seed := range []string{
		`{"#t":["Go"]}`,
		`{"#t":["ＮＯＳＴＲ","nostr"," "],"limit":0}`,
		`{"#t":["go"],"limit":100000,"kinds":[1,65535],"since":1,"until":1}`,
		`{"#t":["go"],"ids":["` + strings.Repeat("a", 64) + `"],"authors":["` + strings.Repeat("b", 64) + `"]}`,
		`{"#t":[],"#e":["abc"],"#p":[],"#tt":["x"]}`,
		`{"#t":["go"],"search":"x","limit":-5}`,
		`{"#t":["\ufdfa\ufdfa"],"#r":["a\u0000b"]}`,
		`{"#t":["go"],"since":10,"until":1}`,
		`{"#T":["Go"],"#t":["ǅ","ᴬ","\u0130"]}`,
		`{}`,
	} {
		f.Add([]byte(seed), false, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, requireTopic, allowlist bool) {
		var in nostr.Filter
		if err := in.UnmarshalJSON(data); err != nil {
			return
		}
		l := protocol.DefaultLimits()
		l.RequireTopicInREQ = requireTopic
		if allowlist {
			l.AllowedTopics = map[string]bool{"go": true, "nostr": true}
		}
		before := in.Clone()
		out, reason := protocol.ValidateFilter(in, l)
		if !reflect.DeepEqual(before, in) {
			t.Fatalf("input modified: %s -> %s", before, in)
		}
		matched := protocol.Match(out, fuzzEvent)
		if reason != "" {
			if matched || !out.LimitZero {
				t.Fatalf("refused filter %s is usable: %s", before, out)
			}
			if !strings.HasPrefix(reason, "invalid: ") && !strings.HasPrefix(reason, "restricted: ") && !strings.HasPrefix(reason, "unsupported: ") {
				t.Fatalf("reason without a known prefix: %q", reason)
			}
			return
		}
		if out.LimitZero {
			if out.Limit != 0 || !in.LimitZero {
				t.Fatalf("limit:0 not kept: %s -> %s", before, out)
			}
		} else if out.Limit < 1 || out.Limit > l.MaxLimit {
			t.Fatalf("limit %d out of 1..%d", out.Limit, l.MaxLimit)
		}
		topics, hasTopics := out.Tags["t"]
		if requireTopic && len(topics) == 0 {
			t.Fatalf("accepted without a topic: %s", before)
		}
		if hasTopics && topics == nil {
			t.Fatalf("nil tag list kept")
		}
		for i, topic := range topics {
			if topic == "" || protocol.NormalizeTopic(topic) != topic {
				t.Fatalf("topic %q not normalised", topic)
			}
			if allowlist && !l.AllowedTopics[topic] {
				t.Fatalf("topic %q not enabled", topic)
			}
			for _, earlier := range topics[:i] {
				if earlier == topic {
					t.Fatalf("duplicate topic %q", topic)
				}
			}
		}
		again, reason := protocol.ValidateFilter(out, l)
		if reason != "" || !nostr.FilterEqual(out, again) || out.Limit != again.Limit {
			t.Fatalf("not idempotent: %s -> %s (%q)", out, again, reason)
		}
	})
}

// FuzzNormalizeTopic: normalising twice changes nothing, and the result never has
// surrounding white space.
func FuzzNormalizeTopic(f *testing.F) {
	for _, seed := range []string{"ＮＯＳＴＲ", " Go ", "日本語", "ᴬ", "\u0130", "ǅ", "ß", "\ufdfa", "\u3000x\u3000", "ｶﾞ", "e\u0301", "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := protocol.NormalizeTopic(s)
		if again := protocol.NormalizeTopic(n); again != n {
			t.Fatalf("NormalizeTopic(%q) = %q, then %q", s, n, again)
		}
		if strings.TrimSpace(n) != n {
			t.Fatalf("NormalizeTopic(%q) = %q has surrounding space", s, n)
		}
	})
}
