package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/eventcache"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(heldClientEnv) != "" { // the client process of held_test.go
		os.Exit(heldClientMain())
	}
	if os.Getenv(heldServerEnv) != "" { // the relay's process of TestHeldConnectionMemory
		os.Exit(heldServerMain())
	}
	code := pgtest.Run(m)
	if spinning := spinningQueries(); code == 0 && spinning > 0 && os.Getenv(childTestEnv) == "" {
		fmt.Fprintf(os.Stderr, "FAIL: %d go-nostr QueryEvents goroutines spin after their queries ended (use testkit.QuerySync, not Relay.QuerySync or QueryEvents)\n", spinning)
		code = 1
	}
	os.Exit(code)
}

// childTestEnv marks a test binary that inChild started.
const childTestEnv = "CN_RELAY_TEST_CHILD"

// inChild reports whether this process is the child that runs t alone; in
// the parent it runs t in such a child (this test binary, -test.run ^t$) and
// fails t if the child fails. For tests of stock clients that leave
// goroutines spinning forever (go-nostr's NIP-77 client, see testkit.QuerySync): they
// end with the child instead of slowing every later test.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childTestEnv) != "" {
		return true
	}
	args := []string{"-test.run", "^" + t.Name() + "$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childTestEnv+"=1", pgtest.EnvURL+"="+pgtest.ServerURL())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s in a child process: %v\n%s", t.Name(), err, out)
	}
	return false
}

// spinningQueries counts the goroutines of go-nostr's Relay.QueryEvents,
// which never end once started (see testkit.QuerySync).
func spinningQueries() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "go-nostr.(*Relay).QueryEvents.func1")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitTimeout bounds every wait of the tests for a message.
//
// It guards against a hang and checks no speed: make test runs the package's
// tests in parallel beside every other package on two cores, and under that
// load (or a busy machine) a stock client's five round trips have taken more
// than 5 s. Every use waits for something that must happen.
const waitTimeout = 20 * time.Second

// testConfig is DefaultConfig without rate limits (tests publish bursts).
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Listen = ""
	cfg.EventRatePerIP = Rate{}
	cfg.EventRatePerPubkey = Rate{}
	cfg.ReqRatePerIP = Rate{}
	cfg.ShutdownTimeout = 5 * time.Second
	// Timeouts that end a client's work are bounds against hangs here, far
	// above what the slowest honest run needs under make test's own load; a
	// test of one of them sets its own (TestReqQueryTimeout, the NIP-77 idle
	// test). go-nostr's sync client keeps its NIP-77 session open while it
	// uploads, one OK awaited per event: under load that took over a minute,
	// past the production default of 60 s.
	cfg.IngestTimeout = 2 * time.Minute
	cfg.QueryTimeout = 2 * time.Minute
	cfg.NegIdleTimeout = 10 * time.Minute
	return cfg
}

// testRelay is a relay serving on a loopback port.
type testRelay struct {
	*Relay
	store *fakeStore
	reg   *prometheus.Registry
	url   string // ws://127.0.0.1:port
	http  string // http://127.0.0.1:port
	stop  func() error
}

// startRelay serves a relay on store (a new fakeStore when nil) until the test ends.
// tune, if given, adjusts the relay's internals before it starts.
func startRelay(t *testing.T, store *fakeStore, edit func(*Config), tune ...func(*Relay)) *testRelay {
	t.Helper()
	if store == nil {
		store = newFakeStore()
	}
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	reg := prometheus.NewRegistry()
	r, err := New(cfg, Deps{Store: store, Feed: store, Registerer: reg, Gatherer: reg})
	require.NoError(t, err)
	for _, f := range tune {
		f(r)
	}
	tr := serveRelay(t, r)
	tr.store, tr.reg = store, reg
	return tr
}

// serveRelay serves r on a loopback port until the test ends, and waits until its
// follower knows where the outbox ends, so that events stored from then on are
// delivered live.
func serveRelay(t testing.TB, r *Relay) *testRelay {
	t.Helper()
	return serveRelayWait(t, r, true)
}

