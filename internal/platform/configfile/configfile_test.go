package configfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// got is what a test app's action saw.
type got struct {
	listen  string
	timeout time.Duration
	admins  []string
	level   string
}

// run runs a small daemon-like app (section "relay") with args and returns
// what its flags ended as, or the error.
func run(t *testing.T, args ...string) (got, error) {
	t.Helper()
	var g got
	app := &cli.App{
		Name:   "relay",
		Before: Before("relay"),
		Flags: []cli.Flag{
			Flag(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7777", EnvVars: []string{"CN_TEST_CF_LISTEN"}},
			&cli.DurationFlag{Name: "query-timeout", Value: 10 * time.Second},
			&cli.StringSliceFlag{Name: "admin-pubkeys"},
			&cli.StringFlag{Name: "log-level", Value: "info"},
		},
		Action: func(c *cli.Context) error {
			g = got{c.String("listen"), c.Duration("query-timeout"), c.StringSlice("admin-pubkeys"), c.String("log-level")}
			return nil
		},
	}
	err := app.Run(append([]string{"relay"}, args...))
	return g, err
}

func file(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

const good = `# comment
log-level: debug
database-url: postgres://x/y
relay:
  listen: 0.0.0.0:9000
  query-timeout: 3s
  admin-pubkeys: [aa, bb]
indexer:
  listen: 127.0.0.1:1
  some-indexer-only-flag: 5
`

func TestFileSetsFlags(t *testing.T) {
	g, err := run(t, "--config", file(t, good))
	require.NoError(t, err)
	// database-url is shared but this command has no such flag: ignored.
	// The indexer section is another command's: not checked against ours.
	require.Equal(t, got{"0.0.0.0:9000", 3 * time.Second, []string{"aa", "bb"}, "debug"}, g)
}

func TestCommandLineAndEnvironmentWin(t *testing.T) {
	p := file(t, good)
	g, err := run(t, "--config", p, "--listen", "1.2.3.4:5", "--admin-pubkeys", "cc")
	require.NoError(t, err)
	require.Equal(t, "1.2.3.4:5", g.listen)
	require.Equal(t, []string{"cc"}, g.admins)
	require.Equal(t, 3*time.Second, g.timeout, "what the command line left unset comes from the file")

	t.Setenv("CN_TEST_CF_LISTEN", "5.6.7.8:9")
	g, err = run(t, "--config", p)
	require.NoError(t, err)
	require.Equal(t, "5.6.7.8:9", g.listen)
}

func TestNoFileLeavesDefaults(t *testing.T) {
	g, err := run(t)
	require.NoError(t, err)
	require.Equal(t, got{"127.0.0.1:7777", 10 * time.Second, nil, "info"}, g)
	g, err = run(t, "--config", file(t, ""))
	require.NoError(t, err, "an empty file sets nothing")
	require.Equal(t, "127.0.0.1:7777", g.listen)
}

func TestBadFilesAreRefusedWithTheLine(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"unknown key in section": {"relay:\n  listen: x\n  lisen: y\n", `:3: unknown key "lisen" in section relay (relay has no --lisen flag)`},
		"unknown top-level key":  {"log-level: info\nrelays:\n  listen: x\n", `:2: unknown key "relays"`},
		"config in the file":     {"relay:\n  config: other.yaml\n", `:2: unknown key "config"`},
		"list for one value":     {"relay:\n  listen: [a, b]\n", `:2: listen takes one value, not a list`},
		"bad value":              {"relay:\n  query-timeout: soon\n", `:2: query-timeout:`},
		"no value":               {"relay:\n  listen:\n", `:2: listen has no value`},
		"section not a mapping":  {"relay: 5\n", `:1: section "relay": want a mapping`},
		"not a mapping":          {"- a\n- b\n", `:1: want a mapping`},
		"not yaml":               {"relay: [\n", `--config `},
		"key twice in a section": {"relay:\n  listen: a\n  query-timeout: 1s\n  listen: b\n", `:4: key "listen" given twice in section relay (first at line 2)`},
		"key twice at the top":   {"log-level: info\nlog-level: debug\n", `:2: key "log-level" given twice (first at line 1)`},
		"key twice elsewhere":    {"indexer:\n  listen: a\n  listen: b\n", `:3: key "listen" given twice in section indexer`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, "--config", file(t, tc.text))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := run(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "--config:")
}

func TestTakeRequired(t *testing.T) {
	f := &cli.StringFlag{Name: "database-url", Required: true, Usage: "the database"}
	names := TakeRequired([]cli.Flag{f, &cli.StringFlag{Name: "other"}})
	require.Equal(t, []string{"database-url"}, names)
	require.False(t, f.Required)
	require.Equal(t, "the database (required)", f.Usage)
}
