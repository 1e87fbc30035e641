package wsconn

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Handler is what a connection hands its peer's frames to. Its methods run
// one at a time, in the order the frames came, on a goroutine the transport
// starts when the socket is readable (see Conn); they may block, which holds
// up this connection's reading only. The slices are the transport's: valid
// during the call only.
type Handler interface {
	// OnMessage is a complete data message (text or binary).
	OnMessage(data []byte)
	// OnPing is a ping: the handler has its writer answer it (WriteControl
	// with OpPong and the payload; only the latest one needs an answer).
	OnPing(payload []byte)
	// OnPong is a pong.
	OnPong()
	// OnEnd runs once, after the last of the other calls, when the reading
	// ends: the peer's close frame or the transport's refusal (*CloseError:
	// the handler's writer answers it with a close frame, the peer's code or
	// the refusal's), the peer leaving (io.EOF), a failed read, or Close
	// (net.ErrClosed). The socket is still open unless Close was called: the
	// handler closes it once its writer is done.
	OnEnd(err error)
}

// Conn is one WebSocket connection after the handshake. While the peer says
// nothing it holds its socket, this struct and nothing else: no goroutine, no
// buffer (see poller). Reading is the transport's; writing is the caller's,
// one writer at a time (see the package doc).
//
// A TCP (or Unix) socket is held as a bare descriptor (fd; nc is nil): New
// takes it out of Go's poller and lets the net.Conn go, so that the socket
// costs no net.netFD, no addresses and no runtime pollDesc, and its readiness
// is watched by this package's epoll alone (see poller and writePoller).
// Every syscall on the descriptor holds a reference (refs), and it is closed
// once, when Close has been called and the last reference is let go: a
// descriptor number the kernel hands to another connection afterwards is
// never read from or written to for this one. Any other connection (a
// net.Pipe in tests, any connection where there is no epoll) is kept as nc
// and read by a goroutine of its own.
type Conn struct {
	nc net.Conn // nil: a bare descriptor (fd)
	h  Handler
	p  Parser
	// pending is the start of a frame the socket has not delivered whole
	// yet; nil when none.
	pending  []byte
	lastRead atomic.Int64 // unix nanoseconds of the last frame read whole
	// wdl is a bare descriptor's write deadline (unix nanoseconds, 0: none),
	// which a write waiting for room keeps to (SetWriteDeadline).
	wdl   atomic.Int64
	state atomic.Uint32
	refs  atomic.Uint32 // a bare descriptor's references, and fdClosing
	fd    int32         // the bare descriptor, -1 with nc
	seq   uint32        // the connection's number (see poller)
	defl  *deflater
}

// state bits.
const (
	stBusy     = 1 << iota // a goroutine reads the connection
	stClosed               // Close was called or the reading ended
	stEnded                // OnEnd has run or is running
	stHandling             // the handler has frames (see Idle)
)

// New wraps nc, a connection whose handshake is done (Upgrade) and of which
// nothing has been read since. A TCP or Unix socket (with epoll) is taken
// over as a bare descriptor: nc is closed, and the caller must not use it
// any more (NetConn gives a net.Conn on a duplicate of the descriptor).
func New(nc net.Conn) *Conn {
	c := &Conn{nc: nc, fd: -1, seq: connSeq.Add(1)}
	if pollerAvailable {
		if fd, ok := detach(nc); ok {
			c.nc, c.fd = nil, fd
		}
	}
	return c
}

// connSeq numbers the connections (Conn.seq): an event the kernel reports
// for a descriptor number is taken for the connection registered under it
// only if the numbers agree.
var connSeq atomic.Uint32

// fdClosing is the bit of Conn.refs that Close sets: no reference is taken
// after it, and the last one let go closes the descriptor.
const fdClosing = 1 << 31

