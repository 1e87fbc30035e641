package main

import (
	"io"
	"testing"

	"github.com/kukuri/communitynode/internal/configdoc"
)

// TestConfigurationDoc fails when docs/configuration.md does not list the
// flags this binary accepts (regenerate: make docs), or when the example
// configuration file does not load into them.
func TestConfigurationDoc(t *testing.T) {
	configdoc.Check(t, configdoc.Section{Name: "trust", Title: "trust", Intro: "`trust --help` prints the same.", Flags: newApp(io.Discard, io.Discard).Flags, Live: trustLive})
	configdoc.CheckExample(t, newApp(io.Discard, io.Discard), map[string]string{
		"database-url": "postgres://cn@127.0.0.1:5432/node?sslmode=disable", "listen": "127.0.0.1:7782"})
}
