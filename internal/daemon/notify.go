package daemon

import (
	"net"
	"os"
)

// NotifyReady tells systemd (a unit of Type=notify) that the daemon serves:
// it sends READY=1 to $NOTIFY_SOCKET (sd_notify(3)), so that `systemctl
// start` returns only then, which a restart without downtime waits for
// before it stops the old process (docs/operations.md). Without
// NOTIFY_SOCKET it does nothing.
func NotifyReady() error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' { // an abstract socket
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("READY=1"))
	return err
}
