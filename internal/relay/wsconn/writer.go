package wsconn

import (
	"errors"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Owner is the connection a Writer writes for: it decides what the
// transport does not (when to say goodbye and what with, what a failed write
// means). Its methods are called by the connection's writer, whichever
// goroutine holds that part at the time (see Writer), never by two at once.
type Owner interface {
	// WriteTimeout bounds every write: one that does not complete within it
	// fails (WriteFailed), and the peer is dropped.
	WriteTimeout() time.Duration
	// Closing reports whether the connection has started closing: an inline
	// writer then leaves what is due to the writer goroutine.
	Closing() bool
	// GoodbyeDue reports whether the writer goroutine is to say goodbye
	// now (Goodbye). While it is not, the writer goes on writing what is
	// queued; the owner kicks it again once the goodbye is due.
	GoodbyeDue() bool
	// Goodbye ends a closing connection: the writer goroutine calls it once,
	// as the connection's writer (with FinishFrame, WriteMessage, Pop,
	// WriteClose), then closes the socket and ends for good (Done).
	Goodbye()
	// WriteFailed is told of a write that failed (a *net.Error whose Timeout
	// is true: the peer did not read for WriteTimeout). The owner starts
	// closing the connection (BeginClose, if it had not); the writer then
	// drops what it holds, gives its bytes back, closes the socket and ends
	// for good (Done).
	WriteFailed(err error)
	// InlineBlocked is told when an inline write (KickInline) left frames to
	// the writer goroutine: the socket's buffer was full.
	InlineBlocked()
}

// Writer is the writing half of a connection: its queue of messages, and
// its one writer, which runs only while something is due (see Kick). An
// idle Writer holds no goroutine, no buffer and no timer; it is meant to be
// held by value in its owner's connection (Init), and passed the owner on
// every call that may write, so that it keeps no pointer to it. See the
// package doc for its promises.
type Writer struct {
	ws *Conn
	q  queue
	// wake counts the kicks the writer has not answered yet; writerEnded
	// once it has said goodbye (done is closed then).
	wake     atomic.Int64
	pongData atomic.Pointer[string] // the payload of the latest ping to answer
	// closeReply is the close frame the reading ended with (the peer's, or
	// the transport's refusal of a frame): the goodbye answers it.
	closeReply atomic.Pointer[CloseError]
	// done is made by BeginClose: an open connection holds none. It closes
	// once the writer has ended for good, which happens only once the
	// connection is closing, so whoever waits on it has seen the owner's
	// close, and it made.
	done chan struct{}
	// wdl is the write deadline writeDue last set on the socket (unix
	// nanoseconds), 0 when unknown (control writes set their own); writer
	// only. See batchDeadline.
	wdl int64
	// rest is what an inline write left unwritten of its frames (the socket's
	// buffer was full), and restN the queue bytes those frames hold until it
	// is written: the writer goroutine writes it before anything else (see
	// KickInline). Writer only.
	rest    []byte
	restN   int
	pingDue atomic.Bool // a ping is asked for (PingSoon)
}

// writerEnded is wake once the writer has ended for good: no kick reaches 1
// from there, so no writer starts again.
const writerEnded = math.MinInt64 / 2

// Init readies w to write to ws the messages queued with it, at most maxMsgs
// at a time, their bytes charged to mem until written. No writer runs before
// Start: w holds one kick that Start answers.
func (w *Writer) Init(ws *Conn, maxMsgs int, mem *Budget) {
	w.ws = ws
	w.q.init(maxMsgs, mem)
	w.wake.Store(1)
}

// Conn is the connection w writes to.
func (w *Writer) Conn() *Conn { return w.ws }

// Start starts the first writer, which writes what was queued since Init.
func (w *Writer) Start(o Owner) { go w.loop(o) }

// Kick makes sure a writer runs to write what is due (queued messages, a
// ping, a pong, the goodbye): it starts one when none runs. It never blocks. A
// writer answers every kick that came before it found nothing more to do, so
// no kick is lost and at most one writer runs at a time.
func (w *Writer) Kick(o Owner) {
	if w.wake.Add(1) == 1 {
		go w.loop(o)
	}
}

// KickInline is Kick for a caller that must never block (the relay's live
// fan-out): when no writer runs, the caller writes what is due itself with
// non-blocking writes (writeDueNow) and starts a writer goroutine only for
// what would block. When a writer runs, it will write the message, as with
// Kick.
//
// The fan-out delivers a note to thousands of connections, and a writer
// goroutine started for each of them cost the relay about a sixth of its
// fan-out CPU (starting it, growing its stack to the depth of a socket write,
// ending it) on top of the write itself. KickInline makes the caller the
// connection's writer for as long as the socket takes the frames without
// blocking. The promises hold: one writer at a time (the wake count), frames
// in queue order, a frame never interleaved with another (what the socket
// did not take, rest, is written first by the next writer), and the queue's
// bytes stay charged to the budget until written.
func (w *Writer) KickInline(o Owner) {
	if w.wake.Add(1) == 1 {
		w.answerKicks(o, writeCopyBytes, true)
	}
}

// KickHere is KickInline for a query that has queued its whole answer:
// when no writer runs, the caller writes what is due itself with
// non-blocking writes of up to 64 KiB of frames each (as the writer
// goroutine batches them, copied into one buffer), and starts a writer
// goroutine only for what would block. When a writer runs, it will write
// the messages, as with Kick.
//
// A query's answer so leaves in one write(2) made by the goroutine that
// queued it, without a writer goroutine started (its stack grown to a
// socket write's depth) and scheduled between the answer and the socket;
// and the query never waits for the socket (a client that does not read
// holds no query slot for it). The promises are KickInline's.
func (w *Writer) KickHere(o Owner) {
	if w.wake.Add(1) == 1 {
		w.answerKicks(o, writeBatchBytes, false)
	}
}

// Active reports whether a writer runs or is due (a kick not answered yet).
func (w *Writer) Active() bool { return w.wake.Load() > 0 }

// PingSoon asks the writer for a ping.
func (w *Writer) PingSoon(o Owner) {
	w.pingDue.Store(true)
	w.Kick(o)
}

// AnswerPing has the writer answer a ping with payload (only the latest
// ping is answered, RFC 6455 5.5.3).
func (w *Writer) AnswerPing(o Owner, payload []byte) {
	data := string(payload)
	w.pongData.Store(&data)
	w.Kick(o)
}

// SetCloseReply keeps the close frame the reading ended with, for the
// goodbye to answer (CloseReply).
func (w *Writer) SetCloseReply(ce *CloseError) { w.closeReply.Store(ce) }

// CloseReply is the close frame the reading ended with, nil if none.
func (w *Writer) CloseReply() *CloseError { return w.closeReply.Load() }

// BeginClose makes Done's channel; the owner calls it once, when the
// connection starts closing, before the writer can see it closing
// (GoodbyeDue) and within WriteFailed.
func (w *Writer) BeginClose() { w.done = make(chan struct{}) }

// Done is closed once the writer has ended for good (after BeginClose).
func (w *Writer) Done() <-chan struct{} { return w.done }

// Push queues msg unless that would exceed the queue's number of messages
// (ConnFull) or the budget (ConnFull, RelayFull); it never blocks. A message
// into an empty queue is taken whatever its size, within the parent budget.
// The caller kicks the writer (Kick, KickInline) when it is taken.
func (w *Writer) Push(msg Msg) TakeResult { return w.q.tryPush(msg) }

// PushBulk is Push within three quarters of either limit, leaving the rest
// to Push. When it refuses msg it returns a channel that is closed at the
// writer's next pop (or bytes given back as written): the caller retries
// then, and no wake-up is ever missed.
func (w *Writer) PushBulk(msg Msg) (TakeResult, <-chan struct{}) { return w.q.tryPushBulk(msg) }

// Pop takes the oldest queued message and gives its bytes back (the goodbye
// drains the queue with it); false when the queue is empty.
func (w *Writer) Pop() (Msg, bool) { return w.q.pop() }

// Queued returns the number of queued messages and their total length.
func (w *Writer) Queued() (msgs, bytes int) { return w.q.size() }

// Clear drops every queued message and gives their bytes back: the
// connection is closing and will send none of them.
func (w *Writer) Clear() { w.q.clear() }

// loop is the writer goroutine, the only writer to the socket while it runs;
// it runs while something is due and ends when nothing is (see Kick). It
// sends the queued messages in order, as many frames per write as are queued
// (up to writeBatchBytes): one syscall for a burst of query results instead
// of one per message. It sends the pings asked for (also while the queue
// never empties, so that a peer that only listens keeps answering) and
// answers pings, and when the connection closes it has the owner say
// goodbye, closes the socket and ends for good (Done).
func (w *Writer) loop(o Owner) { w.answerKicks(o, 0, false) }

// writeOutcome is what a writer's turn (writeDue, writeDueNow) ended with.
type writeOutcome int

const (
	wroteAll   writeOutcome = iota // nothing more is due
	wouldBlock                     // something due needs the writer goroutine
	writerGone                     // the writer ended for good: the connection closed, or a write failed
	wroteBatch                     // (writeStep) a batch was written; more may be due
)

// answerKicks writes (writeDueNow when inline > 0, batches of up to inline
// bytes, else writeDue), as the connection's writer, until it has answered
// every kick that came before it found nothing more to do (wroteAll and no
// kick since), or hands the writer's part to a new writer goroutine
// (wouldBlock), or the writer has ended for good (writerGone). live says an
// inline write is the live fan-out's (Owner.InlineBlocked).
func (w *Writer) answerKicks(o Owner, inline int, live bool) {
	for {
		k := w.wake.Load()
		var out writeOutcome
		if inline > 0 {
			out = w.writeDueNow(o, inline, live)
		} else {
			out = w.writeDue(o)
		}
		switch out {
		case wouldBlock:
			go w.loop(o) // (the kicks held here are its to answer)
			return
		case writerGone:
			w.wake.Store(writerEnded)
			close(w.done)
			return
		}
		if w.wake.Add(-k) == 0 {
			return
		}
	}
}

// batchPool holds the writers' batch buffers (*[]Msg), so that an idle
// connection holds none.
var batchPool sync.Pool

// getBatch returns a batch buffer from batchPool (nil when it has none).
func getBatch() []Msg {
	if b := batchPool.Get(); b != nil {
		return *(b.(*[]Msg))
	}
	return nil
}

// putBatch gives a batch buffer back, cleared: it must not pin the messages.
func putBatch(batch []Msg) {
	clear(batch)
	batch = batch[:0]
	batchPool.Put(&batch)
}

// writeDue writes what is due until nothing is (wroteAll), or until the
// writer has ended for good (writerGone).
func (w *Writer) writeDue(o Owner) writeOutcome {
	batch := getBatch()
	defer func() { putBatch(batch) }()
	for {
		if out := w.writeStep(o, &batch); out != wroteBatch {
			return out
		}
	}
}

// writeStep writes the next thing due: the goodbye (writerGone), or what an
// inline write left, a pong, a ping and a batch of queued messages
// (wroteBatch); wroteAll when no message was queued. batch is the batch
// buffer, handed back cleared.
func (w *Writer) writeStep(o Owner, batch *[]Msg) writeOutcome {
	if o.GoodbyeDue() {
		o.Goodbye()
		_ = w.ws.Close()
		return writerGone
	}
	if w.rest != nil { // (before any frame: it ends one)
		if err := w.writeRest(w.batchDeadline(o.WriteTimeout())); err != nil {
			w.failed(o, err)
			return writerGone
		}
	}
	if data := w.pongData.Swap(nil); data != nil && !w.control(o, OpPong, []byte(*data)) {
		return writerGone
	}
	if w.pingDue.Swap(false) && !w.control(o, OpPing, nil) {
		return writerGone
	}
	msgs, n := w.q.popBatch(*batch, writeBatchBytes)
	if len(msgs) == 0 {
		return wroteAll
	}
	err := w.writeBatch(msgs, w.batchDeadline(o.WriteTimeout()))
	clear(msgs)
	*batch = msgs[:0]
	w.q.sent(n)
	if err != nil {
		w.failed(o, err)
		return writerGone
	}
	return wroteBatch
}

// batchDeadline returns the write deadline writeBatch must set for a batch
// written now: now + wt (the write timeout), or the zero Time when the
// deadline already on the socket is less than a quarter of wt short of it.
// Setting a deadline moves a runtime timer (11% of the relay's CPU fanning a
// note out to 9,000 connections, one write each), so a connection written to
// often sets it about once per quarter wt. The promise stays: a write that
// cannot complete within wt fails (it may fail after three quarters of it),
// and the peer is dropped as too slow.
func (w *Writer) batchDeadline(wt time.Duration) time.Time {
	want := time.Now().Add(wt)
	if w.wdl != 0 && want.UnixNano()-w.wdl < int64(wt/4) {
		return time.Time{}
	}
	w.wdl = want.UnixNano()
	return want
}

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
// written (queue.popBatch).
const writeBatchBytes = 64 << 10

// writeBatch writes msgs as unfragmented, unmasked text frames (RFC 6455 5.2;
// compressed with permessage-deflate when negotiated) with one vectored write
// to the socket: a writer of a syscall per message would make one per
// message; the socket is written by the writer alone, control frames
// included, so frames never interleave. A zero deadline leaves the socket's
// write deadline as it is (batchDeadline).
func (w *Writer) writeBatch(msgs []Msg, deadline time.Time) error {
	c := w.ws
	if !deadline.IsZero() {
		if err := c.SetWriteDeadline(deadline); err != nil {
			return err
		}
	}
	fb := framePool.Get().(*frameBuf)
	defer framePool.Put(fb)
	// A small batch (a live event, an EOSE) is copied into one buffer and
	// written with write(2): a vectored write makes the socket keep an iovec
	// array for good (internal/poll caches it per descriptor).
	small := framesSize(msgs)
	if small <= writeCopyBytes || w.ws.Deflating() {
		if cap(fb.hdrs) < small {
			fb.hdrs = make([]byte, 0, small)
		}
		return c.write(w.appendFrames(fb.hdrs[:0], msgs))
	}
	// Each message is two pieces: its frame header with its Head (and the
	// "]" that closes the message before it), copied into hdrs, then its
	// Body. hdrs is sized first: the pieces point into it.
	need := 1
	for _, m := range msgs {
		need += maxServerFrameHeader + len(m.Head) + 1
	}
	if cap(fb.hdrs) < need {
		fb.hdrs = make([]byte, 0, need)
	}
	hdrs, bufs := fb.hdrs[:0], fb.bufs[:0]
	closing := false // the last message had a Head: its "]" is due
	for _, m := range msgs {
		start := len(hdrs)
		if closing {
			hdrs = append(hdrs, ']')
		}
		hdrs = appendTextHeader(hdrs, m.Size())
		hdrs = append(hdrs, m.Head...)
		bufs = append(bufs, hdrs[start:len(hdrs):len(hdrs)], m.Body)
		closing = m.Head != nil
	}
	if closing {
		start := len(hdrs)
		hdrs = append(hdrs, ']')
		bufs = append(bufs, hdrs[start:len(hdrs):len(hdrs)])
	}
	fb.bufs = bufs
	v := bufs // (the write consumes it)
	var err error
	if c.nc != nil {
		_, err = v.WriteTo(c.nc)
	} else {
		err = c.writeBuffers(v)
	}
	clear(bufs) // (the frame buffer must not pin the messages)
	return err
}

// writeCopyBytes bounds the batches writeBatch copies into one buffer.
const writeCopyBytes = 4 << 10

// framesSize bounds the length of msgs as frames (appendFrames).
func framesSize(msgs []Msg) int {
	n := 0
	for _, m := range msgs {
		n += maxServerFrameHeader + m.Size()
	}
	return n
}

// appendFrames appends msgs to b as unfragmented, unmasked text frames, each
// message whole (Head, Body, "]"); with permessage-deflate negotiated each
// through AppendText (compressed when long enough).
func (w *Writer) appendFrames(b []byte, msgs []Msg) []byte {
	if !w.ws.Deflating() {
		for _, m := range msgs {
			b = appendTextHeader(b, m.Size())
			b = append(b, m.Head...)
			b = append(b, m.Body...)
			if m.Head != nil {
				b = append(b, ']')
			}
		}
		return b
	}
	for _, m := range msgs {
		var tail []byte
		if m.Head != nil {
			tail = msgTail
		}
		b = w.ws.AppendText(b, m.Head, m.Body, tail)
	}
	return b
}

// msgTail closes a message with a Head (Msg).
var msgTail = []byte("]")

// appendTextHeader appends the header of a final, unmasked text frame of n
// payload bytes.
func appendTextHeader(b []byte, n int) []byte { return AppendFrameHeader(b, OpText, n) }

// control writes a control frame (a ping or a pong) within the write timeout;
// when that fails it closes the connection and reports false.
func (w *Writer) control(o Owner, op byte, payload []byte) bool {
	w.wdl = 0 // WriteControl sets the socket's deadline
	if err := w.ws.WriteControl(op, payload, time.Now().Add(o.WriteTimeout())); err != nil {
		w.failed(o, err)
		return false
	}
	return true
}

// failed ends the writer after a failed write: the owner is told (and starts
// closing), what w holds is dropped and its bytes given back, and the socket
// is closed.
func (w *Writer) failed(o Owner, err error) {
	o.WriteFailed(err)
	w.DropFrame()
	w.q.clear()
	_ = w.ws.Close()
}

// WriteMessage writes msg as one text frame within deadline (zero: the
// socket's deadline as it is). The caller is the connection's writer (the
// goodbye).
func (w *Writer) WriteMessage(msg []byte, deadline time.Time) error {
	w.wdl = 0
	return w.ws.WriteMessage(msg, deadline)
}

// WriteClose writes a close frame of code and text within deadline. The
// caller is the connection's writer (the goodbye).
func (w *Writer) WriteClose(code int, text string, deadline time.Time) error {
	w.wdl = 0
	return w.ws.WriteControl(OpClose, ClosePayload(code, text), deadline)
}

// writeDueNow writes the queued messages with non-blocking writes until none
// is queued (wroteAll). It leaves to the writer goroutine (wouldBlock) what
// could block or is rare: a closing connection's goodbye, a ping or a pong,
// and the unwritten tail of frames the socket did not take whole (rest).
func (w *Writer) writeDueNow(o Owner, maxBytes int, live bool) writeOutcome {
	batch := getBatch()
	defer func() { putBatch(batch) }()
	for {
		if o.Closing() || w.rest != nil || w.pongData.Load() != nil || w.pingDue.Load() {
			return wouldBlock
		}
		msgs, n := w.q.popBatch(batch, maxBytes)
		if len(msgs) == 0 {
			return wroteAll
		}
		out := w.writeFramesNow(o, msgs, n, live)
		clear(msgs)
		batch = msgs[:0]
		if out != wroteAll {
			return out
		}
	}
}

// writeFramesNow writes msgs, n bytes of the queue, as frames with one
// non-blocking write. What the socket does not take becomes rest (wouldBlock);
// the bytes go back to the queue's budget once written.
func (w *Writer) writeFramesNow(o Owner, msgs []Msg, n int, live bool) writeOutcome {
	fb := framePool.Get().(*frameBuf)
	defer framePool.Put(fb)
	size := framesSize(msgs)
	b := fb.hdrs[:0]
	if size > writeBatchBytes+maxServerFrameHeader { // (one large message: not kept in the pool)
		b = make([]byte, 0, size)
	} else if cap(b) < size {
		b = make([]byte, 0, max(size, writeCopyBytes))
		fb.hdrs = b
	}
	b = w.appendFrames(b, msgs)
	wrote, err := w.writeNow(o, fb, b)
	if err != nil {
		w.q.sent(n)
		w.failed(o, err)
		return writerGone
	}
	if wrote < len(b) {
		if live {
			o.InlineBlocked()
		}
		w.rest, w.restN = append([]byte(nil), b[wrote:]...), n
		return wouldBlock
	}
	w.q.sent(n)
	return wroteAll
}

// writeNow writes b to the socket without waiting for room: it returns how
// much the socket took (possibly nothing), and an error only when the
// connection failed. A bare descriptor is written with write(2) at once (no
// deadline is involved). A net.Conn socket (where there is no epoll) is
// written through its RawConn: one whose write deadline has passed gets a
// new one first, and fb lends its callback (frameBuf.writeFD), so that a
// write allocates nothing but the socket's RawConn.
func (w *Writer) writeNow(o Owner, fb *frameBuf, b []byte) (int, error) {
	nc := w.ws.nc
	if nc == nil { // a bare descriptor: no deadline to mind
		return w.ws.writeNowFD(b)
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, nil // (not a socket: the writer goroutine writes it)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	if fb.writeFD == nil {
		fb.writeFD = fb.write
	}
	defer func() { fb.out = nil }() // (the pool must not pin the frames)
	for try := 0; ; try++ {
		fb.out, fb.n, fb.err = b, 0, nil
		err = rc.Write(fb.writeFD)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && try == 0:
			// The deadline the writer goroutine last set has passed: the
			// connection was idle. Set a new one and try again.
			d := time.Now().Add(o.WriteTimeout())
			if err := nc.SetWriteDeadline(d); err != nil {
				return 0, err
			}
			w.wdl = d.UnixNano()
			continue
		case err != nil:
			return 0, err
		case fb.err == syscall.EAGAIN:
			return 0, nil
		case fb.err != nil:
			return 0, os.NewSyscallError("write", fb.err)
		}
		return fb.n, nil
	}
}

