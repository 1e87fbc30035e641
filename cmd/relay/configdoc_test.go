package main

import (
	"io"
	"testing"

	"github.com/kukuri/communitynode/internal/configdoc"
)

// TestConfigurationDoc fails when docs/configuration.md does not list the
// flags this binary accepts (regenerate: make docs).
func TestConfigurationDoc(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	configdoc.Check(t, configdoc.Section{Name: "relay", Title: "relay", Intro: "`relay --help` prints the same.", Flags: app.Flags})
}
