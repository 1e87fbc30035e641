package relay

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math"
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
// goroutine only while the socket has something to read); its writer, the only one to
// write to the socket, runs while something is due (see kick; the live
// fan-out writes itself while the socket takes the frames, see kickInline) and
// sends the data frames in queue order. Everything else (query goroutines, the batcher's
// answers, the live fan-out) only puts complete messages into the send queue,
// which is bounded by SendQueueSize messages and by the connection's memory
// budget (mem, SendQueueBytes, drawn from the relay's TotalQueueBytes), and holds
// no buffer while it is empty (see sendQueue). The budget covers everything held
// for the connection: the queue, live events held while its queries run, and
// the stored events its queries have read (a query stops reading at the budget):
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
	ws  *wsconn.Conn
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

	mem    budget // everything held for this connection; see budget
	negMem budget // the items of its NIP-77 sessions (see negItemBytes), beside mem
	send   sendQueue
	mode   atomic.Int32 // closeMode; closeNone until closeWith
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
	pingDue    atomic.Bool // the relay's pinger asks for a ping (Relay.pinger)

	// The writer runs only while there is something to write (see kick):
	// wake counts the kicks it has not answered yet; writerEnded once it has
	// said goodbye (writerDone is closed then).
	wake     atomic.Int64
	pongData atomic.Pointer[string] // the payload of the latest ping to answer
	// closeReply is the close frame the reading ended with (the peer's, or
	// the transport's refusal of a frame): the writer's goodbye answers it.
	closeReply atomic.Pointer[wsconn.CloseError]
	// writerDone and readerDone are made by closeWith, before it sets the
	// mode: an open connection holds neither. Both close only once the
	// connection is closing (the writer ends for good and the reader closes
	// readerDone after closeWith), so whoever closes or waits on them has
	// seen the mode set, and them made.
	writerDone chan struct{}
	readerDone chan struct{}
	onEnd      func(*conn) // run by start's connection once it has ended
	lastPing   int64       // when the pinger last pinged it (unix nanoseconds, as wsconn.Conn.Idle's clock); under Relay.connsMu
	// wdl is the write deadline writeDue last set on the socket (unix
	// nanoseconds), 0 when unknown (gorilla's control writes set their own);
	// writer only. See batchDeadline.
	wdl int64
	// rest is what an inline write left unwritten of its frames (the socket's
	// buffer was full), and restN the queue bytes those frames hold until it
	// is written: the writer goroutine writes it before anything else (see
	// kickInline). Writer only.
	rest  []byte
	restN int

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

// writerEnded is wake once the writer has ended for good: no kick reaches 1
// from there, so no writer starts again.
const writerEnded = math.MinInt64 / 2

// newConn is newConnOn for a connection gorilla's upgrader (Relay.upgrader)
// answered: its socket, of which nothing has been read since.
func newConn(r *Relay, ws *websocket.Conn, ip, key string) *conn {
	return newConnOn(r, wsconn.New(ws.NetConn()), ip, key)
}

func newConnOn(r *Relay, ws *wsconn.Conn, ip, key string) *conn {
	c := &conn{
		r:      r,
		ws:     ws,
		ip:     ip,
		key:    key,
		mem:    budget{limit: int64(r.cfg.SendQueueBytes), parent: r.mem},
		negMem: budget{limit: int64(r.cfg.MaxSyncEvents * negItemBytes), parent: r.mem},
	}
	c.send.init(r.cfg.SendQueueSize, &c.mem)
	// No writer runs before start: it holds one kick that start answers.
	c.wake.Store(1)
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
	go c.writeLoop() // (answers the kick newConn holds)
	// Messages up to twice the limit are read so that the client gets a NOTICE
	// (protocol.ParseClientMessage refuses them); larger ones close the socket
	// with 1009 (message too big). A client silent for ReadTimeout is closed
	// by the pinger (Relay.pinger).
	c.ws.Serve(c, wsconn.Options{MaxMessage: 2 * int64(c.r.limits().MaxMessageBytes)})
}

