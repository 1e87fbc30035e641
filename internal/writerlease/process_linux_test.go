package writerlease

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

// child starts a process that runs until killed and returns it with its
// name (process).
func child(t *testing.T) (*exec.Cmd, process) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	me := self()
	require.NotEmpty(t, me.boot, "this process cannot name itself")
	_, _, start, err := stat(strconv.Itoa(cmd.Process.Pid))
	require.NoError(t, err)
	return cmd, process{boot: me.boot, pidNS: me.pidNS, pid: cmd.Process.Pid, start: start}
}

// TestEndedIsCertain: a process is taken for ended only when it certainly
// has: a live one, one of another boot or PID namespace, one whose PID is
// reused by a process started at another time.
func TestEndedIsCertain(t *testing.T) {
	me := self()
	require.False(t, me.ended(me), "this process")
	cmd, p := child(t)
	require.False(t, me.ended(p), "a live process")
	require.Equal(t, p, holderProcess(holderKey("host", p.pid, "ab", p)), "the row key names the process")
	other := p
	other.boot = "another-boot"
	other.pid = 1 << 30 // (no such PID here)
	require.False(t, me.ended(other), "a process of another boot")
	other = p
	other.pidNS++
	other.pid = 1 << 30
	require.False(t, me.ended(other), "a process of another PID namespace")
	reused := p
	reused.start++
	require.True(t, me.ended(reused), "a PID now naming a process started at another time")

	require.NoError(t, cmd.Process.Kill())
	// Killed and not reaped: a zombie, which runs no code.
	require.Eventually(t, func() bool { return me.ended(p) }, 5*time.Second, 5*time.Millisecond, "a zombie")
	_ = cmd.Wait()
	require.True(t, me.ended(p), "a reaped process")
	require.False(t, me.ended(process{}), "nothing named")
}

// TestRestartAfterAKillDoesNotWait: a relay started after a sole relay's
// process was killed on the same machine (its row left, live and sole)
// takes the row for an ended process's, removes it, and may acknowledge at
// once, sole; a row of a process that still runs is waited out.
func TestRestartAfterAKillDoesNotWait(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const ttl = 2 * time.Second
	cmd, killed := child(t)
	dead := holderKey("host", killed.pid, "dead", killed)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	_, alive := child(t)
	live := holderKey("host", alive.pid, "live", alive)
	insert := func(holder string) {
		_, err := db.Pool.Exec(ctx, `INSERT INTO cn_relay.writer_lease (holder, expires_at, sole_until)
			VALUES ($1, now() + make_interval(secs => $2), now() + make_interval(secs => $2))`, holder, ttl.Seconds())
		require.NoError(t, err)
	}

	insert(dead)
	l := New(db.Pool, ttl, nil)
	require.NoError(t, l.Register(ctx))
	require.True(t, l.Holds(), "waits out the trust of a process that has ended")
	_, sole := l.Sole()
	require.True(t, sole, "the only relay left")
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM cn_relay.writer_lease WHERE holder = $1", dead).Scan(&n))
	require.Zero(t, n, "the ended process's row is left")
	require.NoError(t, l.Release(ctx))

	insert(live)
	l = New(db.Pool, ttl, nil)
	require.NoError(t, l.Register(ctx))
	require.False(t, l.Holds(), "acknowledges while a running process's sole renewal may be trusted")
}
