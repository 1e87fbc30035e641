package protocol_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

func TestParseClientMessageValid(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	ev := signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"p", hex64('2'), "wss://r"}) })
	evJSON := ev.String()
	l := protocol.DefaultLimits()

	t.Run("EVENT", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(`["EVENT",`+evJSON+`]`), l)
		require.NoError(t, err)
		require.Equal(t, protocol.TypeEvent, msg.Type)
		require.Equal(t, ev.ID, msg.Event.ID)
		require.Equal(t, ev.PubKey, msg.Event.PubKey)
		require.Equal(t, ev.CreatedAt, msg.Event.CreatedAt)
		require.Equal(t, ev.Kind, msg.Event.Kind)
		require.Equal(t, ev.Tags, msg.Event.Tags)
		require.Equal(t, ev.Content, msg.Event.Content)
		require.Equal(t, ev.Sig, msg.Event.Sig)
		require.Equal(t, "", protocol.ValidateEvent(msg.Event, testNow, l))
	})
	t.Run("EVENT with white space and unknown fields, which are dropped", func(t *testing.T) {
		withExtra := strings.Replace(evJSON, "{", `{ "relay_hint" : "x", "seen": [1,{"a":null}], `, 1)
		msg, err := protocol.ParseClientMessage([]byte(" [ \"EVENT\" ,\n"+withExtra+" ] "), l)
		require.NoError(t, err)
		require.Equal(t, "", protocol.ValidateEvent(msg.Event, testNow, l))
		out, err := msg.Event.MarshalJSON()
		require.NoError(t, err)
		require.NotContains(t, string(out), "relay_hint")
		require.NotContains(t, string(out), "seen")
	})
	t.Run("EVENT with empty tags", func(t *testing.T) {
		noTags := signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{} })
		msg, err := protocol.ParseClientMessage([]byte(`["EVENT",`+noTags.String()+`]`), l)
		require.NoError(t, err)
		require.NotNil(t, msg.Event.Tags)
		require.Empty(t, msg.Event.Tags)
	})
	t.Run("AUTH", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(`["AUTH",`+evJSON+`]`), l)
		require.NoError(t, err)
		require.Equal(t, protocol.TypeAuth, msg.Type)
		require.Equal(t, ev.ID, msg.Event.ID)
	})
	t.Run("REQ", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(
			`["REQ","sub-1",{"#t":["go"],"kinds":[1,30023],"authors":["`+hex64('a')+`"],"since":10,"until":20,"limit":5},{"ids":["`+hex64('b')+`"]}]`), l)
		require.NoError(t, err)
		require.Equal(t, protocol.TypeReq, msg.Type)
		require.Equal(t, "sub-1", msg.SubID)
		require.Len(t, msg.Filters, 2)
		f := msg.Filters[0]
		require.Equal(t, []string{"go"}, f.Tags["t"])
		require.Equal(t, []int{1, 30023}, f.Kinds)
		require.Equal(t, []string{hex64('a')}, f.Authors)
		require.Equal(t, ts(10), f.Since)
		require.Equal(t, ts(20), f.Until)
		require.Equal(t, 5, f.Limit)
		require.False(t, f.LimitZero)
		require.Equal(t, []string{hex64('b')}, msg.Filters[1].IDs)
	})
	t.Run("REQ limit 0 and null values", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(`["REQ","s",{"#t":["go"],"limit":0,"kinds":null}]`), l)
		require.NoError(t, err)
		require.True(t, msg.Filters[0].LimitZero)
		require.Zero(t, msg.Filters[0].Limit)
		require.Nil(t, msg.Filters[0].Kinds)
	})
	t.Run("REQ with MaxFilters filters and a 64-byte id", func(t *testing.T) {
		sub := strings.Repeat("s", 64)
		msg, err := protocol.ParseClientMessage([]byte(`["REQ","`+sub+`"`+strings.Repeat(`,{}`, 10)+`]`), l)
		require.NoError(t, err)
		require.Equal(t, sub, msg.SubID)
		require.Len(t, msg.Filters, 10)
	})
	t.Run("COUNT", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(`["COUNT","q",{"#t":["go"]}]`), l)
		require.NoError(t, err)
		require.Equal(t, protocol.TypeCount, msg.Type)
		require.Equal(t, "q", msg.SubID)
		require.Len(t, msg.Filters, 1)
	})
	t.Run("CLOSE", func(t *testing.T) {
		msg, err := protocol.ParseClientMessage([]byte(`["CLOSE","sub-1"]`), l)
		require.NoError(t, err)
		require.Equal(t, protocol.ClientMessage{Type: protocol.TypeClose, SubID: "sub-1"}, msg)
	})
	t.Run("message exactly at the size limit", func(t *testing.T) {
		small := l
		msg := []byte(`["CLOSE","sub-1"]`)
		small.MaxMessageBytes = len(msg)
		_, err := protocol.ParseClientMessage(msg, small)
		require.NoError(t, err)
	})
}