// OnMessage handles one message (wsconn.Handler): the transport hands them
// over one at a time, in order; data is the transport's, so the relay's copy
// is what handle may keep.
func (c *conn) OnMessage(data []byte) {
	c.handle(bytes.Clone(data))
}

// OnPing has the writer answer the ping (the latest one, RFC 6455 5.5.3): it
// alone writes to the socket.
func (c *conn) OnPing(payload []byte) {
	data := string(payload)
	c.pongData.Store(&data)
	c.kick()
}

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
		c.closeReply.Store(ce)
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

// kick makes sure a writer runs to write what is due (queued messages, a ping,
// a pong, the goodbye): it starts one when none runs. It never blocks. A
// writer answers every kick that came before it found nothing more to do, so
// no kick is lost and at most one writer runs at a time.
func (c *conn) kick() {
	if c.wake.Add(1) == 1 {
		go c.writeLoop()
	}
}

// pingSoon asks the writer for a ping (Relay.pinger).
func (c *conn) pingSoon() {
	c.pingDue.Store(true)
	c.kick()
}

// writeLoop is the only writer to the socket; it runs while something is due
// and ends when nothing is (see kick). It sends the queued messages in order,
// as many frames per write as are queued (up to writeBatchBytes): one syscall
// for a burst of query results instead of one per message. It sends the pings
// the relay's pinger asks for (also while the queue never empties, so that a
// client that only listens keeps answering) and answers pings, and when the
// connection closes it says goodbye as the close mode asks, closes the socket
// and ends for good (writerDone).
func (c *conn) writeLoop() { c.answerKicks(c.writeDue) }

// writeOutcome is what a writer's turn (writeDue, writeDueNow) ended with.
type writeOutcome int

const (
	wroteAll   writeOutcome = iota // nothing more is due
	wouldBlock                     // something due needs the writer goroutine
	writerGone                     // the writer ended for good: the connection closed, or a write failed
)

// answerKicks runs write, as the connection's writer, until it has answered
// every kick that came before it found nothing more to do (wroteAll and no
// kick since), or hands the writer's part to a new writer goroutine
// (wouldBlock), or the writer has ended for good (writerGone).
func (c *conn) answerKicks(write func() writeOutcome) {
	for {
		k := c.wake.Load()
		switch write() {
		case wouldBlock:
			go c.writeLoop() // (the kicks held here are its to answer)
			return
		case writerGone:
			c.wake.Store(writerEnded)
			close(c.writerDone)
			return
		}
		if c.wake.Add(-k) == 0 {
			return
		}
	}
}

// getBatch returns a batch buffer from batchPool (nil when it has none).
func getBatch() []outMsg {
	if b := batchPool.Get(); b != nil {
		return *(b.(*[]outMsg))
	}
	return nil
}

// putBatch gives a batch buffer back, cleared: it must not pin the messages.
func putBatch(batch []outMsg) {
	clear(batch)
	batch = batch[:0]
	batchPool.Put(&batch)
}

// writeDue writes what is due until nothing is (wroteAll), or until the
// writer has ended for good (writerGone).
func (c *conn) writeDue() writeOutcome {
	batch := getBatch()
	defer func() { putBatch(batch) }()
	for {
		// A restart's goodbye waits for the EVENTs in flight: their OKs
		// come first, and the last one's eventDone kicks the writer again.
		if m := closeMode(c.mode.Load()); m != closeNone && (m != closeRestart || c.inflight.Load() == 0) {
			c.goodbye()
			return writerGone
		}
		if c.rest != nil { // (before any frame: it ends one)
			if err := c.writeRest(c.batchDeadline()); err != nil {
				c.writeFailed(err)
				return writerGone
			}
		}
		if data := c.pongData.Swap(nil); data != nil && !c.pong(*data) {
			return writerGone
		}
		if c.pingDue.Swap(false) && !c.ping() {
			return writerGone
		}
		msgs, n := c.send.popBatch(batch, writeBatchBytes)
		if len(msgs) == 0 {
			return wroteAll
		}
		err := c.writeBatch(msgs, c.batchDeadline())
		clear(msgs)
		batch = msgs[:0]
		c.send.sent(n)
		if err != nil {
			c.writeFailed(err)
			return writerGone
		}
	}
}

