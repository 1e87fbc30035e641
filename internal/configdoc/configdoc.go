// Package configdoc renders a command's flags (urfave/cli v2) as the Markdown
// tables of docs/configuration.md, and checks that the file says what the
// binaries accept: each command's test renders its flags and compares them
// with its section of the file, so a flag added, renamed or given a new
// default without regenerating the file fails `make test`.
//
// Regenerate with `make docs` (CN_UPDATE_DOCS=1 on the tests).
package configdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Render returns the Markdown table of flags: flag, environment variable(s),
// default, meaning. Flags are listed in the order the command declares them;
// hidden flags and --help are left out.
func Render(flags []cli.Flag) string { return RenderReload(flags, nil) }

// RenderReload is Render with a column "reload" when live is not nil: "live"
// for the flags in live, which a configuration reload (SIGHUP) applies to the
// running daemon, "restart" for every other one.
func RenderReload(flags []cli.Flag, live map[string]bool) string {
	var b strings.Builder
	if live != nil {
		b.WriteString("| flag | environment | default | reload | meaning |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	}
	for _, f := range flags {
		names := f.Names()
		if len(names) == 0 || names[0] == "help" {
			continue
		}
		if h, ok := f.(interface{ IsVisible() bool }); ok && !h.IsVisible() {
			continue
		}
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		flag := make([]string, len(names))
		for i, n := range names {
			if len(n) == 1 {
				flag[i] = "`-" + n + "`"
			} else {
				flag[i] = "`--" + n + "`"
			}
		}
		if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
			flag[0] += " (repeatable)"
		}
		env := make([]string, 0, len(d.GetEnvVars()))
		for _, e := range d.GetEnvVars() {
			env = append(env, "`"+e+"`")
		}
		def := d.GetDefaultText()
		if def == "" {
			def = d.GetValue()
		}
		if !d.TakesValue() && def == "" {
			def = "false"
		}
		if def != "" {
			def = "`" + strings.Trim(def, `"`) + "`"
		}
		reload := ""
		if live != nil {
			reload = "restart | "
			if live[names[0]] {
				reload = "live | "
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s%s |\n", strings.Join(flag, ", "), strings.Join(env, ", "),
			cell(def), reload, cell(d.GetUsage()))
	}
	return b.String()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Section is one command's part of the file: its heading and what goes under it.
type Section struct {
	Name  string // marker name, e.g. "relay" or "cnctl-dev"
	Title string // heading text
	Intro string // a sentence under the heading
	Flags []cli.Flag
	// Live, for a daemon that reloads its configuration, is the set of its
	// flags a reload applies (daemon.Live): the table gets a column saying
	// "live" or "restart" for each flag. Nil: no column.
	Live map[string]bool
}

func (s Section) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- BEGIN %s (generated: make docs) -->\n## %s\n\n", s.Name, s.Title)
	if s.Intro != "" {
		b.WriteString(s.Intro + "\n\n")
	}
	b.WriteString(RenderReload(s.Flags, s.Live))
	fmt.Fprintf(&b, "<!-- END %s -->\n", s.Name)
	return b.String()
}

// File is the path of docs/configuration.md from the module root.
const File = "docs/configuration.md"

// root finds the module root from the caller's directory.
func root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("configdoc: no go.mod above %s", dir)
		}
		dir = parent
	}
}

// Check compares each section with docs/configuration.md and fails t for each
// that differs or is missing; with CN_UPDATE_DOCS=1 it rewrites them instead
// (a missing section is appended).
func Check(t testing.TB, sections ...Section) {
	t.Helper()
	dir, err := root()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("configdoc: %v (run make docs)", err)
	}
	text := string(data)
	update := os.Getenv("CN_UPDATE_DOCS") == "1"
	for _, s := range sections {
		// Every name the live set declares must be a flag of the command (a
		// renamed flag would otherwise silently turn into "restart").
		for name := range s.Live {
			if !slices.ContainsFunc(s.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
				t.Errorf("%s: the live set names --%s, which is not a flag of %s", File, name, s.Name)
			}
		}
		want := s.render()
		begin := fmt.Sprintf("<!-- BEGIN %s ", s.Name)
		end := fmt.Sprintf("<!-- END %s -->\n", s.Name)
		i := strings.Index(text, begin)
		j := strings.Index(text, end)
		var got string
		if i >= 0 && j > i {
			got = text[i : j+len(end)]
		}
		if got == want {
			continue
		}
		if !update {
			t.Errorf("%s: section %q is stale (flags changed): run `make docs` and commit it\n%s", File, s.Name, firstDiff(got, want))
			continue
		}
		if got == "" {
			text = strings.TrimRight(text, "\n") + "\n\n" + want
		} else {
			text = text[:i] + want + text[j+len(end):]
		}
	}
	if update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := range max(len(g), len(w)) {
		var a, b string
		if k < len(g) {
			a = g[k]
		}
		if k < len(w) {
			b = w[k]
		}
		if a != b {
			return fmt.Sprintf("first difference:\n  file: %s\n  code: %s", a, b)
		}
	}
	return ""
}

// Command returns the flags of a cnctl subcommand by its path of names.
func Command(app *cli.App, path ...string) []cli.Flag {
	cmds := app.Commands
	var c *cli.Command
	for _, name := range path {
		k := slices.IndexFunc(cmds, func(c *cli.Command) bool { return c.Name == name })
		if k < 0 {
			return nil
		}
		c = cmds[k]
		cmds = c.Subcommands
	}
	if c == nil {
		return nil
	}
	return c.Flags
}

// Example is the example configuration file (package configfile), from the module root.
const Example = "ops/communitynode.yaml"

// CheckExample runs app (a daemon's command line) on the example file with
// its action replaced, and fails t unless every flag named in want ends with
// the value given: every key of the app's section is one of its flags, and
// the values reach them.
func CheckExample(t testing.TB, app *cli.App, want map[string]string) {
	t.Helper()
	dir, err := root()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	app.Action = func(c *cli.Context) error {
		for name := range want {
			got[name] = c.String(name)
		}
		return nil
	}
	if err := app.Run([]string{app.Name, "--config", filepath.Join(dir, Example)}); err != nil {
		t.Fatalf("%s --config %s: %v", app.Name, Example, err)
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s --config %s: --%s = %q, want %q", app.Name, Example, name, got[name], v)
		}
	}
}
