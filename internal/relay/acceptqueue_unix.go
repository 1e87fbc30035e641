//go:build unix

package relay

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeQueued accepts, without waiting, every connection in ln's accept queue
// (a TCP listener's; nil for any other listener).
func takeQueued(ln net.Listener) []net.Conn {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var fds []int
	_ = rc.Control(func(fd uintptr) {
		for {
			// (The listener's socket is non-blocking: EAGAIN once the queue
			// is empty.)
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
				continue
			}
			if err != nil {
				return
			}
			fds = append(fds, nfd)
		}
	})
	conns := make([]net.Conn, 0, len(fds))
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "accepted")
		c, err := net.FileConn(f) // (a *net.TCPConn on a descriptor of its own)
		_ = f.Close()
		if err == nil {
			conns = append(conns, c)
		}
	}
	return conns
}