// batchDeadline returns the write deadline writeBatch must set for a batch
// written now: now + WriteTimeout, or the zero Time when the deadline already
// on the socket is less than a quarter of WriteTimeout short of it. Setting a
// deadline moves a runtime timer (11% of the relay's CPU fanning a note out
// to 9,000 connections, one write each), so a connection written to often
// sets it about once per quarter WriteTimeout. The promise stays: a write
// that cannot complete within WriteTimeout fails (it may fail after three
// quarters of it), and the client is dropped as too slow.
func (c *conn) batchDeadline() time.Time {
	wt := c.r.cfg.WriteTimeout
	want := time.Now().Add(wt)
	if c.wdl != 0 && want.UnixNano()-c.wdl < int64(wt/4) {
		return time.Time{}
	}
	c.wdl = want.UnixNano()
	return want
}

// batchPool holds the writers' batch buffers (*[]outMsg), so that an idle
// connection holds none.
var batchPool sync.Pool

// framePool holds writeBatch's frame buffers.
var framePool = sync.Pool{New: func() any { return new(frameBuf) }}

// frameBuf is writeBatch's buffer: the frame headers of one batch and the
// pieces of its vectored write.
type frameBuf struct {
	hdrs []byte
	bufs net.Buffers

	// An inline write's callback (writeNow): writeFD is write, bound once;
	// out what it writes, n and err what write(2) said.
	writeFD func(fd uintptr) bool
	out     []byte
	n       int
	err     error
}

// writeBatchBytes bounds the messages the writer sends with one write; a longer
// message goes alone. The bytes stay taken from the connection's budget until
// written (sendQueue.popBatch).
const writeBatchBytes = 64 << 10

// writeBatch writes msgs as unfragmented, unmasked text frames (RFC 6455 5.2;
// no extension is negotiated) with one vectored write to the socket. gorilla's
// writer would make a syscall per message; the socket is written by the
// writer goroutine alone, control frames included, so frames never interleave.
// A zero deadline leaves the socket's write deadline as it is (batchDeadline).
func (c *conn) writeBatch(msgs []outMsg, deadline time.Time) error {
	nc := c.ws.UnderlyingConn()
	if !deadline.IsZero() {
		if err := nc.SetWriteDeadline(deadline); err != nil {
			return err
		}
	}
	fb := framePool.Get().(*frameBuf)
	defer framePool.Put(fb)
	// A small batch (a live event, an EOSE) is copied into one buffer and
	// written with write(2): a vectored write makes the socket keep an iovec
	// array for good (internal/poll caches it per descriptor).
	small := framesSize(msgs)
	if small <= writeCopyBytes || c.ws.Deflating() {
		if cap(fb.hdrs) < small {
			fb.hdrs = make([]byte, 0, small)
		}
		_, err := nc.Write(c.appendFrames(fb.hdrs[:0], msgs))
		return err
	}
	// Each message is two pieces: its frame header with an EVENT's head (and
	// the "]" that closes the EVENT before it), copied into hdrs, then its
	// body. hdrs is sized first: the pieces point into it.
	need := 1
	for _, m := range msgs {
		need += maxFrameHeader + len(m.head) + 1
	}
	if cap(fb.hdrs) < need {
		fb.hdrs = make([]byte, 0, need)
	}
	hdrs, bufs := fb.hdrs[:0], fb.bufs[:0]
	closing := false // the last message was an EVENT: its "]" is due
	for _, m := range msgs {
		start := len(hdrs)
		if closing {
			hdrs = append(hdrs, ']')
		}
		hdrs = appendFrameHeader(hdrs, m.size())
		hdrs = append(hdrs, m.head...)
		bufs = append(bufs, hdrs[start:len(hdrs):len(hdrs)], m.body)
		closing = m.head != nil
	}
	if closing {
		start := len(hdrs)
		hdrs = append(hdrs, ']')
		bufs = append(bufs, hdrs[start:len(hdrs):len(hdrs)])
	}
	fb.bufs = bufs
	w := bufs // (WriteTo consumes its receiver)
	_, err := w.WriteTo(nc)
	clear(bufs) // (the frame buffer must not pin the messages)
	return err
}

