package relay

import (
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdLoads takes n of r's NIP-77 load slots, as n loads running would, and
// returns what frees them (each as a load ending does).
func holdLoads(t *testing.T, r *Relay, n int) (release func()) {
	t.Helper()
	q := r.negLoads
	q.mu.Lock()
	require.GreaterOrEqual(t, q.free, n, "free load slots")
	q.free -= n
	q.mu.Unlock()
	return func() {
		for range n {
			q.done()
		}
	}
}

// waitQueued waits until n sessions of r wait for a load.
func waitQueued(t *testing.T, r *Relay, n int) {
	t.Helper()
	waitFor(t, strconv.Itoa(n)+" sessions queued", func() bool { return r.negLoads.waitingNow() == n })
}

// TestNegentropyQueuedSessions: an app opens a dozen NIP-77 sessions at once
// (one per filter) on a relay that reads items for MaxSyncLoads (2) sessions
// at a time: every session gets its NEG-MSG, none is refused (before, every
// NEG-OPEN beyond the free slots got NEG-ERR "rate-limited: ..."). While
// they wait, they hold no items and no query slot: the same connection's
// REQ is answered.
func TestNegentropyQueuedSessions(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	require.Equal(t, 2, e.relay.cfg.MaxSyncLoads)
	k := newKey(t)
	evs := signedNotes(t, k, 5, 1, mrand.New(mrand.NewPCG(21, 21)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}} // (not the tree's: its items are read)

	release := holdLoads(t, e.relay.Relay, 2) // both slots busy, as under a burst
	c := dial(t, e.relay.url)
	for i := range 12 {
		c.send("NEG-OPEN", "s"+strconv.Itoa(i), filter, "61")
	}
	c.send("REQ", "r", filter)
	for range evs {
		c.expect("EVENT")
	}
	c.eose("r")
	waitQueued(t, e.relay.Relay, 12)
	require.EqualValues(t, 12*(negQueuedBytes+2), negHeld(e.relay.Relay), "waiting sessions hold their message, no items")
	release()
	var answered []string
	for range 12 {
		msg := c.next()
		require.Equal(t, "NEG-MSG", str(t, msg[0]), "every session is answered, none refused: %s", join(msg))
		answered = append(answered, str(t, msg[1]))
	}
	var want []string
	for i := range 12 {
		want = append(want, "s"+strconv.Itoa(i))
	}
	require.ElementsMatch(t, want, answered)
	require.Zero(t, e.relay.negLoads.waitingNow())
	require.EqualValues(t, 12*5*negItemBytes, negHeld(e.relay.Relay), "each session holds its 5 items")
	// A session frees its slot just after its answer is queued, so the last
	// answers can arrive a moment before their slots are free.
	waitFor(t, "every slot free again", func() bool {
		e.relay.negLoads.mu.Lock()
		defer e.relay.negLoads.mu.Unlock()
		return e.relay.negLoads.free == 2
	})
}

// TestNegentropyQueueFair: a connection's twelve waiting sessions do not
// starve another connection's one: slots go round-robin over the
// connections, so the second connection's session loads second, before the
// first connection's second session (and its twelfth).
func TestNegentropyQueueFair(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.MaxSyncLoads = 1 })
	k := newKey(t)
	e.store(signedNotes(t, k, 3, 1, mrand.New(mrand.NewPCG(22, 22))))
	filter := map[string]any{"authors": []string{k.pk}}
	var mu sync.Mutex
	var order []string
	q := e.relay.negLoads
	q.mu.Lock()
	q.granted = func(id string) { mu.Lock(); order = append(order, id); mu.Unlock() }
	q.mu.Unlock()

	release := holdLoads(t, e.relay.Relay, 1)
	many := dial(t, e.relay.url)
	for i := range 12 {
		many.send("NEG-OPEN", "a"+strconv.Itoa(i), filter, "61")
	}
	waitQueued(t, e.relay.Relay, 12)
	one := dial(t, e.relay.url)
	one.send("NEG-OPEN", "b", filter, "61")
	waitQueued(t, e.relay.Relay, 13)
	release()
	require.Equal(t, "b", str(t, one.expect("NEG-MSG")[1]))
	for i := range 12 {
		require.Equal(t, "a"+strconv.Itoa(i), str(t, many.expect("NEG-MSG")[1]))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"a0", "b", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11"}, order)
	require.Less(t, slices.Index(order, "b"), slices.Index(order, "a11"))
}

