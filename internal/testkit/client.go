package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// ReplyTimeout bounds every wait of a Client's methods that fail the test
// (Publish, Req, Auth, Next, Count, the NEG calls).
const ReplyTimeout = 30 * time.Second

// Msg is one message a relay sent: a JSON array (["OK", id, true, ""]).
type Msg []json.RawMessage

// Label is the message's first element ("EVENT", "OK", "EOSE", ...).
func (m Msg) Label() string { return m.Str(0) }

// Str is the i-th element as a JSON string; "" when there is none or it is
// not a string.
func (m Msg) Str(i int) string {
	var s string
	if i < len(m) {
		_ = json.Unmarshal(m[i], &s)
	}
	return s
}

// Values is the message with each element decoded into an any (strings,
// float64 numbers, bools, maps, slices): for comparing a whole message,
// require.Equal(t, []any{"OK", id, true, ""}, m.Values()).
func (m Msg) Values() []any {
	out := make([]any, len(m))
	for i, raw := range m {
		_ = json.Unmarshal(raw, &out[i])
	}
	return out
}

func (m Msg) String() string {
	b, _ := json.Marshal([]json.RawMessage(m))
	return string(b)
}

// OK is a relay's answer to an EVENT or an AUTH (NIP-01 "OK").
type OK struct {
	ID     string
	OK     bool
	Reason string
}

// ErrClosed is what the waits return once the connection has ended and
// every message read before has been seen.
var ErrClosed = errors.New("testkit: connection closed")

// Client is a Nostr client of a relay over a real WebSocket
// (gorilla/websocket): what an app sees, at the protocol level. One
// goroutine reads every message into the client's log, as it arrives; the
// methods send a request and wait for its answer in the log (a channel
// wakes them on every message, never a sleep). So a slow test never stalls
// the reader, answers to concurrent requests are told apart by event or
// subscription id, and nothing read is lost.
//
// The methods that return no error fail the test (after ReplyTimeout, on a
// closed connection or a malformed answer) and must be called from the
// test's goroutine; Send, PublishCtx, Subscribe, NextCtx and Sub.Next return
// errors instead, for other goroutines.
type Client struct {
	// URL is the relay's WebSocket URL, as dialled (the NIP-42 relay tag).
	URL string

	t   testing.TB
	ws  *websocket.Conn
	wmu sync.Mutex // one writer at a time (gorilla/websocket)

	mu      sync.Mutex
	log     []entry
	changed chan struct{} // closed (and replaced) on every message and at the end
	err     error         // why the reader stopped; nil while it reads
	done    chan struct{} // closed when the reader stops
	cursor  int           // Next's position in log
	subs    map[string]*Sub
	nsub    int // Query's subscription ids
}

type entry struct {
	msg Msg
	at  time.Time
}

// Dial connects to the relay at url and fails t if it cannot. The connection
// is closed when the test ends.
func Dial(t testing.TB, url string) *Client {
	t.Helper()
	c, _, err := Connect(t, url)
	if err != nil {
		t.Fatalf("testkit: dial %s: %v", url, err)
	}
	return c
}

// Connect is Dial that returns the error and the HTTP response of a refused
// upgrade (a 403 for a blocked address) instead of failing t.
func Connect(t testing.TB, url string) (*Client, *http.Response, error) {
	return ConnectHeader(t, url, nil)
}

// ConnectHeader is Connect with the upgrade request's headers (a Host
// header names the host the request claims to be sent to).
func ConnectHeader(t testing.TB, url string, header http.Header) (*Client, *http.Response, error) {
	ws, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		return nil, resp, err
	}
	c := &Client{URL: url, t: t, ws: ws, changed: make(chan struct{}), done: make(chan struct{}), subs: map[string]*Sub{}}
	go c.read()
	t.Cleanup(func() { _ = c.Close() })
	return c, resp, nil
}

