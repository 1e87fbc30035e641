package relay

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// closeMode says why a connection is closing; it decides what the writer still sends.
type closeMode int32

const (
	closeNone     closeMode = iota
	closePeerGone           // the reader ended: the client left or the socket failed
	closeSlow               // the send queue overflowed
	closeShutdown           // the relay is shutting down: drain the queue first
	closeBlocked            // an admin blocked the client's address
	closeRestart            // the relay drains for a restart: answer what was read, drain the queue, 1012
)

const (
	// slowGrace bounds the best-effort goodbye to a client that is too slow.
	slowGrace = time.Second
	// closeWait bounds the wait for the client's answer to our close frame.
	closeWait = time.Second
)

// conn is one WebSocket client. Its messages are read and handled one at a
// time, in order, on the transport's reading turns (wsconn.Handler: a
// goroutine only while the socket has something to read); its writer
// (wsconn.Writer, w), the only one to write to the socket, runs while
// something is due (see kick; the live fan-out writes itself while the socket
// takes the frames, see kickInline) and sends the data frames in queue order.
// Everything else (query goroutines, the batcher's answers, the live fan-out)
// only puts complete messages into the send queue, which is bounded by
// SendQueueSize messages and by the connection's memory budget (mem,
// SendQueueBytes, drawn from the relay's TotalQueueBytes), and holds no buffer
// while it is empty. The budget covers everything held for the connection:
// the queue, live events held while its queries run, and the stored events
// its queries have read (a query stops reading at the budget):
//
//   - enqueue never blocks. When the message would take the connection past its
//     budget, the client is too slow: it is disconnected, so that a client that
//     does not read can never hold up the fan-out or another connection. When
//     the relay's budget is what refuses, the connection holding the most is
//     disconnected first (shed) and the message retried.
//   - enqueueBulk (query results) waits for room while the message would take the
//     connection past three quarters of either limit, leaving the rest for live
//     traffic, and gives the client WriteTimeout to make room before it is
//     declared too slow. At the relay's limit it waits too (room given back by
//     any connection wakes it), and sheds only when none came within
//     WriteTimeout.
//
// A message is always accepted into an empty queue, whatever its size (not
// beyond the relay's budget).
//
// Every disconnect the relay decides (too slow, a write that timed out, a
// blocked address) is counted and logged at info.
type conn struct {
	r   *Relay
	ip  string // the client's address, for logs
	key string // what the per-IP limits count: ratelimit.AddrKey(ip)

	// The connection is its own context (connCtx, see context): done once it
	// starts closing, never before, so an idle connection holds no context,
	// no done channel and no map of children of its own. afters are the
	// functions its children's contexts registered (connCtx.AfterFunc), while
	// they run, newest first; closeWith runs them. Under afterMu, which also
	// makes closeWith's first call the only one.
	afterMu sync.Mutex
	afters  *connAfter

	mem    wsconn.Budget // everything held for this connection; see wsconn.Budget
	negMem wsconn.Budget // the items of its NIP-77 sessions (see negItemBytes), beside mem
	mode   atomic.Int32  // closeMode; closeNone until closeWith
	// inflight counts the EVENTs being handled or waiting for the batcher's
	// answer: a restart's goodbye waits for their OKs (see trackEvent).
	inflight atomic.Int32
	// running counts the query goroutines (startQuery), at most
	// MaxQueriesPerConn. Under mu.
	running int32
	// challenges counts the NIP-42 challenge messages sent (at most
	// maxChallenges); authTried: an AUTH was received. Reader goroutine only.
	challenges uint8
	authTried  bool

	// w is the connection's socket and its writing half: the send queue,
	// whose bytes are charged to mem, and the one writer, which runs only
	// while something is due (see kick). conn is its wsconn.Owner.
	w wsconn.Writer
	// readerDone is made by closeWith, before it sets the mode, as the
	// writer's Done is (BeginClose): an open connection holds neither. Both
	// close only once the connection is closing (the writer ends for good and
	// the reader closes readerDone after closeWith), so whoever closes or
	// waits on them has seen the mode set, and them made.
	readerDone chan struct{}
	onEnd      func(*conn) // run by start's connection once it has ended
	lastPing   int64       // when the pinger last pinged it (unix nanoseconds, as wsconn.Conn.Idle's clock); under Relay.connsMu

	challenge [16]byte // NIP-42 (see challengeText); all zero when AUTH is off
	born      int64    // when the connection was accepted (unix nanoseconds, the relay's clock)

	mu      sync.Mutex
	subs    subList
	queries sync.WaitGroup // running query goroutines

	// more is what few connections use, made on first use (see extra).
	more atomic.Pointer[connExtra]
}

