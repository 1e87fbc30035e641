//go:build linux && (amd64 || arm64)

package wsconn

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const pollerAvailable = true

// poller is the one epoll instance every bare descriptor is registered with
// for reading (level-triggered, one-shot: an event disarms the socket until
// its turn has ended, so one goroutine at a time reads a connection). One
// goroutine waits on it; for each readable socket it starts a turn on a new
// goroutine (Conn.readable), which reads, hands the frames over, re-arms and
// ends. Go's own poller does not know the socket (New took it out); a writer
// that waits for room waits in writePoller.
type poller struct {
	epfd int

	mu    sync.RWMutex
	conns []*Conn // by descriptor
}

var (
	pollOnce sync.Once
	thePoll  *poller
)

func thePoller() *poller {
	pollOnce.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			panic("wsconn: epoll_create1: " + err.Error())
		}
		thePoll = &poller{epfd: fd}
		go thePoll.run()
	})
	return thePoll
}

const pollEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

// add registers c; its socket is armed.
func (p *poller) add(c *Conn) error {
	if !c.acquire() {
		return net.ErrClosed
	}
	defer c.release()
	fd := int(c.fd)
	p.mu.Lock()
	if fd >= len(p.conns) {
		grown := make([]*Conn, max(fd+1, 2*len(p.conns), 1024))
		copy(grown, p.conns)
		p.conns = grown
	}
	p.conns[fd] = c
	p.mu.Unlock()
	ev := syscall.EpollEvent{Events: pollEvents, Fd: int32(fd), Pad: int32(c.seq)}
	err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &ev)
	if err != nil {
		p.forget(c)
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// rearm arms c's socket again after its turn (nothing when it is closed).
func (p *poller) rearm(c *Conn) {
	if !c.acquire() {
		return
	}
	ev := syscall.EpollEvent{Events: pollEvents, Fd: c.fd, Pad: int32(c.seq)}
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(c.fd), &ev)
	c.release()
}

// remove unregisters c (its descriptor still open, or closed: then Close
// has unregistered it).
func (p *poller) remove(c *Conn) {
	if c.acquire() {
		p.unregister(c)
		c.release()
		return
	}
	p.forget(c)
}

// unregister removes c's registration; the caller holds a reference (the
// descriptor is c's).
func (p *poller) unregister(c *Conn) {
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(c.fd), nil)
	p.forget(c)
}

func (p *poller) forget(c *Conn) {
	p.mu.Lock()
	if int(c.fd) < len(p.conns) && p.conns[c.fd] == c {
		p.conns[c.fd] = nil
	}
	p.mu.Unlock()
}

// run waits for readable sockets and starts their turns.
func (p *poller) run() {
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			panic("wsconn: epoll_wait: " + err.Error())
		}
		p.mu.RLock()
		for i := range n {
			ev := &events[i]
			if int(ev.Fd) >= len(p.conns) {
				continue
			}
			c := p.conns[ev.Fd]
			if c != nil && c.seq == uint32(ev.Pad) && c.claim() {
				go c.readable()
			}
		}
		p.mu.RUnlock()
	}
}

// claim makes c busy for a turn, unless it is busy or closed.
func (c *Conn) claim() bool { return c.state.CompareAndSwap(0, stBusy) }

// writePoller is the epoll instance a writer waits in when a bare
// descriptor's socket is full (EAGAIN): one-shot EPOLLOUT, registered at the
// connection's first wait and kept until Close. Its goroutine (started at
// the first wait in the process) wakes the waiting writer; a writer also
// wakes when Close is called, and at its write deadline (a timer of its
// own, only while it waits). A connection whose socket takes what is
// written never comes here.
type writePoller struct {
	epfd int

	mu    sync.Mutex
	slots []writeSlot // by descriptor
}

// writeSlot is a descriptor's registration: the connection, and the channel
// its waiting writer waits on (nil when none waits).
type writeSlot struct {
	c    *Conn
	wake chan struct{}
}

var (
	wpollOnce sync.Once
	theWPoll  atomic.Pointer[writePoller]
)