// serveRelayWait is serveRelay, without waiting for the follower to start
// unless wait.
func serveRelayWait(t testing.TB, r *Relay, wait bool) *testRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(2 * r.cfg.ShutdownTimeout):
			t.Error("relay did not stop")
			return nil
		}
	}
	t.Cleanup(func() { require.NoError(t, stop()) })
	addr := ln.Addr().String()
	tr := &testRelay{Relay: r, url: "ws://" + addr, http: "http://" + addr, stop: stop}
	if !wait {
		return tr
	}
	select {
	case <-r.follower.ready:
	case <-time.After(waitTimeout):
		t.Fatal("the follower did not start")
	}
	return tr
}

// client is the relay tests' strict-order view of a testkit.Client (which
// owns the WebSocket and reads every message as it arrives): it hands every
// message, in order, to a channel, except AUTH challenges (NIP-42), which it
// keeps apart as clients do: a client takes the challenge whenever it comes
// (on connect, by default), and a test that is not about AUTH never reads
// it. Tests about AUTH read challenges with challenge or challengeAt, and
// check there was none with noChallenge.
type client struct {
	t    *testing.T
	tk   *testkit.Client
	msgs chan []json.RawMessage
	// challenges are the AUTH messages received, each with the number of
	// other messages received before it.
	challenges chan challengeMsg
	gone       chan struct{} // closed when the connection has ended and every message was handed on
	err        error         // the read error, once gone is closed
	// closedSubs are the subscriptions ids has closed: the relay may still
	// send their live events until it reads the CLOSE (NIP-01 has no answer
	// to CLOSE), and ids skips those.
	closedSubs map[string]bool
}

func dial(t *testing.T, url string) *client {
	t.Helper()
	return dialHeader(t, url, nil)
}

// dialHeader is dial with the upgrade request's headers (a Host header
// names the host the request claims to be sent to).
func dialHeader(t *testing.T, url string, header http.Header) *client {
	t.Helper()
	tk, _, err := testkit.ConnectHeader(t, url, header)
	require.NoError(t, err)
	c := &client{t: t, tk: tk, msgs: make(chan []json.RawMessage, 10000), challenges: make(chan challengeMsg, 16),
		gone: make(chan struct{}), closedSubs: map[string]bool{}}
	go func() {
		defer close(c.gone)
		received := 0
		for {
			msg, err := tk.NextCtx(context.Background())
			if err != nil {
				c.err = tk.Err()
				return
			}
			if msg.Label() == "testkit: not a JSON array" {
				c.err = fmt.Errorf("not a JSON array: %s", msg.Str(1))
				return
			}
			var challenge string
			if msg.Label() == "AUTH" && len(msg) == 2 && json.Unmarshal(msg[1], &challenge) == nil {
				c.challenges <- challengeMsg{challenge: challenge, after: received}
				continue
			}
			received++
			c.msgs <- msg
		}
	}()
	return c
}

func (c *client) send(parts ...any) {
	c.t.Helper()
	require.NoError(c.t, c.tk.Send(parts...))
}

func (c *client) sendRaw(data string) {
	c.t.Helper()
	require.NoError(c.t, c.tk.SendRaw([]byte(data)))
}

// next returns the next message; the test fails if none comes in time.
func (c *client) next() []json.RawMessage {
	c.t.Helper()
	select {
	case msg := <-c.msgs:
		return msg
	case <-c.gone:
		select {
		case msg := <-c.msgs:
			return msg
		default:
		}
		c.t.Fatalf("connection closed while waiting for a message: %v", c.err)
	case <-time.After(waitTimeout):
		c.t.Fatal("no message in time")
	}
	return nil
}

// challengeMsg is an AUTH challenge a client received, and how many other
// messages it had received before it.
type challengeMsg struct {
	challenge string
	after     int
}

// challengeAt returns the next AUTH challenge, and how many other messages
// came before it; the test fails if none comes in time.
func (c *client) challengeAt() challengeMsg {
	c.t.Helper()
	select {
	case ch := <-c.challenges:
		return ch
	case <-c.gone:
		select {
		case ch := <-c.challenges:
			return ch
		default:
		}
		c.t.Fatalf("connection closed while waiting for an AUTH challenge: %v", c.err)
	case <-time.After(waitTimeout):
		c.t.Fatal("no AUTH challenge in time")
	}
	return challengeMsg{}
}

