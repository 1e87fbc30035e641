package audience_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/audience"
)

func TestParseNames(t *testing.T) {
	t.Parallel()
	s, err := audience.Parse([]string{"wss://Relay.Example.org", "wss://other.example.net:8443/nostr/"})
	require.NoError(t, err)
	for _, u := range []string{
		"wss://relay.example.org", "wss://relay.example.org/", "wss://RELAY.example.org.", "relay.example.org",
		"https://relay.example.org", "wss://relay.example.org:443", "wss://other.example.net:8443/nostr", "https://other.example.net:8443/nostr/",
	} {
		require.True(t, s.Names(u), u)
	}
	for _, u := range []string{
		"", "wss://evil.example", "ws://relay.example.org", "wss://relay.example.org:7777", "wss://relay.example.org/other",
		"wss://other.example.net/nostr", "wss://other.example.net:8443", "wss://relay.example.org.evil.example", "not a url at all",
		"ftp://relay.example.org",
	} {
		require.False(t, s.Names(u), u)
	}
	require.Equal(t, "wss://Relay.Example.org, wss://other.example.net:8443/nostr/", s.String())
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{nil, {}, {"relay.example.org"}, {"ftp://relay.example.org"}, {"wss://"}, {"wss://relay.example.org/?x=1"}, {"wss://u@relay.example.org"}} {
		_, err := audience.Parse(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	s, err := audience.Loopback("127.0.0.1:7777")
	require.NoError(t, err)
	for _, u := range []string{"ws://127.0.0.1:7777", "ws://127.0.0.1:7777/", "ws://localhost:7777", "http://127.0.0.1:7777"} {
		require.True(t, s.Names(u), u)
	}
	for _, u := range []string{"ws://127.0.0.1:7778", "wss://evil.example/", "ws://127.0.0.1", "ws://[::1]:7777", "ws://10.0.0.1:7777"} {
		require.False(t, s.Names(u), u)
	}
	require.Equal(t, []string{"ws://127.0.0.1:7777"}, s.URLs())

	v6, err := audience.Loopback("[::1]:7777")
	require.NoError(t, err)
	require.True(t, v6.Names("ws://[::1]:7777"))
	require.True(t, v6.Names("ws://localhost:7777"))

	for _, addr := range []string{"0.0.0.0:7777", ":7777", "[::]:7777", "192.168.1.5:7777", "relay.example.org:7777"} {
		_, err := audience.Loopback(addr)
		require.True(t, errors.Is(err, audience.ErrNotLoopback), "%s: %v", addr, err)
	}
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1", "nonsense"} {
		_, err := audience.Loopback(addr)
		require.Error(t, err, addr)
	}
}

func TestNamesRequest(t *testing.T) {
	t.Parallel()
	s, err := audience.Parse([]string{"wss://relay.example.org"})
	require.NoError(t, err)
	require.True(t, s.NamesRequest("https://relay.example.org/", ""))
	require.True(t, s.NamesRequest("wss://relay.example.org", ""))
	require.False(t, s.NamesRequest("https://relay.example.org/?a=1", ""), "a query that the request does not have")
	require.True(t, s.NamesRequest("https://relay.example.org/?a=1", "a=1"))
	require.False(t, s.NamesRequest("https://nostr.other.example/", ""))

	var zero audience.Set
	require.True(t, zero.Empty())
	require.False(t, zero.Names("wss://relay.example.org"))
	require.False(t, zero.NamesRequest("wss://relay.example.org", ""))
}
