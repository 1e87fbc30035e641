package daemon

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNotifyReady: READY=1 reaches $NOTIFY_SOCKET; without it nothing is sent.
func TestNotifyReady(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	require.NoError(t, NotifyReady())
	buf := make([]byte, 64)
	n, err := ln.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "READY=1", string(buf[:n]))

	t.Setenv("NOTIFY_SOCKET", "")
	require.NoError(t, NotifyReady())
}