// writeCopyBytes bounds the batches writeBatch copies into one buffer.
const writeCopyBytes = 4 << 10

// maxFrameHeader is the longest header of a server's frame.
const maxFrameHeader = 10

// framesSize bounds the length of msgs as frames (appendFrames).
func framesSize(msgs []outMsg) int {
	n := 0
	for _, m := range msgs {
		n += maxFrameHeader + m.size()
	}
	return n
}

// appendFrames is the package's appendFrames, or with permessage-deflate
// negotiated each message through wsconn's AppendText (compressed when long
// enough).
func (c *conn) appendFrames(b []byte, msgs []outMsg) []byte {
	if !c.ws.Deflating() {
		return appendFrames(b, msgs)
	}
	for _, m := range msgs {
		var tail []byte
		if m.head != nil {
			tail = eventTail
		}
		b = c.ws.AppendText(b, m.head, m.body, tail)
	}
	return b
}

// eventTail ends an EVENT message (outMsg).
var eventTail = []byte("]")

// appendFrames appends msgs to b as unfragmented, unmasked text frames, each
// EVENT whole (head, body, "]").
func appendFrames(b []byte, msgs []outMsg) []byte {
	for _, m := range msgs {
		b = appendFrameHeader(b, m.size())
		b = append(b, m.head...)
		b = append(b, m.body...)
		if m.head != nil {
			b = append(b, ']')
		}
	}
	return b
}

// appendFrameHeader appends the header of a final, unmasked text frame of n
// payload bytes.
func appendFrameHeader(b []byte, n int) []byte {
	return wsconn.AppendFrameHeader(b, wsconn.OpText, n)
}

