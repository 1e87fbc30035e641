//go:build unix

package httpserver

import (
	"os"

	"golang.org/x/sys/unix"
)

func setReusePort(fd uintptr) error {
	return os.NewSyscallError("setsockopt SO_REUSEPORT", unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
}
