//go:build linux && (amd64 || arm64)

package wsconn

import (
	"sync"
	"syscall"
)

const pollerAvailable = true

// poller is the one epoll instance every socket Conn is registered with
// (level-triggered, one-shot: an event disarms the socket until its turn
// has ended, so one goroutine at a time reads a connection). One goroutine
// waits on it; for each readable socket it starts a turn on a new goroutine
// (Conn.readable), which reads, hands the frames over, re-arms and ends.
// Go's own poller keeps the socket too, for writes and their deadlines.
type poller struct {
	epfd int

	mu    sync.RWMutex
	conns []*Conn // by descriptor
	seq   uint32
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
	var err error
	cerr := c.raw.Control(func(fd uintptr) {
		p.mu.Lock()
		if int(fd) >= len(p.conns) {
			grown := make([]*Conn, max(int(fd)+1, 2*len(p.conns), 1024))
			copy(grown, p.conns)
			p.conns = grown
		}
		p.seq++
		c.fd, c.seq = int32(fd), p.seq
		p.conns[fd] = c
		p.mu.Unlock()
		ev := syscall.EpollEvent{Events: pollEvents, Fd: int32(fd), Pad: int32(c.seq)}
		err = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		if err != nil {
			p.forget(c)
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// rearm arms c's socket again after its turn (nothing when it is closed).
func (p *poller) rearm(c *Conn) {
	_ = c.raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: pollEvents, Fd: int32(fd), Pad: int32(c.seq)}
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
	})
}

// remove unregisters c (its socket is not closed yet, or closed: then the
// kernel has dropped the registration with it).
func (p *poller) remove(c *Conn) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
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
