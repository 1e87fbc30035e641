package relay

import (
	"encoding/json"
	"strconv"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// The relay-to-client messages of NIP-01, NIP-42 and NIP-45. Every string is JSON
// escaped, whatever the client sent.

func quote(s string) []byte {
	return appendQuoted(nil, s)
}

// appendQuoted appends s as encoding/json writes a string: printable ASCII
// without '"', '\\', '<', '>' and '&' (every subscription id a client library
// makes) as it is, between quotes; anything else through json.Marshal.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // marshalling a string cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func okMsg(id string, ok bool, reason string) []byte {
	b := append([]byte(`["OK",`), quote(id)...)
	b = append(b, ',')
	b = strconv.AppendBool(b, ok)
	b = append(b, ',')
	b = append(b, quote(reason)...)
	return append(b, ']')
}

func noticeMsg(text string) []byte {
	return append(append([]byte(`["NOTICE",`), quote(text)...), ']')
}

func eoseMsg(subID string) []byte {
	return append(append([]byte(`["EOSE",`), quote(subID)...), ']')
}

func closedMsg(subID, reason string) []byte {
	b := append([]byte(`["CLOSED",`), quote(subID)...)
	b = append(b, ',')
	b = append(b, quote(reason)...)
	return append(b, ']')
}

func countMsg(subID string, n int64) []byte {
	b := append([]byte(`["COUNT",`), quote(subID)...)
	b = append(b, `,{"count":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "}]"...)
}

func authMsg(challenge string) []byte {
	return append(append([]byte(`["AUTH",`), quote(challenge)...), ']')
}

// eventJSON serialises ev once, for every subscription it goes to.
func eventJSON(ev *nostr.Event) []byte {
	b, err := ev.MarshalJSON()
	if err != nil {
		// easyjson cannot fail on an Event; keep the fan-out going regardless.
		b, _ = json.Marshal(ev)
	}
	return b
}

// eventHead is the start of subID's EVENT messages, `["EVENT",<subID>,`:
// wsconn.Msg{Head: eventHead, Body: event JSON} is the message.
func eventHead(subID string) []byte {
	b := make([]byte, 0, len(`["EVENT","",`)+len(subID))
	b = append(b, `["EVENT",`...)
	b = appendQuoted(b, subID)
	return append(b, ',')
}

// plainMsg is a message of one slice.
func plainMsg(b []byte) wsconn.Msg { return wsconn.Msg{Body: b} }