func (c *Client) read() {
	for {
		_, data, err := c.ws.ReadMessage()
		now := time.Now()
		var msg Msg
		if err == nil && (json.Unmarshal(data, &msg) != nil || len(msg) == 0) {
			msg = Msg{json.RawMessage(`"testkit: not a JSON array"`), json.RawMessage(mustQuote(string(data)))}
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
			close(c.done)
		} else {
			c.log = append(c.log, entry{msg, now})
			c.route(msg, now)
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func mustQuote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// route keeps a subscription's messages on its Sub (c.mu held).
func (c *Client) route(msg Msg, at time.Time) {
	s := c.subs[msg.Str(1)]
	if s == nil {
		return
	}
	switch msg.Label() {
	case "EVENT":
		ev := &nostr.Event{}
		if len(msg) < 3 || json.Unmarshal(msg[2], ev) != nil {
			return
		}
		if s.eose {
			s.live = append(s.live, ev)
		} else {
			s.stored = append(s.stored, ev)
		}
	case "EOSE":
		s.eose, s.eoseAt, s.end = true, at, len(c.log)
	case "CLOSED":
		s.closed, s.closedReason, s.end = true, msg.Str(2), len(c.log)
	}
}

// Close closes the connection (the test's end does too).
func (c *Client) Close() error { return c.ws.Close() }

// Done is closed when the connection has ended (the relay closed it, or
// Close); Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended; nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send writes one message, the JSON array of parts (["REQ", id, filter]).
func (c *Client) Send(parts ...any) error {
	b, err := json.Marshal(parts)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// SendRaw writes one text message as it is, well-formed or not.
func (c *Client) SendRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// mark is the log position a request's answer comes after.
func (c *Client) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.log)
}

// await returns the first message at or after log position from that match
// accepts, and the position after it, or ctx's error, or ErrClosed (wrapping
// the reader's error) once the connection has ended before one came.
func (c *Client) await(ctx context.Context, from int, match func(Msg) bool) (Msg, int, error) {
	for {
		c.mu.Lock()
		for ; from < len(c.log); from++ {
			if m := c.log[from].msg; match(m) {
				c.mu.Unlock()
				return m, from + 1, nil
			}
		}
		changed, err := c.changed, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, from, fmt.Errorf("%w: %v", ErrClosed, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, from, ctx.Err()
		}
	}
}

// wait is await bounded by ReplyTimeout that fails the test, and moves
// Next's cursor past the answer, as a client reading in order would have.
func (c *Client) wait(what string, from int, match func(Msg) bool) Msg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReplyTimeout)
	defer cancel()
	m, next, err := c.await(ctx, from, match)
	if err != nil {
		c.t.Fatalf("testkit: %s on %s: %v", what, c.URL, err)
	}
	c.mu.Lock()
	c.cursor = max(c.cursor, next)
	c.mu.Unlock()
	return m
}

func (c *Client) send(what string, parts ...any) int {
	c.t.Helper()
	from := c.mark()
	if err := c.Send(parts...); err != nil {
		c.t.Fatalf("testkit: send %s to %s: %v", what, c.URL, err)
	}
	return from
}

// NextCtx returns the next message the relay sent, of any label, in the
// order they came: from the first one on, skipping those that a wait of the
// test's goroutine (Publish, Req, Auth, Count, the NEG calls) returned and
// every one before it.
func (c *Client) NextCtx(ctx context.Context) (Msg, error) {
	c.mu.Lock()
	from := c.cursor
	c.mu.Unlock()
	m, next, err := c.await(ctx, from, func(Msg) bool { return true })
	if err == nil {
		c.mu.Lock()
		c.cursor = max(c.cursor, next)
		c.mu.Unlock()
	}
	return m, err
}

// Next is NextCtx bounded by ReplyTimeout, failing the test.
func (c *Client) Next() Msg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReplyTimeout)
	defer cancel()
	m, err := c.NextCtx(ctx)
	if err != nil {
		c.t.Fatalf("testkit: next message on %s: %v", c.URL, err)
	}
	return m
}

// okFor matches the OK answering event id.
func okFor(id string) func(Msg) bool {
	return func(m Msg) bool { return m.Label() == "OK" && len(m) >= 4 && m.Str(1) == id }
}

func parseOK(m Msg) (OK, error) {
	ok := OK{ID: m.Str(1), Reason: m.Str(3)}
	if err := json.Unmarshal(m[2], &ok.OK); err != nil {
		return ok, fmt.Errorf("testkit: malformed OK %s", m)
	}
	return ok, nil
}

// Publish sends ev and returns the relay's OK for it.
func (c *Client) Publish(ev *nostr.Event) (bool, string) {
	c.t.Helper()
	from := c.send("EVENT", "EVENT", ev)
	ok, err := parseOK(c.wait("OK for event "+ev.ID, from, okFor(ev.ID)))
	if err != nil {
		c.t.Fatal(err)
	}
	return ok.OK, ok.Reason
}

// PublishCtx is Publish for any goroutine: it returns the OK, or the error
// of the send, of ctx or of the connection.
func (c *Client) PublishCtx(ctx context.Context, ev *nostr.Event) (OK, error) {
	from := c.mark()
	if err := c.Send("EVENT", ev); err != nil {
		return OK{}, err
	}
	m, _, err := c.await(ctx, from, okFor(ev.ID))
	if err != nil {
		return OK{}, fmt.Errorf("OK for event %s: %w", ev.ID, err)
	}
	return parseOK(m)
}