func theWritePoller() *writePoller {
	wpollOnce.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			panic("wsconn: epoll_create1: " + err.Error())
		}
		wp := &writePoller{epfd: fd}
		theWPoll.Store(wp)
		go wp.run()
	})
	return theWPoll.Load()
}

const writeEvents = syscall.EPOLLOUT | syscall.EPOLLONESHOT

// arm registers (or re-arms) c for one EPOLLOUT, to close wake; the caller
// holds a reference. It fails once Close has been called: Close's
// forgetWriter, under the same lock, then either came before (and this sees
// fdClosing) or comes after (and closes wake).
func (wp *writePoller) arm(c *Conn, wake chan struct{}) error {
	fd := int(c.fd)
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if c.refs.Load()&fdClosing != 0 {
		return net.ErrClosed
	}
	if fd >= len(wp.slots) {
		grown := make([]writeSlot, max(fd+1, 2*len(wp.slots), 64))
		copy(grown, wp.slots)
		wp.slots = grown
	}
	ev := syscall.EpollEvent{Events: writeEvents, Fd: int32(fd), Pad: int32(c.seq)}
	op := syscall.EPOLL_CTL_MOD
	if wp.slots[fd].c != c {
		op = syscall.EPOLL_CTL_ADD
	}
	if err := syscall.EpollCtl(wp.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	wp.slots[fd] = writeSlot{c: c, wake: wake}
	return nil
}

// forgetWriter unregisters c from the write poller, if it was registered, and
// wakes its waiting writer; Close calls it holding a reference, after
// setting fdClosing.
func forgetWriter(c *Conn) {
	wp := theWPoll.Load()
	if wp == nil {
		return
	}
	fd := int(c.fd)
	wp.mu.Lock()
	if fd < len(wp.slots) && wp.slots[fd].c == c {
		_ = syscall.EpollCtl(wp.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
		if w := wp.slots[fd].wake; w != nil {
			close(w)
		}
		wp.slots[fd] = writeSlot{}
	}
	wp.mu.Unlock()
}

// run wakes the writers whose sockets have room (or failed: EPOLLERR and
// EPOLLHUP come unasked, and the write then reports the error).
func (wp *writePoller) run() {
	events := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(wp.epfd, events, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			panic("wsconn: epoll_wait: " + err.Error())
		}
		wp.mu.Lock()
		for i := range n {
			ev := &events[i]
			if int(ev.Fd) >= len(wp.slots) {
				continue
			}
			s := &wp.slots[ev.Fd]
			if s.c != nil && s.c.seq == uint32(ev.Pad) && s.wake != nil {
				close(s.wake)
				s.wake = nil
			}
		}
		wp.mu.Unlock()
	}
}

// waitWritable waits until the bare descriptor's socket has room, the write
// deadline passes (a timeout, os.ErrDeadlineExceeded) or Close is called
// (net.ErrClosed).
func (c *Conn) waitWritable() error {
	var timeout <-chan time.Time
	if dl := c.wdl.Load(); dl != 0 {
		d := time.Duration(dl - time.Now().UnixNano())
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	if !c.acquire() {
		return net.ErrClosed
	}
	wake := make(chan struct{})
	err := theWritePoller().arm(c, wake)
	c.release()
	if err != nil {
		return err
	}
	select {
	case <-wake:
		if c.refs.Load()&fdClosing != 0 {
			return net.ErrClosed
		}
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

// readFD is one non-blocking read(2) of fd into dst (errWouldBlock: the
// socket has nothing now).
func readFD(fd int32, dst []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), dst)
		switch err {
		case nil:
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errWouldBlock
		}
		return 0, err
	}
}

// closeDescriptor closes fd.
func closeDescriptor(fd int32) { _ = syscall.Close(int(fd)) }

// writeError is a failed write's error, as net.Conn's Write reports it.
func writeError(err error) error {
	return &net.OpError{Op: "write", Net: "tcp", Err: err}
}

// writeNowFD is one non-blocking write(2) of b: how much the socket took
// (0 and a nil error when it is full).
func (c *Conn) writeNowFD(b []byte) (int, error) {
	if !c.acquire() {
		return 0, writeError(net.ErrClosed)
	}
	var n int
	var err error
	for {
		n, err = syscall.Write(int(c.fd), b)
		if err != syscall.EINTR {
			break
		}
	}
	c.release()
	switch {
	case err == syscall.EAGAIN:
		return 0, nil
	case err != nil:
		return 0, writeError(os.NewSyscallError("write", err))
	}
	return n, nil
}

// writeFD writes b whole to the bare descriptor, waiting for room within
// the write deadline.
func (c *Conn) writeFD(b []byte) error {
	for len(b) > 0 {
		n, err := c.writeNowFD(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if n == 0 {
			if err := c.waitWritable(); err != nil {
				return writeError(err)
			}
		}
	}
	return nil
}

// maxIovecs bounds the pieces of one writev(2) (IOV_MAX).
const maxIovecs = 1024

// iovPool holds writevFD's scratch space (*[]syscall.Iovec).
var iovPool = sync.Pool{New: func() any { return new([]syscall.Iovec) }}

// writeBuffers writes bufs whole to the bare descriptor with vectored writes,
// waiting for room within the write deadline. bufs is consumed.
func (c *Conn) writeBuffers(bufs net.Buffers) error {
	p := iovPool.Get().(*[]syscall.Iovec)
	var err error
	*p, err = c.writevFD(bufs, *p)
	iovPool.Put(p)
	return err
}

// writevFD is writeBuffers with iov as scratch space, returned (grown) for
// reuse.
func (c *Conn) writevFD(bufs [][]byte, iov []syscall.Iovec) ([]syscall.Iovec, error) {
	for {
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
		if len(bufs) == 0 {
			return iov, nil
		}
		iov = iov[:0]
		for _, b := range bufs {
			if len(iov) == maxIovecs {
				break
			}
			if len(b) > 0 {
				iov = append(iov, syscall.Iovec{Base: &b[0]})
				iov[len(iov)-1].SetLen(len(b))
			}
		}
		if !c.acquire() {
			return iov, writeError(net.ErrClosed)
		}
		var n uintptr
		var errno syscall.Errno
		for {
			n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, uintptr(c.fd),
				uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			if errno != syscall.EINTR {
				break
			}
		}
		c.release()
		clear(iov) // (the scratch space must not pin the pieces)
		switch {
		case errno == syscall.EAGAIN:
			if err := c.waitWritable(); err != nil {
				return iov, writeError(err)
			}
			continue
		case errno != 0:
			return iov, writeError(os.NewSyscallError("writev", errno))
		}
		for left := int(n); left > 0; {
			if k := len(bufs[0]); k <= left {
				left -= k
				bufs = bufs[1:]
			} else {
				bufs[0] = bufs[0][left:]
				left = 0
			}
		}
	}
}

// detach takes a TCP or Unix socket out of Go's poller: a duplicate of its
// descriptor (non-blocking, as the original, whose open file it shares)
// is kept, and nc is closed, which unregisters the original from Go's
// poller and frees its netFD and addresses. The socket stays open through
// the duplicate.
func detach(nc net.Conn) (int32, bool) {
	var raw syscall.RawConn
	var err error
	switch sc := nc.(type) {
	case *net.TCPConn:
		raw, err = sc.SyscallConn()
	case *net.UnixConn:
		raw, err = sc.SyscallConn()
	default:
		return -1, false
	}
	if err != nil {
		return -1, false
	}
	nfd, derr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { nfd, derr = dupCloexec(int(fd)) }); err != nil || derr != nil {
		return -1, false
	}
	_ = nc.Close()
	return int32(nfd), true
}

// dupCloexec duplicates fd (close-on-exec).
func dupCloexec(fd int) (int, error) {
	for {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, os.NewSyscallError("fcntl", errno)
		}
		return int(r), nil
	}
}

// dupConn is a net.Conn on a duplicate of the bare descriptor (NetConn), nil
// once it is closed.
func (c *Conn) dupConn() net.Conn {
	if !c.acquire() {
		return nil
	}
	nfd, err := dupCloexec(int(c.fd))
	c.release()
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(nfd), "wsconn")
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		return nil
	}
	return nc
}
