package relay

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// The live fan-out writes inline: it delivers a note to thousands of
// connections, and a writer goroutine started for each of them (kick) cost
// the relay about a sixth of its fan-out CPU (starting it, growing its stack
// to the depth of a socket write, ending it) on top of the write itself.
// kickInline makes the fan-out's goroutine the connection's writer for as
// long as the socket takes the frames without blocking, and hands over to a
// writer goroutine only when it would block. The promises of conn hold: one
// writer at a time (the wake count), frames in queue order, a frame never
// interleaved with another (what the socket did not take, rest, is written
// first by the next writer), and the queue's bytes stay taken from the
// budget until written.

// kickInline is kick for a caller that must never block (the live fan-out):
// when no writer runs, the caller writes what is due itself with non-blocking
// writes (writeDueNow) and starts a writer goroutine only for what would
// block. When a writer runs, it will write the message, as with kick.
func (c *conn) kickInline() {
	if c.wake.Add(1) == 1 {
		c.answerKicks(c.writeDueNow)
	}
}

// writeDueNow writes the queued messages with non-blocking writes until none
// is queued (wroteAll). It leaves to the writer goroutine (wouldBlock) what
// could block or is rare: a closing connection's goodbye, a ping or a pong,
// and the unwritten tail of frames the socket did not take whole (rest).
func (c *conn) writeDueNow() writeOutcome {
	batch := getBatch()
	defer func() { putBatch(batch) }()
	for {
		if c.closing() || c.rest != nil || c.pongData.Load() != nil || c.pingDue.Load() {
			return wouldBlock
		}
		msgs, n := c.send.popBatch(batch, writeCopyBytes)
		if len(msgs) == 0 {
			return wroteAll
		}
		out := c.writeFramesNow(msgs, n)
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
func (c *conn) writeFramesNow(msgs []outMsg, n int) writeOutcome {
	fb := framePool.Get().(*frameBuf)
	defer framePool.Put(fb)
	size := framesSize(msgs)
	b := fb.hdrs[:0]
	if size > writeCopyBytes { // (one large message: not kept in the pool)
		b = make([]byte, 0, size)
	} else if cap(b) < size {
		b = make([]byte, 0, writeCopyBytes)
		fb.hdrs = b
	}
	b = c.appendFrames(b, msgs)
	wrote, err := c.writeNow(fb, b)
	if err != nil {
		c.send.sent(n)
		c.writeFailed(err)
		return writerGone
	}
	if wrote < len(b) {
		c.r.m.liveWriteBlocked.Inc()
		c.rest, c.restN = append([]byte(nil), b[wrote:]...), n
		return wouldBlock
	}
	c.send.sent(n)
	return wroteAll
}

// writeNow writes b to the socket without waiting for room: it returns how
// much the socket took (possibly nothing), and an error only when the
// connection failed. A socket whose write deadline has passed gets a new one
// first. fb lends its callback (frameBuf.writeFD), so that a write allocates
// nothing but the socket's RawConn.
func (c *conn) writeNow(fb *frameBuf, b []byte) (int, error) {
	nc := c.ws.UnderlyingConn()
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
			d := time.Now().Add(c.r.cfg.WriteTimeout)
			if err := nc.SetWriteDeadline(d); err != nil {
				return 0, err
			}
			c.wdl = d.UnixNano()
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

// writeRest writes rest (see kickInline) within deadline (zero: the socket's)
// and gives its bytes back to the queue's budget.
func (c *conn) writeRest(deadline time.Time) error {
	nc := c.ws.UnderlyingConn()
	var err error
	if !deadline.IsZero() {
		err = nc.SetWriteDeadline(deadline)
	}
	if err == nil {
		_, err = nc.Write(c.rest)
	}
	c.dropRest()
	return err
}

// dropRest forgets rest (the connection is closing) and gives its bytes back.
func (c *conn) dropRest() {
	if c.rest == nil {
		return
	}
	c.send.sent(c.restN)
	c.rest, c.restN = nil, 0
}