// Auth answers the relay's NIP-42 challenge (the newest it sent, waiting for
// one if none came yet) as sk, and fails the test unless the relay answers
// OK true.
func (c *Client) Auth(sk string) {
	c.t.Helper()
	if ok, reason := c.AuthAnswer(sk); !ok {
		c.t.Fatalf("testkit: AUTH refused by %s: %s", c.URL, reason)
	}
}

// AuthAnswer is Auth that returns the relay's OK instead of requiring it.
func (c *Client) AuthAnswer(sk string) (bool, string) {
	c.t.Helper()
	challenge := c.Challenge()
	ev := SignNow(c.t, sk, nostr.KindClientAuthentication, nostr.Tags{{"relay", c.URL}, {"challenge", challenge}}, "")
	from := c.send("AUTH", "AUTH", ev)
	ok, err := parseOK(c.wait("OK for AUTH "+ev.ID, from, okFor(ev.ID)))
	if err != nil {
		c.t.Fatal(err)
	}
	return ok.OK, ok.Reason
}

// Challenge returns the newest NIP-42 challenge the relay sent, waiting for
// the first one if none came yet.
func (c *Client) Challenge() string {
	c.t.Helper()
	isChallenge := func(m Msg) bool { return m.Label() == "AUTH" && len(m) == 2 && m.Str(1) != "" }
	c.mu.Lock()
	for i := len(c.log) - 1; i >= 0; i-- {
		if m := c.log[i].msg; isChallenge(m) {
			c.mu.Unlock()
			return m.Str(1)
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), ReplyTimeout)
	defer cancel()
	m, _, err := c.await(ctx, 0, isChallenge)
	if err != nil {
		c.t.Fatalf("testkit: no AUTH challenge from %s: %v", c.URL, err)
	}
	return m.Str(1)
}

// Sub is a subscription (REQ) of a Client: what it was sent, kept as it
// arrives.
type Sub struct {
	ID string
	c  *Client
	// guarded by c.mu
	reqAt        time.Time
	stored, live []*nostr.Event
	eose         bool
	eoseAt       time.Time
	closed       bool
	closedReason string
	read         int // Next's position in stored+live
	end          int // the log position after EOSE or CLOSED
}

// SubState is a copy of what a subscription received so far.
type SubState struct {
	ReqAt  time.Time      // when the REQ was sent
	Stored []*nostr.Event // the events before EOSE
	Live   []*nostr.Event // the events after EOSE
	EOSE   bool
	EOSEAt time.Time // when EOSE was read
	Closed bool      // the relay sent CLOSED
	Reason string    // CLOSED's reason
}

// Subscribe opens subscription id with filters (nostr.Filter or anything
// that marshals as one); a subscription of the same id opened before is
// forgotten. It returns the send's error.
func (c *Client) Subscribe(id string, filters ...any) (*Sub, error) {
	s := &Sub{ID: id, c: c}
	c.mu.Lock()
	s.reqAt = time.Now()
	c.subs[id] = s
	c.mu.Unlock()
	return s, c.Send(append([]any{"REQ", id}, filters...)...)
}

// Sub returns the subscription last opened under id with Subscribe (or Req,
// Query), nil if none was.
func (c *Client) Sub(id string) *Sub {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs[id]
}

// State returns a copy of what s received so far.
func (s *Sub) State() SubState {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return SubState{ReqAt: s.reqAt, Stored: append([]*nostr.Event(nil), s.stored...), Live: append([]*nostr.Event(nil), s.live...),
		EOSE: s.eose, EOSEAt: s.eoseAt, Closed: s.closed, Reason: s.closedReason}
}

// WaitEOSE waits for the end of s's stored events and returns them, or the
// reason of a CLOSED that came instead (with the events sent before it).
func (s *Sub) WaitEOSE() ([]*nostr.Event, string) {
	c := s.c
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReplyTimeout)
	defer cancel()
	for {
		c.mu.Lock()
		if s.eose || s.closed {
			c.cursor = max(c.cursor, s.end)
			c.mu.Unlock()
			st := s.State()
			return st.Stored, st.Reason
		}
		changed, err := c.changed, c.err
		c.mu.Unlock()
		if err != nil {
			c.t.Fatalf("testkit: EOSE of %s on %s: %v: %v", s.ID, c.URL, ErrClosed, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			c.t.Fatalf("testkit: EOSE of %s on %s: %v", s.ID, c.URL, ctx.Err())
		}
	}
}

