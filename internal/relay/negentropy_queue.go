package relay

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// negQueue is the relay's queue of NIP-77 loads: the database reads of the
// items of the sessions the fingerprint tree does not serve. At most
// Config.MaxSyncLoads loads run at once, relay-wide; a session beyond waits
// its turn instead of being refused.
//
// Fairness: each connection's waiting sessions are a FIFO, and a freed slot
// goes to the connection whose turn it is, round-robin over the connections
// with sessions waiting. A connection that opened 12 sessions at once (an
// app opens one per filter) therefore delays another connection's single
// session by at most one load, and a connection's own sessions start in the
// order they were opened.
//
// A waiting session holds no goroutine, no query slot of its connection and
// no items: only the session itself and its initial message, charged to its
// connection's sync budget (negQueuedBytes plus the message) until its load
// starts or it ends. Ending it (NEG-CLOSE, a NEG-OPEN reusing its id, the
// connection ending) takes it out of the queue at once (remove). Its idle
// timer (Config.NegIdleTimeout) starts with its first answer, so waiting
// never times it out. Past MaxQueuedSyncsPerConn sessions waiting on its
// connection, or MaxQueuedSyncs on the relay, a NEG-OPEN is answered NEG-ERR
// "rate-limited: ...".
type negQueue struct {
	mu      sync.Mutex
	free    int                     // slots not running a load; > 0 only while nothing waits
	turns   list.List               // of *negWaiters: connections with sessions waiting, in turn order
	waiting map[*conn]*list.Element // the connection's element of turns
	queued  int                     // sessions waiting, relay-wide

	maxQueued, maxPerConn int
	m                     *metrics
	// granted, when set (tests), is called under mu with each session whose
	// load starts, in order.
	granted func(subID string)
}

// negWaiters is one connection's waiting sessions, oldest first.
type negWaiters struct {
	c        *conn
	sessions []*negSession
}

// negQueuedBytes is what a waiting session costs beside its initial message:
// the session, its context, its parsed filter (for the filters apps send)
// and its place in the queue.
const negQueuedBytes = 1024

// queueResult is push's answer.
type queueResult int

const (
	loadStarted    queueResult = iota // a slot was free: the load runs
	loadWaiting                       // queued: the load runs when its turn comes
	loadEnded                         // the session had ended: nothing runs
	connQueueFull                     // MaxQueuedSyncsPerConn of its connection wait already
	relayQueueFull                    // MaxQueuedSyncs of the relay wait already
)

func newNegQueue(cfg Config, m *metrics) *negQueue {
	return &negQueue{free: cfg.MaxSyncLoads, waiting: map[*conn]*list.Element{},
		maxQueued: cfg.MaxQueuedSyncs, maxPerConn: cfg.MaxQueuedSyncsPerConn, m: m}
}

// push runs s.load in a goroutine of c's (counted by c.queries) at once if a
// slot is free, or queues s behind c's other waiting sessions; s.load must
// call done once it no longer reads the database. A session that has ended
// (its context is cancelled before push: see endNeg, which cancels before it
// removes) is not queued.
func (q *negQueue) push(c *conn, s *negSession) queueResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.ctx.Err() != nil {
		return loadEnded
	}
	if q.free > 0 { // (then nothing waits)
		q.free--
		q.startLocked(c, s)
		return loadStarted
	}
	var w *negWaiters
	if el := q.waiting[c]; el != nil {
		w = el.Value.(*negWaiters)
	}
	switch {
	case w != nil && len(w.sessions) >= q.maxPerConn:
		return connQueueFull
	case q.queued >= q.maxQueued:
		return relayQueueFull
	}
	if w == nil {
		w = &negWaiters{c: c}
		q.waiting[c] = q.turns.PushBack(w)
	}
	w.sessions = append(w.sessions, s)
	s.waiting, s.queuedAt = true, time.Now()
	q.queued++
	q.m.negQueued.Set(float64(q.queued))
	return loadWaiting
}

// done frees the slot of a load that no longer reads the database: the
// session whose turn it is starts in it.
func (q *negQueue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	front := q.turns.Front()
	if front == nil {
		q.free++
		return
	}
	w := front.Value.(*negWaiters)
	s := w.sessions[0]
	w.sessions[0] = nil
	w.sessions = w.sessions[1:]
	if len(w.sessions) == 0 {
		q.turns.Remove(front)
		delete(q.waiting, w.c)
	} else {
		q.turns.MoveToBack(front)
	}
	q.queued--
	q.m.negQueued.Set(float64(q.queued))
	s.waiting = false
	q.m.negQueueWait.Observe(time.Since(s.queuedAt).Seconds())
	q.startLocked(w.c, s)
}

func (q *negQueue) startLocked(c *conn, s *negSession) {
	if q.granted != nil {
		q.granted(s.id)
	}
	c.queries.Add(1) // (before remove could return: so before teardown's Wait)
	go func() {
		defer c.queries.Done()
		s.load()
	}()
}

// remove takes s, an ended session of c, out of the queue; it reports
// whether s was waiting (then its load never runs).
func (q *negQueue) remove(c *conn, s *negSession) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !s.waiting {
		return false
	}
	s.waiting = false
	el := q.waiting[c]
	w := el.Value.(*negWaiters)
	if i := slices.Index(w.sessions, s); i >= 0 {
		w.sessions = slices.Delete(w.sessions, i, i+1) // (clears the freed end)
	}
	if len(w.sessions) == 0 {
		q.turns.Remove(el)
		delete(q.waiting, c)
	}
	q.queued--
	q.m.negQueued.Set(float64(q.queued))
	return true
}

// waitingNow returns the sessions waiting, relay-wide.
func (q *negQueue) waitingNow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}