// write is frameBuf's callback for syscall.RawConn.Write: one write(2) of
// out, never waiting for room (it reports done whatever happened).
func (fb *frameBuf) write(fd uintptr) bool {
	for {
		fb.n, fb.err = syscall.Write(int(fd), fb.out)
		if fb.err != syscall.EINTR {
			return true
		}
	}
}

// Unfinished reports whether an inline write left part of a frame unwritten
// (see KickInline): the goodbye finishes it (FinishFrame) or drops it with
// the socket (DropFrame), so that a frame of ours never follows half of
// another.
func (w *Writer) Unfinished() bool { return w.rest != nil }

// FinishFrame writes what an inline write left unwritten, if anything,
// within deadline (zero: the socket's), and gives its bytes back to the
// budget. The caller is the connection's writer (the goodbye).
func (w *Writer) FinishFrame(deadline time.Time) error {
	if w.rest == nil {
		return nil
	}
	return w.writeRest(deadline)
}

// writeRest writes rest (see KickInline) within deadline (zero: the socket's)
// and gives its bytes back to the queue's budget.
func (w *Writer) writeRest(deadline time.Time) error {
	var err error
	if !deadline.IsZero() {
		err = w.ws.SetWriteDeadline(deadline)
	}
	if err == nil {
		err = w.ws.write(w.rest)
	}
	w.DropFrame()
	return err
}

// DropFrame forgets what an inline write left unwritten (the connection is
// closing) and gives its bytes back.
func (w *Writer) DropFrame() {
	if w.rest == nil {
		return
	}
	w.q.sent(w.restN)
	w.rest, w.restN = nil, 0
}
