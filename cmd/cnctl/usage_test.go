package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/platform/configfile"
)

// TestEveryUsageErrorExits2 walks every command and subcommand of the app and
// gives each every kind of wrong command line: an unknown flag, a value its
// type refuses for each typed flag, each required flag left out, and
// arguments it does not take. Each must fail with exit code 2 and one line,
// and print nothing else (that line is all main prints). The wrong part is the
// only wrong one: required flags are given, and the database URL, the bench
// URL and the node key file point where nothing is, so a command that got past
// its checks fails with exit 1 (or succeeds) instead, and this test with it.
//
// Not parallel: urfave/cli's help flag is a global that building apps writes.
func TestEveryUsageErrorExits2(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:1/x?connect_timeout=2")
	t.Setenv("CN_BENCH_URL", "ws://127.0.0.1:1")
	t.Setenv("CN_NODE_KEY_FILE", filepath.Join(t.TempDir(), "node.key"))
	t.Chdir(t.TempDir()) // cnctl dev's data directory, were it ever started

	usageError := func(args ...string) {
		t.Helper()
		var out, errOut strings.Builder
		err := run(context.Background(), append([]string{"cnctl"}, args...), &out, &errOut)
		require.Error(t, err, "cnctl %s", strings.Join(args, " "))
		require.Equal(t, 2, exitCode(err), "cnctl %s: %v", strings.Join(args, " "), err)
		require.NotContains(t, err.Error(), "\n", "cnctl %s", strings.Join(args, " "))
		require.Empty(t, out.String()+errOut.String(), "cnctl %s prints nothing but its error", strings.Join(args, " "))
	}

	commands := 0
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			p := append(append([]string{}, path...), cmd.Name)
			commands++
			var required []string // each required flag with a value
			for _, f := range cmd.Flags {
				if isRequired(f) {
					required = append(required, "--"+f.Names()[0], "x")
				}
			}
			with := func(args ...string) []string {
				return append(append(append([]string{}, p...), required...), args...)
			}

			usageError(with("--no-such-flag")...)
			// Arguments: no command takes three; a group knows no "x".
			usageError(with("x", "x", "x")...)
			if cmd.ArgsUsage != "" {
				usageError(with("x", "--json")...) // a flag after the arguments
			}
			for _, f := range cmd.Flags {
				name := "--" + f.Names()[0]
				switch f.(type) {
				case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.Float64Flag, *cli.DurationFlag, *cli.BoolFlag:
					usageError(with(name + "=not-a-value")...)
				}
				if isRequired(f) {
					var others []string
					for i := 0; i < len(required); i += 2 {
						if required[i] != name {
							others = append(others, required[i], required[i+1])
						}
					}
					usageError(append(append([]string{}, p...), others...)...)
				}
			}
			walk(p, cmd.Subcommands)
		}
	}
	app := newApp(io.Discard, io.Discard)
	usageError("--no-such-flag")
	usageError("no-such-command")
	walk(nil, app.Commands)
	require.Greater(t, commands, 40, "every command was walked")

	// Values of string flags and arguments that each command checks itself.
	for _, args := range [][]string{
		{"migrate", "--role-prefix", "no spaces allowed"},
		{"reset-offset", "--consumer", "x"},
		{"reset-offset", "--consumer", "x", "--to-seq", "-1"},
		{"dlq", "list", "--consumer", "x", "--limit", "0"},
		{"dlq", "retry", "--consumer", "x"},
		{"dlq", "drop", "--consumer", "x", "--seq", "1,x"},
		{"outbox", "prune", "--older-than", "soon"},
		{"bench", "ingest", "--url", ""},
		{"bench", "req", "--sample", "0"},
		{"reindex", "--kinds", "x"},
		{"moderation", "rules", "apply"},
		{"moderation", "rules", "apply", "--rejudge", "rules.yml"},
		{"moderation", "queue", "--limit", "0"},
		{"moderation", "hide", "--reason", "x", "not-an-event-id"},
		{"moderation", "unhide"},
		{"moderation", "ban-pubkey"},
		{"moderation", "allow-kind", "x"},
		{"moderation", "list", "nope"},
		{"moderation", "log", "--limit", "0"},
		{"dashboard", "--listen", "0.0.0.0:7790"},
		{"dashboard", "--token-file", "missing"},
		{"import", "--batch-size", "0"},
		{"import", "--identity-writers", "some"},
		{"export", "--filter", "{"},
		{"trust", "show", "nope"},
		{"dev", "--default-topic", "   "},
		{"dev", "--seeds", "nope"},
	} {
		usageError(args...)
	}
}

// isRequired reports whether the scaffold checks that f is given: it marks the
// usage of such flags.
func isRequired(f cli.Flag) bool {
	df, ok := f.(cli.DocGenerationFlag)
	return ok && strings.HasSuffix(df.GetUsage(), configfile.RequiredMark)
}