// connExtra is the part of a connection that few connections need: made by
// the first that does (conn.extra), kept for the connection's life.
type connExtra struct {
	// quit is the connection's done channel (connCtx.Done), made by the
	// first who asks for it: closed once the connection starts closing.
	// Under quitMu.
	quitMu sync.Mutex
	quit   chan struct{}

	holding *heldReqs              // REQs held for the first AUTH (signin.go), nil until one is; under conn.mu
	authed  map[string]struct{}    // authenticated pubkeys, nil before the first; reading turns only
	negs    map[string]*negSession // NIP-77 sessions, nil before the first; they count against MaxSubscriptions; under conn.mu
	// slotFree, made by a startQuery that found no query slot free (or by
	// teardown waiting for the queries), is closed when one ends. Under
	// conn.mu.
	slotFree chan struct{}
}

// extra returns the connection's connExtra, making it if none is yet.
func (c *conn) extra() *connExtra {
	if x := c.more.Load(); x != nil {
		return x
	}
	c.more.CompareAndSwap(nil, new(connExtra))
	return c.more.Load()
}

// authed is the connection's authenticated pubkeys (nil before the first
// AUTH). Reading turns only.
func (c *conn) authed() map[string]struct{} {
	if x := c.more.Load(); x != nil {
		return x.authed
	}
	return nil
}

// negs is the connection's NIP-77 sessions (nil before the first). Under mu.
func (c *conn) negs() map[string]*negSession {
	if x := c.more.Load(); x != nil {
		return x.negs
	}
	return nil
}

// authOn reports whether the connection speaks NIP-42 (AUTH is on).
func (c *conn) authOn() bool { return c.challenge != [16]byte{} }

// challengeText is the connection's NIP-42 challenge as it is sent: 32 hex
// digits, the same every time. Only when authOn.
func (c *conn) challengeText() string { return hex.EncodeToString(c.challenge[:]) }

// subList is a connection's open subscriptions, in no order, linked through
// subscription.next: a connection holds few (MaxSubscriptions) and most hold
// one, which costs it no slice.
type subList struct{ head *subscription }

// len returns the number of subscriptions.
func (l subList) len() int {
	n := 0
	for s := l.head; s != nil; s = s.next {
		n++
	}
	return n
}

// get returns the subscription id, or nil.
func (l subList) get(id string) *subscription {
	for s := l.head; s != nil; s = s.next {
		if s.id == id {
			return s
		}
	}
	return nil
}

// put adds s, whose id is not in l.
func (l *subList) put(s *subscription) {
	s.next = l.head
	l.head = s
}

// take removes and returns the subscription id, or nil.
func (l *subList) take(id string) *subscription {
	for p := &l.head; *p != nil; p = &(*p).next {
		if s := *p; s.id == id {
			*p, s.next = s.next, nil
			return s
		}
	}
	return nil
}

// remove removes s if it is in l.
func (l *subList) remove(s *subscription) {
	for p := &l.head; *p != nil; p = &(*p).next {
		if *p == s {
			*p, s.next = s.next, nil
			return
		}
	}
}

// connCtx is a connection seen as its context (conn.context): done once the
// connection starts closing (closeWith), never before; canceled then. It has
// no deadline and no values.
type connCtx conn

// context is the connection as a context: see connCtx. Children made with
// childContext cost the connection nothing once they end; a child made with
// the context package asks for Done, which makes the connection a channel
// it keeps.
func (c *conn) context() context.Context { return (*connCtx)(c) }