// Next returns s's next event (stored ones first, then live ones, in the
// order they came), or an error once s is CLOSED, the connection ends or
// ctx is done.
func (s *Sub) Next(ctx context.Context) (*nostr.Event, error) {
	c := s.c
	for {
		c.mu.Lock()
		if s.read < len(s.stored)+len(s.live) {
			var ev *nostr.Event
			if s.read < len(s.stored) {
				ev = s.stored[s.read]
			} else {
				ev = s.live[s.read-len(s.stored)]
			}
			s.read++
			c.mu.Unlock()
			return ev, nil
		}
		changed, err, closed, reason := c.changed, c.err, s.closed, s.closedReason
		c.mu.Unlock()
		switch {
		case closed:
			return nil, fmt.Errorf("CLOSED: %s", reason)
		case err != nil:
			return nil, fmt.Errorf("%w: %v", ErrClosed, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close sends CLOSE for s (NIP-01 does not answer it: live events already
// sent may still arrive).
func (s *Sub) Close() error { return s.c.Send("CLOSE", s.ID) }

// Req runs a REQ to its end: it returns the stored events and "" once EOSE
// came (and sends CLOSE), or the events sent before a CLOSED and its reason.
func (c *Client) Req(id string, filters ...any) ([]*nostr.Event, string) {
	c.t.Helper()
	s, err := c.Subscribe(id, filters...)
	if err != nil {
		c.t.Fatalf("testkit: REQ %s to %s: %v", id, c.URL, err)
	}
	evs, reason := s.WaitEOSE()
	if reason == "" {
		if err := s.Close(); err != nil {
			c.t.Fatalf("testkit: CLOSE %s: %v", id, err)
		}
	}
	return evs, reason
}

// Query is Req under a subscription id of its own (q1, q2, ...), failing the
// test on CLOSED.
func (c *Client) Query(filters ...any) []*nostr.Event {
	c.t.Helper()
	c.mu.Lock()
	c.nsub++
	id := fmt.Sprintf("q%d", c.nsub)
	c.mu.Unlock()
	evs, reason := c.Req(id, filters...)
	if reason != "" {
		c.t.Fatalf("testkit: REQ %s closed: %s", id, reason)
	}
	return evs
}

// answerTo matches the first message of id with one of labels.
func answerTo(id string, labels ...string) func(Msg) bool {
	return func(m Msg) bool {
		if len(m) < 2 || m.Str(1) != id {
			return false
		}
		for _, l := range labels {
			if m.Label() == l {
				return true
			}
		}
		return false
	}
}

// Count sends a NIP-45 COUNT and returns the count, or the reason of a
// CLOSED that came instead.
func (c *Client) Count(id string, filters ...any) (int64, string) {
	c.t.Helper()
	from := c.send("COUNT", append([]any{"COUNT", id}, filters...)...)
	m := c.wait("COUNT "+id, from, answerTo(id, "COUNT", "CLOSED"))
	if m.Label() == "CLOSED" {
		return 0, m.Str(2)
	}
	var n struct {
		Count *int64 `json:"count"`
	}
	if len(m) < 3 || json.Unmarshal(m[2], &n) != nil || n.Count == nil {
		c.t.Fatalf("testkit: malformed COUNT answer %s", m)
	}
	return *n.Count, ""
}

// NegOpen opens a NIP-77 session id over filter with the client's first
// message (hex) and returns the relay's NEG-MSG (hex), or the reason of a
// NEG-ERR that came instead.
func (c *Client) NegOpen(id string, filter any, msg string) (string, string) {
	c.t.Helper()
	return c.neg(id, "NEG-OPEN", "NEG-OPEN", id, filter, msg)
}

// NegMsg sends the session's next message and returns the relay's answer, as
// NegOpen does.
func (c *Client) NegMsg(id, msg string) (string, string) {
	c.t.Helper()
	return c.neg(id, "NEG-MSG", "NEG-MSG", id, msg)
}

func (c *Client) neg(id, what string, parts ...any) (string, string) {
	c.t.Helper()
	from := c.send(what, parts...)
	m := c.wait(what+" "+id, from, answerTo(id, "NEG-MSG", "NEG-ERR"))
	if m.Label() == "NEG-ERR" {
		return "", m.Str(2)
	}
	return m.Str(2), ""
}

// NegClose ends the NIP-77 session id (the relay does not answer).
func (c *Client) NegClose(id string) error { return c.Send("NEG-CLOSE", id) }
