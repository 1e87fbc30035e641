// Package configfile reads the node's one configuration file (YAML) into a
// command's flags. Every daemon and `cnctl dev` take `--config FILE`
// (CN_CONFIG). Its keys are the flags' names; what sets a flag, strongest
// first: the command line, its environment variable, the file, the default.
//
// The file has the flags every daemon shares at the top (database-url,
// log-level, debug-listen) and one section per command (relay, indexer,
// moderator, trust, bridge, dev) holding that command's flags:
//
//	database-url: postgres://relay@db/node
//	relay:
//	  listen: 0.0.0.0:7777
//	  admin-pubkeys: [npub1...]
//	indexer:
//	  listen: 127.0.0.1:7780
//
// A command reads the top and its own section and checks that the other
// sections' names are commands; anything it does not know is refused with
// the file, the line and the key, before the command does anything (a typo
// never silently leaves a default in force). Values are YAML scalars (as the
// flag would take them on the command line: 10s, 4096, true) or, for a flag
// that may be repeated, a list.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// Sections are the commands the file has a section for.
var Sections = []string{"relay", "indexer", "moderator", "trust", "bridge", "dev"}

// Shared are the top-level keys: the flags every daemon has.
var Shared = []string{"database-url", "log-level", "debug-listen"}

// Flag is --config.
func Flag() cli.Flag {
	return &cli.StringFlag{Name: "config", EnvVars: []string{"CN_CONFIG"},
		Usage: "YAML file of flag values: shared flags at the top, one section per command (see ops/communitynode.yaml); the command line and environment variables override it"}
}

// Before returns a cli Before hook that applies --config's top level and the
// section of this command to the flags the command line and the environment
// left unset.
func Before(section string) cli.BeforeFunc {
	return func(c *cli.Context) error {
		path := c.String("config")
		if path == "" {
			return nil
		}
		return Apply(c, path, section)
	}
}

// Apply reads path and sets the flags of c that the command line and the
// environment did not set: the shared top-level keys the command has, and
// every key of its section.
func Apply(c *cli.Context, path, section string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return fmt.Errorf("--config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("--config %s:%d: want a mapping of flag names to values", path, root.Line)
	}
	if err := refuseRepeats(path, root); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			known[n] = true
		}
	}
	for _, f := range c.App.Flags { // a daemon's flags are its App's
		for _, n := range f.Names() {
			known[n] = true
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case slices.Contains(Shared, k.Value):
			if known[k.Value] {
				if err := set(c, path, k, v); err != nil {
					return err
				}
			}
		case slices.Contains(Sections, k.Value):
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("--config %s:%d: section %q: want a mapping of %s's flag names to values", path, v.Line, k.Value, k.Value)
			}
			if k.Value != section {
				continue
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				fk, fv := v.Content[j], v.Content[j+1]
				if !known[fk.Value] || fk.Value == "config" || fk.Value == "help" {
					return fmt.Errorf("--config %s:%d: unknown key %q in section %s (%s has no --%s flag)", path, fk.Line, fk.Value, section, section, fk.Value)
				}
				if err := set(c, path, fk, fv); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("--config %s:%d: unknown key %q (the top level takes %s and the sections %s)",
				path, k.Line, k.Value, strings.Join(Shared, ", "), strings.Join(Sections, ", "))
		}
	}
	return nil
}

// refuseRepeats refuses a key given twice at the top level or in a section:
// YAML decoders keep one of the two values, and which one a reader of the
// file expects is anyone's guess.
func refuseRepeats(path string, root *yaml.Node) error {
	check := func(m *yaml.Node, where string) error {
		first := map[string]int{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if line, ok := first[k.Value]; ok {
				return fmt.Errorf("--config %s:%d: key %q given twice%s (first at line %d)", path, k.Line, k.Value, where, line)
			}
			first[k.Value] = k.Line
		}
		return nil
	}
	if err := check(root, ""); err != nil {
		return err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k, v := root.Content[i], root.Content[i+1]; v.Kind == yaml.MappingNode {
			if err := check(v, " in section "+k.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// set gives flag k the value v unless the command line or the environment set it.
func set(c *cli.Context, path string, k, v *yaml.Node) error {
	if c.IsSet(k.Value) {
		return nil
	}
	var values []string
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return fmt.Errorf("--config %s:%d: %s has no value", path, v.Line, k.Value)
		}
		values = []string{v.Value}
	case yaml.SequenceNode:
		if !repeatable(c, k.Value) {
			return fmt.Errorf("--config %s:%d: %s takes one value, not a list", path, v.Line, k.Value)
		}
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				return fmt.Errorf("--config %s:%d: %s: want a list of values", path, item.Line, k.Value)
			}
			values = append(values, item.Value)
		}
	default:
		return fmt.Errorf("--config %s:%d: %s: want a value or a list of values", path, v.Line, k.Value)
	}
	for _, s := range values {
		if err := c.Set(k.Value, s); err != nil {
			return fmt.Errorf("--config %s:%d: %s: %v", path, v.Line, k.Value, err)
		}
	}
	return nil
}

func repeatable(c *cli.Context, name string) bool {
	for _, flags := range [][]cli.Flag{c.Command.Flags, c.App.Flags} {
		for _, f := range flags {
			if slices.Contains(f.Names(), name) {
				s, ok := f.(cli.DocGenerationSliceFlag)
				return ok && s.IsSliceFlag()
			}
		}
	}
	return false
}

// TakeRequired turns the Required string flags of flags into optional ones,
// marking their usage "(required)", and returns their names: the command
// checks them in its action, after --config had its say (urfave/cli checks
// Required flags before any Before hook, so a value given only in the file
// would be refused). Only string flags may be required.
func TakeRequired(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		rf, ok := f.(cli.RequiredFlag)
		if !ok || !rf.IsRequired() {
			continue
		}
		sf, ok := f.(*cli.StringFlag)
		if !ok {
			panic(fmt.Sprintf("configfile: required flag --%s is a %T; only string flags may be required", f.Names()[0], f))
		}
		sf.Required = false
		sf.Usage += " " + RequiredMark
		names = append(names, sf.Name)
	}
	return names
}

// RequiredMark ends the usage of every required flag in the help.
const RequiredMark = "(required)"