// noChallenge checks that no AUTH challenge is waiting. Messages are received
// in order, so after a test has read a message, every challenge sent before it
// has been received.
func (c *client) noChallenge() {
	c.t.Helper()
	select {
	case ch := <-c.challenges:
		c.t.Fatalf("unexpected AUTH challenge %q (after %d messages)", ch.challenge, ch.after)
	default:
	}
}

// expect returns the next message and checks its type.
func (c *client) expect(typ string) []json.RawMessage {
	c.t.Helper()
	msg := c.next()
	require.Equal(c.t, typ, str(c.t, msg[0]), "message %s", join(msg))
	return msg
}

// quiet checks that no message is waiting.
func (c *client) quiet() {
	c.t.Helper()
	select {
	case msg := <-c.msgs:
		c.t.Fatalf("unexpected message %s", join(msg))
	default:
	}
}

// publish sends ev and returns its OK.
func (c *client) publish(ev *nostr.Event) (bool, string) {
	c.t.Helper()
	c.send("EVENT", ev)
	return c.ok(ev.ID)
}

// ok reads the next message, an OK for id, and returns its verdict.
func (c *client) ok(id string) (bool, string) {
	c.t.Helper()
	msg := c.expect("OK")
	require.Len(c.t, msg, 4)
	require.Equal(c.t, id, str(c.t, msg[1]))
	var ok bool
	require.NoError(c.t, json.Unmarshal(msg[2], &ok))
	return ok, str(c.t, msg[3])
}

// event reads the next message, an EVENT for sub, and returns the event.
func (c *client) event(sub string) *nostr.Event {
	c.t.Helper()
	msg := c.expect("EVENT")
	require.Len(c.t, msg, 3)
	require.Equal(c.t, sub, str(c.t, msg[1]))
	var ev nostr.Event
	require.NoError(c.t, json.Unmarshal(msg[2], &ev))
	return &ev
}

// eose reads the next message, an EOSE for sub.
func (c *client) eose(sub string) {
	c.t.Helper()
	msg := c.expect("EOSE")
	require.Equal(c.t, sub, str(c.t, msg[1]))
}

// closed reads the next message, a CLOSED for sub, and returns its reason.
func (c *client) closed(sub string) string {
	c.t.Helper()
	msg := c.expect("CLOSED")
	require.Len(c.t, msg, 3)
	require.Equal(c.t, sub, str(c.t, msg[1]))
	return str(c.t, msg[2])
}

// drain makes a round trip and returns the messages that came before its answer:
// everything the relay queued for this client before it handled the probe.
func (c *client) drain() [][]json.RawMessage {
	c.t.Helper()
	c.send("COUNT", "drain-probe", map[string]any{"#t": []string{"go"}, "ids": []string{}})
	var before [][]json.RawMessage
	for {
		msg := c.next()
		if str(c.t, msg[0]) == "COUNT" && str(c.t, msg[1]) == "drain-probe" {
			return before
		}
		before = append(before, msg)
	}
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "not a string: %s", raw)
	return s
}

func join(msg []json.RawMessage) string {
	parts := make([]string, len(msg))
	for i, p := range msg {
		parts[i] = string(p)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// key is a test author.
type key struct{ sk, pk string }

func newKey(t *testing.T) key {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	return key{sk: sk, pk: pk}
}

// note returns a signed kind-1 event by k with topic "go", created now, after edit.
func (k key) note(t *testing.T, content string, edit func(*nostr.Event)) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{
		Kind:      1,
		CreatedAt: nostr.Now(),
		Tags:      nostr.Tags{{"t", "go"}},
		Content:   content,
	}
	if edit != nil {
		edit(ev)
	}
	require.NoError(t, ev.Sign(k.sk))
	return ev
}

// goFilter is a filter for topic "go".
func goFilter() map[string]any { return map[string]any{"#t": []string{"go"}} }

// cacheOf is r's event cache (WithEventCache); nil without one.
func cacheOf(r *Relay) *eventcache.Cache {
	c, _ := r.cache.(*eventcache.Cache)
	return c
}

// cacheAnswers is r's cache answers counter (WithEventCache), by result.
func cacheAnswers(r *Relay, result string) float64 {
	return testutil.ToFloat64(r.reads.(*eventcache.Reader).Answers.WithLabelValues(result))
}