func (x *connCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (x *connCtx) Value(any) any               { return nil }
func (x *connCtx) String() string              { return "relay connection" }

// Done makes the connection's done channel when first asked for (closed at
// once when the connection has started closing; else closeWith closes it).
func (x *connCtx) Done() <-chan struct{} {
	c := (*conn)(x)
	m := c.extra()
	m.quitMu.Lock()
	defer m.quitMu.Unlock()
	if m.quit == nil {
		m.quit = make(chan struct{})
		// (closeWith sets the mode before it looks for the channel: either
		// it finds this one, or the mode is set here)
		if c.closing() {
			close(m.quit)
		}
	}
	return m.quit
}

func (x *connCtx) Err() error {
	if (*conn)(x).closing() {
		return context.Canceled
	}
	return nil
}

// closeQuit closes the done channel, if anyone made it and it is open
// (closeWith, after setting the mode).
func (c *conn) closeQuit() {
	m := c.more.Load()
	if m == nil {
		return
	}
	m.quitMu.Lock()
	defer m.quitMu.Unlock()
	if m.quit != nil {
		select {
		case <-m.quit: // (Done closed it: it saw the mode set)
		default:
			close(m.quit)
		}
	}
}

// childContext is context.WithCancel(c.context()) without asking the
// connection for its done channel (which the connection would keep for its
// life): the child is cancelled by cancel, or once the connection starts
// closing. With timeout > 0 it is also cancelled after timeout.
func (c *conn) childContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	var ctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	stop := (*connCtx)(c).AfterFunc(cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// connAfter is one function registered with connCtx.AfterFunc; next is the
// one registered before it.
type connAfter struct {
	f    func()
	next *connAfter
}

// AfterFunc arranges for f to run once the connection starts closing (at
// once, in a goroutine, when it already has); stop unregisters it and
// reports whether it did so before f ran. context.WithCancel uses it for a
// child of the connection's context, instead of a map of children or a
// goroutine per child.
func (x *connCtx) AfterFunc(f func()) (stop func() bool) {
	c := (*conn)(x)
	a := &connAfter{f: f}
	c.afterMu.Lock()
	if c.closing() { // (closeWith runs, or ran, the ones registered before)
		c.afterMu.Unlock()
		go f()
		return func() bool { return false }
	}
	a.next = c.afters
	c.afters = a
	c.afterMu.Unlock()
	return func() bool {
		c.afterMu.Lock()
		defer c.afterMu.Unlock()
		for p := &c.afters; *p != nil; p = &(*p).next {
			if *p == a {
				*p = a.next
				a.next = nil
				return true
			}
		}
		return false
	}
}

// newConn is newConnOn for a connection gorilla's upgrader (Relay.upgrader)
// answered: its socket, of which nothing has been read since.
func newConn(r *Relay, ws *websocket.Conn, ip, key string) *conn {
	return newConnOn(r, wsconn.New(ws.NetConn()), ip, key)
}

func newConnOn(r *Relay, ws *wsconn.Conn, ip, key string) *conn {
	c := &conn{
		r:   r,
		ip:  ip,
		key: key,
	}
	c.mem.Init(int64(r.cfg.SendQueueBytes), r.mem)
	c.negMem.Init(int64(r.cfg.MaxSyncEvents*negItemBytes), r.mem)
	// No writer runs before start: it holds one kick that start answers.
	c.w.Init(ws, r.cfg.SendQueueSize, &c.mem)
	if r.cfg.Auth.Enabled {
		c.challenge = newChallenge()
		c.born = r.now().UnixNano()
	}
	return c
}

// logger is the connection's logger (made when needed: an idle connection
// holds none).
func (c *conn) logger() *slog.Logger { return c.r.log.With("remote", c.ip) }

// serve runs the connection until it ends; it returns after every goroutine of
// the connection has stopped.
func (c *conn) serve() {
	done := make(chan struct{})
	c.start(func(*conn) { close(done) })
	<-done
}

// start runs the connection and returns at once; onEnd runs once the
// connection has ended and every goroutine of it has stopped. An idle
// connection has no goroutine: the transport reads it when the socket is
// readable (wsconn), and the writer runs only while something is to be
// written (see kick).
func (c *conn) start(onEnd func(*conn)) {
	c.onEnd = onEnd
	cfg := c.r.cfg
	// The challenge on connect is queued before any message is read, so it is
	// the first message the client gets.
	if a := cfg.Auth; a.ChallengeOnConnect || a.RequiredForReads || a.RequiredForWrites {
		c.sendChallenge()
	}
	c.w.Start(c) // (answers the kick newConn holds)
	// Messages up to twice the limit are read so that the client gets a NOTICE
	// (protocol.ParseClientMessage refuses them); larger ones close the socket
	// with 1009 (message too big). A client silent for ReadTimeout is closed
	// by the pinger (Relay.pinger).
	c.w.Conn().Serve(c, wsconn.Options{MaxMessage: 2 * int64(c.r.limits().MaxMessageBytes)})
}

// OnMessage handles one message (wsconn.Handler): the transport hands them
// over one at a time, in order; data is the transport's, so the relay's copy
// is what handle may keep.
func (c *conn) OnMessage(data []byte) {
	c.handle(bytes.Clone(data))
}

// OnPing has the writer answer the ping (the latest one, RFC 6455 5.5.3): it
// alone writes to the socket.
func (c *conn) OnPing(payload []byte) { c.w.AnswerPing(c, payload) }

// OnPong: a pong only shows the client is there (the transport notes when
// it last read a frame, which the pinger's read timeout looks at).
func (c *conn) OnPong() {}

// OnEnd ends the connection once its reading has ended (teardown) and runs
// onEnd. A close frame the reading ended with (the client's, or the
// transport's refusal of a frame: 1002, 1007, 1009) is answered by the
// writer's goodbye.
func (c *conn) OnEnd(err error) {
	var ce *wsconn.CloseError
	switch {
	case errors.As(err, &ce):
		if ce.Code == wsconn.CloseMessageTooBig && !ce.Remote {
			c.logger().Debug("message far too big; closing", "limit", c.r.limits().MaxMessageBytes)
		} else if !ce.Remote {
			c.logger().Debug("frame refused; closing", "code", ce.Code, "reason", ce.Text)
		}
		c.w.SetCloseReply(ce)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		c.logger().Debug("read ended", "err", err)
	}
	c.closeWith(closePeerGone) // (makes readerDone, if no close came first)
	close(c.readerDone)
	c.teardown()
	if c.onEnd != nil {
		c.onEnd(c)
	}
}

// kick makes sure the connection's writer runs to write what is due (see
// wsconn.Writer.Kick); it never blocks.
func (c *conn) kick() { c.w.Kick(c) }

// kickInline is kick for the live fan-out, which must never block: it
// writes what the socket takes now itself (wsconn.Writer.KickInline).
func (c *conn) kickInline() { c.w.KickInline(c) }

// pingSoon asks the writer for a ping (Relay.pinger).
func (c *conn) pingSoon() { c.w.PingSoon(c) }

// The connection is its writer's wsconn.Owner: the methods below decide
// what the transport does not.

// WriteTimeout bounds every write to the socket (Config.WriteTimeout).
func (c *conn) WriteTimeout() time.Duration { return c.r.cfg.WriteTimeout }

// Closing reports whether the connection has started closing (closing).
func (c *conn) Closing() bool { return c.closing() }

// GoodbyeDue reports whether the writer says goodbye now: once the
// connection is closing, except for a restart's close while EVENTs are in
// flight: their OKs come first, and the last one's eventDone kicks the
// writer again.
func (c *conn) GoodbyeDue() bool {
	m := closeMode(c.mode.Load())
	return m != closeNone && (m != closeRestart || c.inflight.Load() == 0)
}

// Goodbye is goodbye (the writer closes the socket after it).
func (c *conn) Goodbye() { c.goodbye() }

// WriteFailed closes the connection after a failed write. A write that timed
// out (the client stopped reading for WriteTimeout) is a slow client: counted
// and logged as tooSlow does. (The writer then drops what it holds and
// closes the socket.)
func (c *conn) WriteFailed(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && c.closeWith(closePeerGone) {
		c.slowDisconnected("write timed out")
	} else {
		c.logger().Debug("write failed", "err", err)
		c.closeWith(closePeerGone)
	}
}

// InlineBlocked counts a live write the socket did not take whole.
func (c *conn) InlineBlocked() { c.r.m.liveWriteBlocked.Inc() }

// goodbye ends a closing connection, as its writer: it sends what the close
// mode asks for, a close frame, and waits briefly for the client's close
// frame (the writer then closes the socket).
func (c *conn) goodbye() {
	var code int
	var text string
	var deadline time.Time
	mode := closeMode(c.mode.Load())
	switch mode {
	case closeSlow, closeBlocked:
		deadline = time.Now().Add(slowGrace)
	case closeShutdown, closeRestart:
		deadline = time.Now().Add(c.r.cfg.ShutdownTimeout / 2)
	}
	// A frame an inline write began is finished first (or dropped with the
	// socket): a frame of ours never follows half of another.
	if c.w.Unfinished() {
		if mode == closePeerGone || c.w.FinishFrame(deadline) != nil {
			c.w.DropFrame()
			return
		}
	}
	switch mode {
	case closeSlow:
		_ = c.w.WriteMessage(noticeMsg("error: too slow, disconnecting"), deadline)
		code, text = wsconn.ClosePolicyViolation, "too slow"
	case closeBlocked:
		_ = c.w.WriteMessage(noticeMsg("blocked: your address is blocked from this relay"), deadline)
		code, text = wsconn.ClosePolicyViolation, "address blocked"
	case closeShutdown, closeRestart:
		for {
			msg, ok := c.w.Pop()
			if !ok {
				break
			}
			if err := c.w.WriteMessage(msg.Bytes(), deadline); err != nil {
				return
			}
		}
		code, text = wsconn.CloseGoingAway, "relay shutting down"
		if mode == closeRestart {
			code, text = wsconn.CloseServiceRestart, "relay restarting"
		}
	default: // the reading ended: the peer left, the socket failed, or a close frame came
		if ce := c.w.CloseReply(); ce != nil {
			// The client's close is echoed (its code, RFC 6455 5.5.1), a
			// refused frame answered with the refusal's code.
			if ce.Remote {
				code, text = ce.Code, ""
			} else {
				code, text = ce.Code, ce.Text
			}
			_ = c.w.WriteClose(code, text, time.Now().Add(slowGrace))
		}
		return
	}
	if err := c.w.WriteClose(code, text, deadline); err != nil {
		return
	}
	t := time.NewTimer(min(time.Until(deadline), closeWait))
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
	}
}

// closeWith starts closing the connection (once; the first mode wins) and
// cancels its queries. It reports whether this call started the close.
func (c *conn) closeWith(mode closeMode) bool {
	c.afterMu.Lock()
	if c.closing() {
		c.afterMu.Unlock()
		return false
	}
	c.w.BeginClose()
	c.readerDone = make(chan struct{})
	c.mode.Store(int32(mode)) // (after both are made: see closing)
	afters := c.afters
	c.afters = nil
	c.afterMu.Unlock()
	c.closeQuit()
	for a := afters; a != nil; {
		next := a.next
		a.next = nil
		a.f()
		a = next
	}
	c.kick() // (the writer says goodbye)
	return true
}

// closing reports whether the connection has started closing (closeWith set
// its mode; its done channel, if made, is closed then or soon after).
func (c *conn) closing() bool {
	return closeMode(c.mode.Load()) != closeNone
}

// tooSlow disconnects a client that let its memory budget fill up (why says
// which). It never blocks; the queued messages are dropped at once, so their
// bytes return to the relay's budget.
func (c *conn) tooSlow(why string) {
	if !c.closeWith(closeSlow) {
		return
	}
	c.slowDisconnected(why)
	c.w.Clear()
	// The writer may be blocked on the stuck socket for up to WriteTimeout (a
	// deadline nudge would not stick: the writer sets its own).
	// Closing the socket is safe from any goroutine and ends that write; the
	// goodbye gets slowGrace.
	time.AfterFunc(slowGrace, func() { _ = c.w.Conn().Close() })
}

// slowDisconnected counts and logs a disconnect for slowness.
func (c *conn) slowDisconnected(why string) {
	c.r.m.slowDisconnects.Inc()
	msgs, bytes := c.w.Queued()
	c.logger().Info("client too slow; disconnecting", "reason", why, "queued_messages", msgs, "queued_bytes", bytes,
		"held_bytes", c.mem.Held())
}

// enqueue queues msg for the writer without blocking; see conn. It reports
// whether msg was queued.
func (c *conn) enqueue(msg []byte) bool { return c.enqueueMsg(plainMsg(msg)) }

// enqueueMsg is enqueue for any message (an EVENT without a copy).
func (c *conn) enqueueMsg(msg wsconn.Msg) bool {
	if !c.push(msg) {
		return false
	}
	c.kick()
	return true
}

// push is enqueueMsg without the kick: the caller kicks the writer (kick or
// kickInline) when it reports true.
func (c *conn) push(msg wsconn.Msg) bool {
	// A restart's close still queues what comes before its goodbye, which
	// waits for the EVENTs in flight (trackEvent): their OKs.
	if m := closeMode(c.mode.Load()); m != closeNone && (m != closeRestart || c.inflight.Load() == 0) {
		return false
	}
	res := c.w.Push(msg)
	if res == wsconn.RelayFull && c.r.shed(c) {
		res = c.w.Push(msg)
	}
	if res != wsconn.Taken {
		c.tooSlow(res.String())
		return false
	}
	return true
}

// enqueueBulk queues msg, waiting while msg would take the queue past three
// quarters of either limit; see conn. It gives up (false) when ctx or the
// connection ends, or when no room has come within WriteTimeout. ctx is a
// child of the connection's context (conn.childContext): it ends when the
// connection does.
//
// A query result waits for room at the relay's limit as at its connection's:
// the relay's budget fills with the rows the queries of every connection are
// reading, which are given back as they are queued and written, so a full
// relay budget is no sign that anyone is slow yet, and shedding a client for it
// at once disconnected clients whose queries had not run (and, since a shed
// client's rows come back only once its queries notice, shed one client after
// another for the same message). Bytes given back by any connection wake the
// wait (wsconn.Budget.WhenGiven). Only when no room has come within WriteTimeout does
// a full relay budget shed the connection holding the most (then the wait
// begins again, for the shed client's bytes to come back); a full connection
// budget makes this client too slow.
func (c *conn) enqueueBulk(ctx context.Context, msg wsconn.Msg) bool {
	return c.queueBulk(ctx, msg, true)
}

// queueBulk is enqueueBulk; with kick false it kicks the writer only before
// it waits for room, and the caller kicks it once the messages it queues
// so are all queued (subscription.replay: a query's answer, written in one
// go by the query's goroutine, wsconn.Writer.KickHere).
func (c *conn) queueBulk(ctx context.Context, msg wsconn.Msg, kick bool) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if c.closing() || ctx.Err() != nil {
			return false
		}
		res, room := c.w.PushBulk(msg)
		var relayRoom <-chan struct{}
		if res == wsconn.RelayFull {
			// (asked for before trying again: a give in between closes it)
			relayRoom = c.r.mem.WhenGiven()
			res, room = c.w.PushBulk(msg)
		}
		if res == wsconn.Taken {
			if kick {
				c.kick()
			}
			return true
		}
		c.kick() // (room comes as the writer writes what is queued)
		if timer == nil {
			timer = time.NewTimer(c.r.cfg.WriteTimeout)
		}
		select {
		case <-room:
		case <-relayRoom:
		case <-ctx.Done(): // (also once the connection closes)
			return false
		case <-timer.C:
			timer = nil
			if res == wsconn.RelayFull && c.r.shed(c) {
				continue
			}
			c.tooSlow("no room for query results within the write timeout")
			return false
		}
	}
}