// pong answers a ping; when that fails it closes the connection and reports false.
func (c *conn) pong(data string) bool {
	c.wdl = 0 // WriteControl sets the socket's deadline
	if err := c.ws.WriteControl(wsconn.OpPong, []byte(data), time.Now().Add(c.r.cfg.WriteTimeout)); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// ping sends a ping; when that fails it closes the connection and reports false.
func (c *conn) ping() bool {
	c.wdl = 0 // WriteControl sets the socket's deadline
	if err := c.ws.WriteControl(wsconn.OpPing, nil, time.Now().Add(c.r.cfg.WriteTimeout)); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// writeFailed closes the connection after a failed write. A write that timed
// out (the client stopped reading for WriteTimeout) is a slow client: counted
// and logged as tooSlow does.
func (c *conn) writeFailed(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && c.closeWith(closePeerGone) {
		c.slowDisconnected("write timed out")
	} else {
		c.logger().Debug("write failed", "err", err)
		c.closeWith(closePeerGone)
	}
	c.dropRest()
	c.send.clear()
	_ = c.ws.Close()
}

func (c *conn) write(msg []byte, deadline time.Time) error {
	c.wdl = 0
	return c.ws.WriteMessage(msg, deadline)
}

// goodbye ends a closing connection: it sends what the close mode asks for, a
// close frame, waits briefly for the client's close frame and closes the socket.
func (c *conn) goodbye() {
	defer func() { _ = c.ws.Close() }()
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
	if c.rest != nil {
		if mode == closePeerGone || c.writeRest(deadline) != nil {
			c.dropRest()
			return
		}
	}
	switch mode {
	case closeSlow:
		_ = c.write(noticeMsg("error: too slow, disconnecting"), deadline)
		code, text = wsconn.ClosePolicyViolation, "too slow"
	case closeBlocked:
		_ = c.write(noticeMsg("blocked: your address is blocked from this relay"), deadline)
		code, text = wsconn.ClosePolicyViolation, "address blocked"
	case closeShutdown, closeRestart:
		for {
			msg, ok := c.send.pop()
			if !ok {
				break
			}
			if err := c.write(msg.bytes(), deadline); err != nil {
				return
			}
		}
		code, text = wsconn.CloseGoingAway, "relay shutting down"
		if mode == closeRestart {
			code, text = wsconn.CloseServiceRestart, "relay restarting"
		}
	default: // the reading ended: the peer left, the socket failed, or a close frame came
		if ce := c.closeReply.Load(); ce != nil {
			// The client's close is echoed (its code, RFC 6455 5.5.1), a
			// refused frame answered with the refusal's code.
			if ce.Remote {
				code, text = ce.Code, ""
			} else {
				code, text = ce.Code, ce.Text
			}
			_ = c.ws.WriteControl(wsconn.OpClose, wsconn.ClosePayload(code, text), time.Now().Add(slowGrace))
		}
		return
	}
	if err := c.ws.WriteControl(wsconn.OpClose, wsconn.ClosePayload(code, text), deadline); err != nil {
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
	c.writerDone = make(chan struct{})
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
	c.send.clear()
	// The writer may be blocked on the stuck socket for up to WriteTimeout (a
	// deadline nudge would not stick: the writer sets its own, batchDeadline).
	// Closing the socket is safe from any goroutine and ends that write; the
	// goodbye gets slowGrace.
	time.AfterFunc(slowGrace, func() { _ = c.ws.Close() })
}

// slowDisconnected counts and logs a disconnect for slowness.
func (c *conn) slowDisconnected(why string) {
	c.r.m.slowDisconnects.Inc()
	msgs, bytes := c.send.size()
	c.logger().Info("client too slow; disconnecting", "reason", why, "queued_messages", msgs, "queued_bytes", bytes,
		"held_bytes", c.mem.held())
}

// enqueue queues msg for the writer without blocking; see conn. It reports
// whether msg was queued.
func (c *conn) enqueue(msg []byte) bool { return c.enqueueMsg(plainMsg(msg)) }

// enqueueMsg is enqueue for any outMsg (an EVENT without a copy).
func (c *conn) enqueueMsg(msg outMsg) bool {
	if !c.push(msg) {
		return false
	}
	c.kick()
	return true
}

// push is enqueueMsg without the kick: the caller kicks the writer (kick or
// kickInline) when it reports true.
func (c *conn) push(msg outMsg) bool {
	// A restart's close still queues what comes before its goodbye, which
	// waits for the EVENTs in flight (trackEvent): their OKs.
	if m := closeMode(c.mode.Load()); m != closeNone && (m != closeRestart || c.inflight.Load() == 0) {
		return false
	}
	res := c.send.tryPush(msg)
	if res == relayFull && c.r.shed(c) {
		res = c.send.tryPush(msg)
	}
	if res != taken {
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
// wait (budget.whenGiven). Only when no room has come within WriteTimeout does
// a full relay budget shed the connection holding the most (then the wait
// begins again, for the shed client's bytes to come back); a full connection
// budget makes this client too slow.
func (c *conn) enqueueBulk(ctx context.Context, msg outMsg) bool {
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
		res, room := c.send.tryPushBulk(msg)
		var relayRoom <-chan struct{}
		if res == relayFull {
			// (asked for before trying again: a give in between closes it)
			relayRoom = c.r.mem.whenGiven()
			res, room = c.send.tryPushBulk(msg)
		}
		if res == taken {
			c.kick()
			return true
		}
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
			if res == relayFull && c.r.shed(c) {
				continue
			}
			c.tooSlow("no room for query results within the write timeout")
			return false
		}
	}
}

// held is what the connection holds of the relay's memory budget: its own
// budget's bytes and its NIP-77 sessions' items.
func (c *conn) held() int64 { return c.mem.held() + c.negMem.held() }

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
		if c.closeReply.Load() != nil {
			// The writer answers the close frame first (within slowGrace).
			t := time.NewTimer(slowGrace)
			select {
			case <-c.writerDone:
			case <-t.C:
			}
			t.Stop()
		}
		_ = c.ws.Close() // unblocks a writer stuck on a dead socket
	}
	<-c.writerDone
	c.send.clear() // what the writer did not send goes back to the relay's budget
}
