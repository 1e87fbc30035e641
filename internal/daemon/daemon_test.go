package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// TestRunServesUntilCancelled: Ready gets the address, the handler answers
// there, every task runs until the context is cancelled, and a cancelled run
// is a clean stop.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	started := make(chan struct{}, 2)
	task := func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") })
	done := make(chan error, 1)
	go func() {
		done <- Process{Name: "test", Listen: "127.0.0.1:0", Handler: mux, Ready: func(a string) { ready <- a }}.Run(ctx, task, task)
	}()
	addr := <-ready
	<-started
	<-started
	resp, err := http.Get("http://" + addr + "/ping")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "pong", string(body))
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + addr + "/ping")
	require.Error(t, err, "the listener is closed once Run returns")
}

// TestRunReturnsTheFirstFailure: a failing task stops the others and the
// server, and Run returns its error.
func TestRunReturnsTheFirstFailure(t *testing.T) {
	boom := errors.New("boom")
	stopped := make(chan struct{})
	err := Process{Name: "test", Listen: "127.0.0.1:0", Handler: http.NotFoundHandler()}.Run(context.Background(),
		func(ctx context.Context) error { <-ctx.Done(); close(stopped); return ctx.Err() },
		func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	select {
	case <-stopped:
	default:
		t.Fatal("Run returned before the other task stopped")
	}
}

// TestRunListensBeforeAnyTask: a taken address fails Run before a task starts
// (a task holding the database would otherwise outlive the failure).
func TestRunListensBeforeAnyTask(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ran := false
	err = Process{Name: "test", Listen: ln.Addr().String(), Handler: http.NotFoundHandler()}.Run(context.Background(),
		func(context.Context) error { ran = true; return nil })
	require.ErrorContains(t, err, "test listener")
	require.False(t, ran)
}

// TestAppConventions: the shared flags and refusals of every daemon's command
// line; the action sees the logger and its own flags.
func TestAppConventions(t *testing.T) {
	var got *slog.Logger
	newApp := func(stdout, stderr io.Writer) *cli.App {
		return App("d", "a daemon", stdout, stderr, []cli.Flag{BatchSizeFlag(10, "CN_D_BATCH_SIZE", "rows")},
			func(c *cli.Context, logger *slog.Logger) error {
				got = logger
				require.Equal(t, "postgres://x", c.String("database-url"))
				require.Equal(t, 7, c.Int("batch-size"))
				return nil
			})
	}
	require.NoError(t, newApp(io.Discard, io.Discard).Run([]string{"d", "--database-url", "postgres://x", "--batch-size", "7", "--log-level", "debug"}))
	require.NotNil(t, got)
	require.True(t, got.Enabled(context.Background(), slog.LevelDebug))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"d"}, "database-url"},
		{[]string{"d", "--database-url", "postgres://x", "extra"}, `unexpected arguments ["extra"] (see d --help)`},
		{[]string{"d", "--database-url", "postgres://x", "--log-level", "loud"}, "--log-level"},
		{[]string{"d", "--database-url", "postgres://x", "--batch-size", "0"}, "--batch-size: want 1-10000, got 0"},
		{[]string{"d", "--database-url", "postgres://x", "--batch-size", "10001"}, "--batch-size: want 1-10000"},
	} {
		got = nil
		err := newApp(io.Discard, io.Discard).Run(tc.args)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.Nil(t, got, "the action does not run: %v", tc.args)
	}
}

// TestExitCode: a failure exits 1 unless a cli.ExitCoder in its chain says
// otherwise.
func TestExitCode(t *testing.T) {
	require.Equal(t, 1, ExitCode(errors.New("boom")))
	require.Equal(t, 2, ExitCode(cli.Exit("wrong command line", 2)))
	require.Equal(t, 2, ExitCode(fmt.Errorf("wrapped: %w", cli.Exit("wrong command line", 2))))
}