// acquire takes a reference to the bare descriptor for a syscall; false once
// Close has been called (the descriptor is or will be closed: the number may
// be another connection's).
func (c *Conn) acquire() bool {
	for {
		r := c.refs.Load()
		if r&fdClosing != 0 {
			return false
		}
		if c.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release lets a reference go; the last one after Close closes the
// descriptor (once: only one release sees the count reach zero with the bit
// set).
func (c *Conn) release() {
	if c.refs.Add(^uint32(0)) == fdClosing {
		closeDescriptor(c.fd)
	}
}

// closeFD closes the bare descriptor (the first call; later ones report
// net.ErrClosed): it unregisters it from both epoll instances while it is
// still its own, wakes a writer waiting for room, and lets its reference go,
// which closes it unless a read or a write holds one (the last to let go
// then closes it).
func (c *Conn) closeFD() error {
	if !c.acquire() {
		return net.ErrClosed
	}
	for {
		r := c.refs.Load()
		if r&fdClosing != 0 {
			c.release()
			return net.ErrClosed
		}
		if c.refs.CompareAndSwap(r, r|fdClosing) {
			break
		}
	}
	thePoller().unregister(c)
	forgetWriter(c)
	c.release()
	return nil
}

// Options are a connection's reading limits and extensions.
type Options struct {
	// MaxMessage bounds a message (refused with 1009 beyond); zero: none.
	MaxMessage int64
}

// Serve starts reading: from now on h gets the peer's frames (see Handler)
// until OnEnd (also when the socket cannot be polled: OnEnd then has the
// error). It returns at once.
func (c *Conn) Serve(h Handler, o Options) {
	c.h = h
	c.p.MaxMessage = o.MaxMessage
	if c.defl != nil {
		c.p.Deflate, c.p.Inflate = true, c.defl.inflate(o.MaxMessage)
	}
	c.lastRead.Store(time.Now().UnixNano())
	if c.nc != nil {
		// (a read deadline the handshake set ends here: the owner's read
		// timeout looks at Idle)
		_ = c.nc.SetReadDeadline(time.Time{})
		c.state.Store(stBusy)
		go c.readBlocking()
		return
	}
	if err := thePoller().add(c); err != nil {
		c.state.Store(stClosed | stEnded)
		go h.OnEnd(err)
	}
}

// NetConn is the connection under the WebSocket. For a bare descriptor it is
// a new net.Conn on a duplicate of it (nil once closed), for tests and
// diagnostics (socket options, the peer's address): the caller closes it,
// and must neither read from nor write to it while the connection is open.
func (c *Conn) NetConn() net.Conn {
	if c.nc != nil {
		return c.nc
	}
	return c.dupConn()
}

// UnderlyingConn is NetConn.
func (c *Conn) UnderlyingConn() net.Conn { return c.NetConn() }

// Idle is how long the connection has been silent at now: since the end of
// the handler's last call for a frame read whole (or since Serve), zero while
// the handler has frames (a message that takes long to handle is not
// silence, as a read deadline set after each message was not).
func (c *Conn) Idle(now time.Time) time.Duration {
	if c.state.Load()&stHandling != 0 {
		return 0
	}
	return max(0, now.Sub(time.Unix(0, c.lastRead.Load())))
}

// Close closes the socket (from any goroutine, any number of times): a write
// in progress fails, and the reading ends (OnEnd, with net.ErrClosed, unless
// it had ended before).
func (c *Conn) Close() error {
	for {
		s := c.state.Load()
		if s&stClosed != 0 {
			return c.closeSocket()
		}
		if c.state.CompareAndSwap(s, s|stClosed) {
			break
		}
	}
	err := c.closeSocket()
	for {
		s := c.state.Load()
		if s&(stBusy|stEnded) != 0 {
			return err // the reader ends it
		}
		if c.state.CompareAndSwap(s, s|stEnded) {
			if c.h != nil {
				go c.h.OnEnd(net.ErrClosed)
			}
			return err
		}
	}
}

// closeSocket closes nc or the bare descriptor.
func (c *Conn) closeSocket() error {
	if c.nc != nil {
		return c.nc.Close()
	}
	return c.closeFD()
}

// SetWriteDeadline sets the socket's write deadline (zero: none): a write
// that cannot complete by then fails with a timeout (os.ErrDeadlineExceeded).
// A bare descriptor keeps it in the Conn, and only a write that waits for
// room looks at it: no timer runs while the socket takes what is written.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.nc != nil {
		return c.nc.SetWriteDeadline(t)
	}
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.wdl.Store(ns)
	return nil
}

// write writes b whole within the write deadline (SetWriteDeadline).
func (c *Conn) write(b []byte) error {
	if c.nc != nil {
		_, err := c.nc.Write(b)
		return err
	}
	return c.writeFD(b)
}

// WriteControl writes a control frame (payload at most 125 bytes) within
// deadline. The caller is the connection's one writer.
func (c *Conn) WriteControl(op byte, payload []byte, deadline time.Time) error {
	if len(payload) > maxControlPayload {
		return errors.New("wsconn: control payload too long")
	}
	var b [maxServerFrameHeader + maxControlPayload]byte
	f := append(AppendFrameHeader(b[:0], op, len(payload)), payload...)
	if err := c.SetWriteDeadline(deadline); err != nil {
		return err
	}
	return c.write(f)
}

