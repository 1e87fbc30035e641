package blossom

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublicAddr: mirrors connect to public unicast addresses only.
func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "0.0.0.0": false, "::": false,
		"100.64.0.1": false, "224.0.0.1": false, "::ffff:10.0.0.1": false, "64:ff9b::a00:1": false, "255.255.255.255": false,
	} {
		require.Equal(t, want, publicAddr(netip.MustParseAddr(addr)), addr)
	}
}
