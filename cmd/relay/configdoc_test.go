package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/configdoc"
)

// TestConfigurationDoc fails when docs/configuration.md does not list the
// flags this binary accepts (regenerate: make docs), or when the example
// configuration file does not load into them.
func TestConfigurationDoc(t *testing.T) {
	configdoc.Check(t, configdoc.Section{Name: "relay", Title: "relay", Intro: "`relay --help` prints the same.", Flags: newApp(io.Discard, io.Discard).Flags, Live: relayLive})
	configdoc.CheckExample(t, newApp(io.Discard, io.Discard), map[string]string{
		"database-url": "postgres://cn@127.0.0.1:5432/node?sslmode=disable", "listen": "127.0.0.1:7777"})
}

// TestReloadClasses: every flag of the relay is classified for a reload, and
// what a running relay cannot change (its addresses, databases, node key,
// what it built at start) is never live.
func TestReloadClasses(t *testing.T) {
	flags := map[string]bool{}
	for _, f := range newApp(io.Discard, io.Discard).Flags {
		flags[f.Names()[0]] = true
		require.Contains(t, []string{"live", "restart"}, relayLive.Class(f.Names()[0]))
	}
	for name := range relayLive {
		require.True(t, flags[name], "relayLive names --%s, not a relay flag", name)
	}
	for _, name := range []string{"listen", "metrics-listen", "public-url", "database-url", "read-database-url", "node-key-file",
		"config", "require-topic", "search", "cache-bytes", "ws-deflate", "groups", "membership"} {
		require.Equal(t, "restart", relayLive.Class(name), name)
	}
}
