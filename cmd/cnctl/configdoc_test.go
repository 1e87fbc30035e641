package main

import (
	"io"
	"testing"

	"github.com/kukuri/communitynode/internal/configdoc"
)

// TestConfigurationDoc fails when docs/configuration.md does not list the
// flags of cnctl's node-running commands (regenerate: make docs).
func TestConfigurationDoc(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	var sections []configdoc.Section
	for _, path := range [][]string{{"dev"}, {"import"}, {"sync"}, {"export"}, {"dashboard"}, {"migrate"}} {
		name := "cnctl " + path[0]
		flags := configdoc.Command(app, path...)
		if flags == nil {
			t.Fatalf("cnctl has no command %v", path)
		}
		s := configdoc.Section{Name: "cnctl-" + path[0], Title: name,
			Intro: "`" + name + " --help` prints the same.", Flags: append(app.Flags, flags...)}
		if path[0] == "dev" {
			s.Live = devLive // SIGHUP reloads the dev node's relay
		}
		sections = append(sections, s)
	}
	configdoc.Check(t, sections...)
}
