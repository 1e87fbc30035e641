// Package loadgentest is a tiny in-memory NIP-01 relay for testing the load
// generator (and tools built on it) over real WebSockets.
package loadgentest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Options change how the relay answers.
type Options struct {
	Reject       string // answer every EVENT with OK false and this message
	Silent       bool   // read everything, answer nothing
	HangUp       bool   // close the connection on the first EVENT
	RequireTopic bool   // answer REQs with a filter that lacks #t with CLOSED "restricted: ..."
}

// Relay answers EVENT with OK (true unless Reject is set; it verifies nothing
// and stores the event) and REQ with the stored events each filter matches
// (newest first, honouring limit), then EOSE.
type Relay struct {
	URL  string // ws://127.0.0.1:port
	opts Options

	mu     sync.Mutex
	events []*nostr.Event
	reqs   []nostr.Filter
}

// New starts a relay that stops when the test ends.
func New(t testing.TB, opts Options) *Relay {
	t.Helper()
	r := &Relay{opts: opts}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	return r
}

// Events returns the stored events in arrival order.
func (r *Relay) Events() []*nostr.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Filters returns the filters of the REQs answered so far.
func (r *Relay) Filters() []nostr.Filter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	ws, err := upgrader.Upgrade(w, req, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	send := func(v ...any) {
		b, _ := json.Marshal(v)
		_ = ws.WriteMessage(websocket.TextMessage, b)
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			send("NOTICE", "invalid: not a message")
			continue
		}
		var label string
		_ = json.Unmarshal(msg[0], &label)
		switch label {
		case "EVENT":
			if r.opts.HangUp {
				return
			}
			if r.opts.Silent {
				continue
			}
			var ev nostr.Event
			if json.Unmarshal(msg[1], &ev) != nil {
				send("NOTICE", "invalid: bad event")
				continue
			}
			if r.opts.Reject != "" {
				send("OK", ev.ID, false, r.opts.Reject)
				continue
			}
			r.mu.Lock()
			r.events = append(r.events, &ev)
			r.mu.Unlock()
			send("OK", ev.ID, true, "")
		case "REQ":
			if r.opts.Silent {
				continue
			}
			r.answerREQ(msg, send)
		case "CLOSE":
		default:
			send("NOTICE", "unknown: "+label)
		}
	}
}

func (r *Relay) answerREQ(msg []json.RawMessage, send func(...any)) {
	var sub string
	_ = json.Unmarshal(msg[1], &sub)
	var filters []nostr.Filter
	for _, raw := range msg[2:] {
		var f nostr.Filter
		if json.Unmarshal(raw, &f) != nil {
			send("CLOSED", sub, "invalid: bad filter")
			return
		}
		filters = append(filters, f)
	}
	if r.opts.RequireTopic && slices.ContainsFunc(filters, func(f nostr.Filter) bool { return len(f.Tags["t"]) == 0 }) {
		send("CLOSED", sub, "restricted: #t is required")
		return
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, filters...)
	evs := slices.Clone(r.events)
	r.mu.Unlock()
	slices.SortStableFunc(evs, func(a, b *nostr.Event) int { return int(b.CreatedAt - a.CreatedAt) })
	for _, f := range filters {
		n := 0
		for _, ev := range evs {
			if f.Limit > 0 && n >= f.Limit {
				break
			}
			if f.Matches(ev) {
				n++
				send("EVENT", sub, ev)
			}
		}
	}
	send("EOSE", sub)
}
