package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

type options struct {
	Limit  int
	Listen string
	Names  []string
}

// TestReloaderAppliesLiveAndReportsRestart drives a Reloader over a daemon
// App and its --config file: live flags are applied (with their new values
// in the options apply gets), restart flags are reported by name only and
// keep being reported, the command line stays strongest, a bad file or a
// failing apply is refused whole, and --log-level changes the logger's level
// after the reload's own line.
func TestReloaderAppliesLiveAndReportsRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o600)) }
	write("relay:\n  limit: 1\n  listen: a\n")
	newApp := func(stdout, stderr io.Writer) *cli.App {
		return App("relay", "test", stdout, stderr, []cli.Flag{
			&cli.IntFlag{Name: "limit", EnvVars: []string{"T_LIMIT"}},
			&cli.StringFlag{Name: "listen"},
			&cli.StringSliceFlag{Name: "names"},
		}, func(c *cli.Context, _ *slog.Logger) error { return nil })
	}
	build := func(c *cli.Context) (options, error) {
		if c.Int("limit") < 0 {
			return options{}, errors.New("limit must not be negative")
		}
		return options{Limit: c.Int("limit"), Listen: c.String("listen"), Names: c.StringSlice("names")}, nil
	}
	args := []string{"relay", "--config", file, "--database-url", "postgres://x", "--names", "cmd"}
	var src Source[options]
	app := newApp(io.Discard, io.Discard)
	app.Action = func(c *cli.Context) error {
		src = NewSource(c, NewLive("limit", "names", "log-level"), build)
		return nil
	}
	require.NoError(t, app.RunContext(WithReload(context.Background(), newApp, args, nil), args))
	require.Equal(t, "1", src.Running["limit"])
	require.Equal(t, "cmd", src.Running["names"])

	var logs bytes.Buffer
	var mu sync.Mutex
	level := new(slog.LevelVar)
	src.Level = level
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: level}))
	var applied []options
	failApply := false
	reg := prometheus.NewRegistry()
	r := NewReloader("t", src, func(o options) error {
		if failApply {
			return errors.New("apply refused")
		}
		applied = append(applied, o)
		return nil
	}, reg, logger)
	require.Equal(t, 1, r.Generation())

	write("log-level: debug\nrelay:\n  limit: 2\n  listen: b\n  names: [file]\n")
	res, err := r.Reload(context.Background())
	require.NoError(t, err)
	require.Equal(t, Result{Generation: 2, Changed: []string{"limit", "log-level"}, NeedsRestart: []string{"listen"}}, res)
	require.Equal(t, options{Limit: 2, Listen: "b", Names: []string{"cmd"}}, applied[0], "the command line's --names stays")
	require.Equal(t, slog.LevelDebug, level.Level())
	require.Contains(t, logs.String(), `"msg":"t: configuration reloaded","generation":2,"changed":"limit,log-level","needs_restart":"listen"`)

	t.Setenv("T_LIMIT", "3") // the environment beats the file, as at start
	res, err = r.Reload(context.Background())
	require.NoError(t, err)
	require.Equal(t, Result{Generation: 3, Changed: []string{"limit"}, NeedsRestart: []string{"listen"}}, res, "listen still needs a restart")

	for _, bad := range []string{"relay:\n  limit: [1\n", "relay:\n  limitt: 1\n", "log-level: loud\nrelay:\n  listen: c\n"} {
		write(bad)
		_, err := r.Reload(context.Background())
		require.Error(t, err, bad)
	}
	t.Setenv("T_LIMIT", "-1")
	write("relay:\n  listen: a\n")
	_, err = r.Reload(context.Background())
	require.ErrorContains(t, err, "must not be negative")
	t.Setenv("T_LIMIT", "5")
	failApply = true
	_, err = r.Reload(context.Background())
	require.ErrorContains(t, err, "apply refused")
	require.Equal(t, 3, r.Generation())
	require.Len(t, applied, 2)
	require.Equal(t, 5.0, testutil.ToFloat64(r.failures))
	require.Equal(t, 3.0, testutil.ToFloat64(r.generation))
	require.Equal(t, 5, strings.Count(logs.String(), `"msg":"t: configuration reload refused; the running configuration stays"`))

	// A failed apply changed no running value: the next good reload reports
	// limit again.
	failApply = false
	res, err = r.Reload(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"limit", "log-level"}, res.Changed)
	require.Equal(t, slog.LevelInfo, level.Level(), "the file no longer sets debug")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