func TestParseClientMessageInvalid(t *testing.T) {
	t.Parallel()
	ev := signed(t, nostr.GeneratePrivateKey(), nil)
	// withField returns ev's JSON with one field's raw value replaced ("" drops the
	// field).
	withField := func(field, raw string) string {
		fields := []struct{ name, raw string }{
			{"id", `"` + ev.ID + `"`},
			{"pubkey", `"` + ev.PubKey + `"`},
			{"created_at", "1700000000"},
			{"kind", "1"},
			{"tags", `[["t","go"]]`},
			{"content", `"hello"`},
			{"sig", `"` + ev.Sig + `"`},
		}
		var parts []string
		for _, f := range fields {
			if f.name == field {
				f.raw = raw
			}
			if f.raw != "" {
				parts = append(parts, `"`+f.name+`":`+f.raw)
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	without := func(field string) string { return withField(field, "") }
	msg, err := protocol.ParseClientMessage([]byte(`["EVENT",`+withField("", "")+`]`), protocol.DefaultLimits())
	require.NoError(t, err, "the unmodified event must parse")
	require.Equal(t, "", protocol.ValidateEvent(msg.Event, testNow, protocol.DefaultLimits()))
	tooLarge := `["CLOSE","` + strings.Repeat("x", 131072) + `"]`

	for _, tc := range []struct {
		name      string
		in        string
		want      string // exact reason, or a prefix ending in "..."
		wantType  string
		wantSubID string
		wantEvID  string
	}{
		{name: "too large", in: tooLarge, want: fmt.Sprintf("invalid: message too large (%d bytes, limit 131072)", len(tooLarge))},
		{name: "not UTF-8", in: "[\"CLOSE\",\"\xff\"]", want: "invalid: message is not valid UTF-8"},
		{name: "empty input", in: ``, want: "invalid: message is not valid JSON"},
		{name: "truncated JSON", in: `["REQ","x",{}`, want: "invalid: message is not valid JSON"},
		{name: "trailing comma", in: `["REQ","x",{},]`, want: "invalid: message is not valid JSON"},
		{name: "trailing garbage", in: `["CLOSE","x"] x`, want: "invalid: message is not valid JSON"},
		{name: "single quotes", in: `['CLOSE','x']`, want: "invalid: message is not valid JSON"},
		{name: "object", in: `{"type":"EVENT"}`, want: "invalid: message must be a JSON array"},
		{name: "string", in: `"EVENT"`, want: "invalid: message must be a JSON array"},
		{name: "empty array", in: `[]`, want: "invalid: empty message"},
		{name: "type not a string", in: `[1,2]`, want: "invalid: message type must be a string"},
		{name: "type null", in: `[null]`, want: "invalid: message type must be a string"},
		{name: "unknown type", in: `["PUBLISH",{}]`, want: `invalid: unknown message type "PUBLISH"`},
		{name: "type is case-sensitive", in: `["event",{}]`, want: `invalid: unknown message type "event"`},
		{name: "relay-to-client type", in: `["NOTICE","hi"]`, want: `invalid: unknown message type "NOTICE"`},
		{name: "CLOSED is not CLOSE", in: `["CLOSED","x","y"]`, want: `invalid: unknown message type "CLOSED"`},
		{name: "long unknown type is cut", in: `["` + strings.Repeat("A", 100) + `"]`, want: `invalid: unknown message type "` + strings.Repeat("A", 64) + `…"`},

		{name: "EVENT without event", in: `["EVENT"]`, want: "invalid: EVENT takes exactly one event", wantType: "EVENT"},
		{name: "EVENT in relay form", in: `["EVENT","sub",` + withField("", "") + `]`, want: "invalid: EVENT takes exactly one event", wantType: "EVENT"},
		{name: "EVENT null", in: `["EVENT",null]`, want: "invalid: EVENT needs an event object", wantType: "EVENT"},
		{name: "EVENT array", in: `["EVENT",[]]`, want: "invalid: EVENT needs an event object", wantType: "EVENT"},
		{name: "EVENT string", in: `["EVENT","{}"]`, want: "invalid: EVENT needs an event object", wantType: "EVENT"},
		{name: "EVENT empty object", in: `["EVENT",{}]`, want: `invalid: event has no "id"`, wantType: "EVENT"},
		{name: "EVENT without kind", in: `["EVENT",` + without("kind") + `]`, want: `invalid: event has no "kind"`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT without tags", in: `["EVENT",` + without("tags") + `]`, want: `invalid: event has no "tags"`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT without sig", in: `["EVENT",` + without("sig") + `]`, want: `invalid: event has no "sig"`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT created_at null", in: `["EVENT",` + withField("created_at", "null") + `]`, want: `invalid: event has no "created_at"`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT kind as string", in: `["EVENT",` + withField("kind", `"1"`) + `]`, want: `invalid: event field "kind" must be a JSON number`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT content as number", in: `["EVENT",` + withField("content", `5`) + `]`, want: `invalid: event field "content" must be a JSON string`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT tags as object", in: `["EVENT",` + withField("tags", `{}`) + `]`, want: `invalid: event field "tags" must be a JSON array`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT id as number", in: `["EVENT",` + withField("id", `5`) + `]`, want: `invalid: event field "id" must be a JSON string`, wantType: "EVENT"},
		{name: "EVENT malformed id is not echoed", in: `["EVENT",{"id":"ABC","kind":1}]`, want: `invalid: event has no "pubkey"`, wantType: "EVENT"},
		{name: "EVENT fractional kind", in: `["EVENT",` + withField("kind", `1.5`) + `]`, want: "invalid: malformed event...", wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT huge created_at", in: `["EVENT",` + withField("created_at", `1e400`) + `]`, want: "invalid: malformed event...", wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT tag element not a string", in: `["EVENT",` + withField("tags", `[["t",1]]`) + `]`, want: "invalid: malformed event...", wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT tag not an array", in: `["EVENT",` + withField("tags", `["t"]`) + `]`, want: "invalid: malformed event...", wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT duplicate key, last one wrong", in: `["EVENT",` + strings.TrimSuffix(withField("", ""), "}") + `,"kind":"x"}]`, want: `invalid: event field "kind" must be a JSON number`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT escaped key is not the field", in: `["EVENT",` + strings.Replace(withField("", ""), `"kind"`, `"\u006bind"`, 1) + `]`, want: `invalid: event has no "kind"`, wantType: "EVENT", wantEvID: ev.ID},
		{name: "EVENT duplicate id, last one malformed", in: `["EVENT",` + strings.TrimSuffix(without("kind"), "}") + `,"id":"x"}]`, want: `invalid: event has no "kind"`, wantType: "EVENT"},

		{name: "AUTH with a challenge string", in: `["AUTH","challenge"]`, want: "invalid: AUTH needs an event object", wantType: "AUTH"},
		{name: "AUTH without event", in: `["AUTH"]`, want: "invalid: AUTH takes exactly one event", wantType: "AUTH"},

		{name: "REQ alone", in: `["REQ"]`, want: "invalid: REQ needs a subscription id and at least one filter", wantType: "REQ"},
		{name: "REQ without filters", in: `["REQ","s"]`, want: "invalid: REQ needs at least one filter", wantType: "REQ", wantSubID: "s"},
		{name: "REQ numeric sub id", in: `["REQ",1,{}]`, want: "invalid: subscription id must be a string", wantType: "REQ"},
		{name: "REQ empty sub id", in: `["REQ","",{}]`, want: "invalid: subscription id must not be empty", wantType: "REQ"},
		{name: "REQ sub id too long", in: `["REQ","` + strings.Repeat("s", 65) + `",{}]`, want: "invalid: subscription id longer than 64 bytes", wantType: "REQ"},
		{name: "REQ too many filters", in: `["REQ","s"` + strings.Repeat(`,{}`, 11) + `]`, want: "invalid: too many filters (11, limit 10)", wantType: "REQ", wantSubID: "s"},
		{name: "REQ filter array", in: `["REQ","s",[]]`, want: "invalid: filter 1 is not a JSON object", wantType: "REQ", wantSubID: "s"},
		{name: "REQ filter null", in: `["REQ","s",{},null]`, want: "invalid: filter 2 is not a JSON object", wantType: "REQ", wantSubID: "s"},
		{name: "REQ ids not strings", in: `["REQ","s",{"ids":[1]}]`, want: "invalid: filter 1 is malformed...", wantType: "REQ", wantSubID: "s"},
		{name: "REQ kinds as strings", in: `["REQ","s",{"kinds":["1"]}]`, want: "invalid: filter 1 is malformed...", wantType: "REQ", wantSubID: "s"},
		{name: "REQ limit as string", in: `["REQ","s",{"limit":"5"}]`, want: "invalid: filter 1 is malformed...", wantType: "REQ", wantSubID: "s"},
		{name: "REQ fractional since", in: `["REQ","s",{"since":1.5}]`, want: "invalid: filter 1 is malformed...", wantType: "REQ", wantSubID: "s"},
		{name: "REQ tag filter as string", in: `["REQ","s",{"#t":"go"}]`, want: "invalid: filter 1 is malformed...", wantType: "REQ", wantSubID: "s"},
		{name: "REQ unknown filter field", in: `["REQ","s",{"kinds":[1]},{"foo":1}]`, want: `invalid: unknown filter field "foo"`, wantType: "REQ", wantSubID: "s"},
		{name: "REQ unknown field with null", in: `["REQ","s",{"foo":null}]`, want: `invalid: unknown filter field "foo"`, wantType: "REQ", wantSubID: "s"},
		{name: "REQ tag filter without a name", in: `["REQ","s",{"#":["x"]}]`, want: `invalid: unknown filter field "#"`, wantType: "REQ", wantSubID: "s"},
		{name: "REQ escaped field name", in: `["REQ","s",{"kind\u0073":[1]}]`, want: `invalid: unknown filter field "kind\\u0073"`, wantType: "REQ", wantSubID: "s"},
		{name: "COUNT unknown filter field", in: `["COUNT","q",{"#t":["go"],"limit_":5}]`, want: `invalid: unknown filter field "limit_"`, wantType: "COUNT", wantSubID: "q"},
		{name: "COUNT without filters", in: `["COUNT","q"]`, want: "invalid: COUNT needs at least one filter", wantType: "COUNT", wantSubID: "q"},
		{name: "COUNT too many filters", in: `["COUNT","q"` + strings.Repeat(`,{}`, 11) + `]`, want: "invalid: too many filters (11, limit 10)", wantType: "COUNT", wantSubID: "q"},

		{name: "CLOSE without id", in: `["CLOSE"]`, want: "invalid: CLOSE takes exactly one subscription id", wantType: "CLOSE"},
		{name: "CLOSE with two ids", in: `["CLOSE","a","b"]`, want: "invalid: CLOSE takes exactly one subscription id", wantType: "CLOSE"},
		{name: "CLOSE numeric id", in: `["CLOSE",5]`, want: "invalid: subscription id must be a string", wantType: "CLOSE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := protocol.ParseClientMessage([]byte(tc.in), protocol.DefaultLimits())
			require.Error(t, err)
			require.Equal(t, protocol.ClientMessage{}, msg)
			var perr *protocol.ParseError
			require.True(t, errors.As(err, &perr), "%T", err)
			require.True(t, strings.HasPrefix(err.Error(), "invalid: "), err.Error())
			switch {
			case tc.want == "":
			case strings.HasSuffix(tc.want, "..."):
				require.True(t, strings.HasPrefix(err.Error(), strings.TrimSuffix(tc.want, "...")), err.Error())
			default:
				require.Equal(t, tc.want, err.Error())
			}
			require.Equal(t, tc.wantType, perr.Type)
			require.Equal(t, tc.wantSubID, perr.SubID)
			require.Equal(t, tc.wantEvID, perr.EventID)
		})
	}
}

// BenchmarkParseClientMessage reports the cost of parsing a typical EVENT message.
func BenchmarkParseClientMessage(b *testing.B) {
	ev := signed(b, nostr.GeneratePrivateKey(), func(ev *nostr.Event) {
		ev.Content = strings.Repeat("a note of some length ", 20)
		ev.Tags = append(ev.Tags, nostr.Tag{"p", hex64('2')}, nostr.Tag{"e", hex64('3'), "wss://relay.example.com", "reply"})
	})
	data := []byte(`["EVENT",` + ev.String() + `]`)
	l := protocol.DefaultLimits()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := protocol.ParseClientMessage(data, l); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "messages/s")
}

func TestParseNegMessages(t *testing.T) {
	t.Parallel()
	l := protocol.DefaultLimits()
	msg, err := protocol.ParseClientMessage([]byte(`["NEG-OPEN","n1",{"kinds":[1],"#t":["go"]},"6100000200"]`), l)
	require.NoError(t, err)
	require.Equal(t, protocol.ClientMessage{Type: protocol.TypeNegOpen, SubID: "n1", Neg: "6100000200",
		Filters: []nostr.Filter{{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"go"}}}}}, msg)

	msg, err = protocol.ParseClientMessage([]byte(`["NEG-MSG","n1","61"]`), l)
	require.NoError(t, err)
	require.Equal(t, protocol.ClientMessage{Type: protocol.TypeNegMsg, SubID: "n1", Neg: "61"}, msg)

	msg, err = protocol.ParseClientMessage([]byte(`["NEG-CLOSE","n1"]`), l)
	require.NoError(t, err)
	require.Equal(t, protocol.ClientMessage{Type: protocol.TypeNegClose, SubID: "n1"}, msg)

	for _, tc := range []struct{ in, sub, reason string }{
		{`["NEG-OPEN","n",{},"61","extra"]`, "n", "invalid: NEG-OPEN takes exactly 4 elements"},
		{`["NEG-OPEN","n",{"foo":1},"61"]`, "n", `invalid: unknown filter field "foo"`},
		{`["NEG-OPEN","n",[],"61"]`, "n", "invalid: NEG-OPEN filter is not a JSON object"},
		{`["NEG-OPEN","n",{},61]`, "n", "invalid: NEG-OPEN message must be a string"},
		{`["NEG-MSG","n"]`, "n", "invalid: NEG-MSG takes exactly 3 elements"},
		{`["NEG-CLOSE","n","x"]`, "n", "invalid: NEG-CLOSE takes exactly 2 elements"},
		{`["NEG-CLOSE",""]`, "", "invalid: subscription id must not be empty"},
		{`["NEG-MSG"]`, "", "invalid: NEG-MSG needs a subscription id"},
	} {
		_, err := protocol.ParseClientMessage([]byte(tc.in), l)
		var perr *protocol.ParseError
		require.ErrorAs(t, err, &perr, tc.in)
		require.Equal(t, tc.reason, perr.Reason, tc.in)
		require.Equal(t, tc.sub, perr.SubID, tc.in)
	}
}