// held is what the connection holds of the relay's memory budget: its own
// budget's bytes and its NIP-77 sessions' items.
func (c *conn) held() int64 { return c.mem.Held() + c.negMem.Held() }

// maxPendingMsgs bounds the live events a subscription holds while its query
// runs: as many as the send queue holds, which is where they go after EOSE
// (waiting for room there as query results do). Their bytes are taken from the
// connection's budget.
func (c *conn) maxPendingMsgs() int { return c.r.cfg.SendQueueSize }

// teardown runs after the reader has ended: it stops every subscription and query
// and waits for the writer.
func (c *conn) teardown() {
	c.closeWith(closePeerGone)
	c.mu.Lock()
	subs := c.subs.head
	c.subs = subList{}
	negs := c.negs()
	c.mu.Unlock()
	for s := subs; s != nil; {
		next := s.next
		s.next = nil
		s.close()
		c.r.dropSub(s)
		s = next
	}
	for _, s := range negs {
		c.endNeg(s)
	}
	c.queries.Wait()
	if closeMode(c.mode.Load()) == closePeerGone {
		if c.w.CloseReply() != nil {
			// The writer answers the close frame first (within slowGrace).
			t := time.NewTimer(slowGrace)
			select {
			case <-c.w.Done():
			case <-t.C:
			}
			t.Stop()
		}
		_ = c.w.Conn().Close() // unblocks a writer stuck on a dead socket
	}
	<-c.w.Done()
	c.w.Clear() // what the writer did not send goes back to the relay's budget
}