// TestNegentropyQueueBounds: past MaxQueuedSyncsPerConn sessions waiting on a
// connection, or MaxQueuedSyncs on the relay, a NEG-OPEN is answered NEG-ERR
// "rate-limited: ..."; a NEG-CLOSE of a waiting session, or its connection
// ending, frees its place (and its bytes) at once, and it never answers.
func TestNegentropyQueueBounds(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) {
		cfg.MaxSyncLoads = 1
		cfg.MaxQueuedSyncsPerConn = 2
		cfg.MaxQueuedSyncs = 3
	})
	k := newKey(t)
	e.store(signedNotes(t, k, 3, 1, mrand.New(mrand.NewPCG(23, 23))))
	filter := map[string]any{"authors": []string{k.pk}}
	release := holdLoads(t, e.relay.Relay, 1)

	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "q1", filter, "61")
	c.send("NEG-OPEN", "q2", filter, "61")
	c.send("NEG-OPEN", "q3", filter, "61") // a third on this connection
	require.Equal(t, reasonNegConnBusy, str(t, negErr(t, c, "q3")[2]))
	waitQueued(t, e.relay.Relay, 2)
	c.send("NEG-CLOSE", "q1")
	c.send("COUNT", "n", filter) // answered after the NEG-CLOSE was handled
	c.expect("COUNT")
	require.Equal(t, 1, e.relay.negLoads.waitingNow(), "the closed session left the queue")
	c.send("NEG-OPEN", "q3", filter, "61") // its place is free
	waitQueued(t, e.relay.Relay, 2)

	gone := dial(t, e.relay.url)
	gone.send("NEG-OPEN", "g", filter, "61")
	waitQueued(t, e.relay.Relay, 3)
	other := dial(t, e.relay.url)
	other.send("NEG-OPEN", "o", filter, "61") // a fourth on the relay
	require.Equal(t, reasonNegBusy, str(t, negErr(t, other, "o")[2]))
	_ = gone.tk.Close()
	waitQueued(t, e.relay.Relay, 2) // the connection's end freed its place
	other.send("NEG-OPEN", "o", filter, "61")
	waitQueued(t, e.relay.Relay, 3)

	release()
	require.Equal(t, "q2", str(t, c.expect("NEG-MSG")[1]))
	require.Equal(t, "q3", str(t, c.expect("NEG-MSG")[1]), "nothing of q1")
	require.Equal(t, "o", str(t, other.expect("NEG-MSG")[1]))
	require.Zero(t, e.relay.negLoads.waitingNow())
	require.EqualValues(t, 3*3*negItemBytes, negHeld(e.relay.Relay), "the closed and the gone sessions gave their bytes back")
}

// TestNegentropyQueuedNotIdle: NegIdleTimeout counts from a session's last
// answer, so a session that waits for its load longer than that is not ended
// as idle: it is answered when its turn comes (and then times out as usual).
func TestNegentropyQueuedNotIdle(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	e := newNegEnv(t, func(cfg *Config) { cfg.MaxSyncLoads = 1; cfg.NegIdleTimeout = idle })
	k := newKey(t)
	e.store(signedNotes(t, k, 3, 1, mrand.New(mrand.NewPCG(24, 24))))
	release := holdLoads(t, e.relay.Relay, 1)
	c := dial(t, e.relay.url)
	opened := time.Now()
	c.send("NEG-OPEN", "w", map[string]any{"authors": []string{k.pk}}, "61")
	waitQueued(t, e.relay.Relay, 1)
	// (what is checked is that a timeout does not fire: time must pass)
	waitFor(t, "four idle timeouts", func() bool { return time.Since(opened) > 4*idle })
	c.quiet()
	release()
	require.Equal(t, "w", str(t, c.expect("NEG-MSG")[1]))
	require.Equal(t, reasonNegIdle, str(t, negErr(t, c, "w")[2]), "idle once answered")
}