// WriteMessage writes msg as one text frame within deadline (zero: the
// socket's deadline as it is). The caller is the connection's one writer.
func (c *Conn) WriteMessage(msg []byte, deadline time.Time) error {
	if !deadline.IsZero() {
		if err := c.SetWriteDeadline(deadline); err != nil {
			return err
		}
	}
	b := c.AppendText(make([]byte, 0, maxServerFrameHeader+len(msg)), nil, msg, nil)
	return c.write(b)
}

// sink adapts the connection to Parser's Sink.
type sink Conn

func (s *sink) Message(_ byte, data []byte) { s.h.OnMessage(data) }
func (s *sink) Ping(payload []byte)         { s.h.OnPing(payload) }
func (s *sink) Pong([]byte)                 { s.h.OnPong() }

// readBuf is one reading turn's buffer, pooled: an idle connection holds
// none.
type readBuf struct {
	b []byte
}

// readBufSize is a pooled read buffer's size; a frame longer than that is
// read into a buffer of its own.
const readBufSize = 8 << 10

var readPool = sync.Pool{New: func() any {
	return &readBuf{b: make([]byte, 0, readBufSize)}
}}

// errWouldBlock: the socket has nothing more to read now.
var errWouldBlock = errors.New("would block")

// readNow reads the bare descriptor into dst without waiting.
func (c *Conn) readNow(_ *readBuf, dst []byte) (int, error) {
	if !c.acquire() {
		return 0, net.ErrClosed
	}
	n, err := readFD(c.fd, dst)
	c.release()
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readsPerTurn bounds the reads of one turn: a peer that keeps sending is
// read again after the others the poller found ready.
const readsPerTurn = 16

// turn reads what the socket holds (up to readsPerTurn reads) and hands
// every complete frame to the handler; the start of an incomplete one is
// kept in pending. It returns the error that ends the reading, if any.
func (c *Conn) turn(read func(*readBuf, []byte) (int, error)) error {
	rb := readPool.Get().(*readBuf)
	buf := rb.b[:0]
	if c.pending != nil {
		buf = append(buf, c.pending...)
		c.pending = nil
	}
	var err error
	need := 0
	for range readsPerTurn {
		if need > cap(buf) || len(buf) == cap(buf) {
			nb := make([]byte, len(buf), max(need, 2*cap(buf)))
			copy(nb, buf)
			buf = nb
		}
		var n int
		n, err = read(rb, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 {
			c.setState(stHandling, true)
			k, nd, cerr := c.p.Parse(buf, (*sink)(c))
			c.setState(stHandling, false)
			if k > 0 {
				c.lastRead.Store(time.Now().UnixNano())
			}
			if cerr != nil {
				err = cerr
				break
			}
			need = nd
			buf = buf[:copy(buf, buf[k:])]
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, errWouldBlock) {
		err = nil
	}
	if err == nil && len(buf) > 0 {
		c.pending = append([]byte(nil), buf...)
	}
	if cap(buf) == readBufSize {
		rb.b = buf[:0]
	}
	readPool.Put(rb)
	return err
}

// setState sets or clears bit.
func (c *Conn) setState(bit uint32, on bool) {
	if on {
		c.state.Or(bit)
	} else {
		c.state.And(^bit)
	}
}

// readable is the turn the poller starts when the socket is readable (the
// connection is busy: claim).
func (c *Conn) readable() {
	if err := c.turn(c.readNow); err != nil {
		c.end(err)
		return
	}
	for {
		s := c.state.Load()
		if s&stClosed != 0 {
			if c.state.CompareAndSwap(s, (s|stEnded)&^stBusy) {
				c.finish(net.ErrClosed)
			}
			return
		}
		if c.state.CompareAndSwap(s, s&^stBusy) {
			// (after clearing busy: an event from the re-armed socket
			// finds the connection free)
			thePoller().rearm(c)
			return
		}
	}
}

// readBlocking reads a connection that is not a socket, with a goroutine of
// its own.
func (c *Conn) readBlocking() {
	read := func(_ *readBuf, dst []byte) (int, error) { return c.nc.Read(dst) }
	for {
		if err := c.turn(read); err != nil {
			c.end(err)
			return
		}
	}
}

// end ends the reading with err (the connection is busy: no one else ends it).
func (c *Conn) end(err error) {
	for {
		s := c.state.Load()
		if c.state.CompareAndSwap(s, (s|stClosed|stEnded)&^stBusy) {
			break
		}
	}
	c.finish(err)
}

// finish forgets the connection's registration and runs OnEnd.
func (c *Conn) finish(err error) {
	if c.nc == nil {
		thePoller().remove(c)
	}
	c.pending = nil
	c.p.msg, c.p.msgOp = nil, 0
	c.h.OnEnd(err)
}
