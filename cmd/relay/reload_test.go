package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// reloadable is a relay run in process as daemon.Main runs it, with its
// reload requests (what SIGHUP sends) in the test's hands.
type reloadable struct {
	t        *testing.T
	db       *pgtest.DB
	file     string // the --config file
	base     string // the file's relay section, before each case's lines
	addr     string
	metrics  string
	requests chan struct{}
	logs     *testkit.Buffer
	gen      int
	failures int
}

// startReloadable starts a relay reading base (lines of its relay: section)
// from --config, with args on the command line.
func startReloadable(t *testing.T, base string, args ...string) *reloadable {
	t.Helper()
	db := pgtest.New(t)
	r := &reloadable{t: t, db: db, file: filepath.Join(t.TempDir(), "node.yaml"), addr: testkit.FreeAddr(t),
		metrics: testkit.FreeAddr(t), requests: make(chan struct{}), logs: &testkit.Buffer{}, gen: 1}
	r.base = fmt.Sprintf("  listen: %s\n  metrics-listen: %s\n%s", r.addr, r.metrics, base)
	r.write("")
	argv := append([]string{"relay", "--config", r.file, "--database-url", db.URL}, args...)
	ctx, cancel := context.WithCancel(daemon.WithReload(context.Background(), newApp, argv, r.requests))
	done := make(chan error, 1)
	go func() { done <- newApp(io.Discard, r.logs).RunContext(ctx, argv) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(daemontest.StopTimeout):
			t.Error("relay did not stop")
		}
	})
	daemontest.WaitOK(t, "http://"+r.addr+"/healthz")
	require.Equal(t, 1, r.metric("cn_config_generation"))
	require.Equal(t, 0, r.metric("cn_config_reload_failures_total"))
	return r
}

// write replaces the file: the base lines, then lines (indented: under
// relay:; not indented: top-level keys, after the section).
func (r *reloadable) write(lines string) {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(r.file, []byte("relay:\n"+r.base+lines), 0o600))
}

// reload writes lines, asks for a reload as SIGHUP does and waits until it
// was applied; it returns the reload's log line.
func (r *reloadable) reload(lines string) string {
	r.t.Helper()
	r.write(lines)
	r.requests <- struct{}{}
	r.gen++
	r.waitMetric("cn_config_generation", r.gen)
	require.Equal(r.t, r.failures, r.metric("cn_config_reload_failures_total"))
	return r.lastLog("relay: configuration reloaded")
}

// refuse writes lines, asks for a reload and waits until it was refused; it
// returns the refusal's log line.
func (r *reloadable) refuse(lines string) string {
	r.t.Helper()
	r.write(lines)
	r.requests <- struct{}{}
	r.failures++
	r.waitMetric("cn_config_reload_failures_total", r.failures)
	require.Equal(r.t, r.gen, r.metric("cn_config_generation"), "a refused reload changes no generation")
	return r.lastLog("relay: configuration reload refused; the running configuration stays")
}

func (r *reloadable) metric(name string) int {
	r.t.Helper()
	resp, err := http.Get("http://" + r.metrics + "/metrics")
	require.NoError(r.t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			require.NoError(r.t, err)
			return int(n)
		}
	}
	r.t.Fatalf("no metric %s", name)
	return 0
}

func (r *reloadable) waitMetric(name string, want int) {
	r.t.Helper()
	deadline := time.Now().Add(daemontest.StopTimeout)
	for r.metric(name) != want {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s stayed %d, want %d; logs:\n%s", name, r.metric(name), want, r.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastLog returns the last log line with msg, decoded.
func (r *reloadable) lastLog(msg string) string {
	r.t.Helper()
	lines := strings.Split(strings.TrimSpace(r.logs.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var l struct{ Msg string }
		if json.Unmarshal([]byte(lines[i]), &l) == nil && l.Msg == msg {
			return lines[i]
		}
	}
	r.t.Fatalf("no log line %q in:\n%s", msg, r.logs)
	return ""
}

// dial opens a connection that counts as client address ip (the base sets
// --real-ip-header X-Real-IP), so that each case has per-address buckets of
// its own.
func (r *reloadable) dial(ip string) *testkit.Client {
	r.t.Helper()
	c, _, err := testkit.ConnectHeader(r.t, "ws://"+r.addr, http.Header{"X-Real-IP": {ip}})
	require.NoError(r.t, err)
	return c
}

// note publishes a fresh author's kind 1 in topic go, edited by edit, and
// returns the OK.
func note(t *testing.T, c *testkit.Client, sk string, edit func(*nostr.Event)) (bool, string) {
	t.Helper()
	if sk == "" {
		sk = nostr.GeneratePrivateKey()
	}
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "hello " + nostr.GeneratePrivateKey()[:8]}
	if edit != nil {
		edit(ev)
	}
	require.NoError(t, ev.Sign(sk))
	return c.Publish(ev)
}

// anyRefused publishes n notes (by one author when sk is set) and reports
// whether one was refused rate-limited.
func anyRefused(t *testing.T, c *testkit.Client, sk string, n int) bool {
	t.Helper()
	refused := false
	for range n {
		if ok, reason := note(t, c, sk, nil); !ok {
			require.Contains(t, reason, "rate-limited")
			refused = true
		}
	}
	return refused
}

// liveCase is one live flag: before and after are its lines in the file
// (before: also the lines the case needs to start from); probe reports
// whether the connection sees the after behaviour.
type liveCase struct {
	flag          string
	before, after string
	probe         func(t *testing.T, r *reloadable, c *testkit.Client, ip string) bool
}

// TestReloadEveryLiveSetting changes each live flag of the relay in the
// --config file and reloads: the change reaches a connection opened before
// it, with no reconnect, and the reload's one log line names the flag.
// Every flag of relayLive has a case here (checked at the end).
func TestReloadEveryLiveSetting(t *testing.T) {
	r := startReloadable(t, "  real-ip-header: X-Real-IP\n  cache-bytes: 0\n")
	admin := nostr.GeneratePrivateKey()
	seed := r.dial("10.9.9.9")
	for range 3 {
		ok, reason := note(t, seed, "", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "limits"}} })
		require.True(t, ok, reason)
	}
	limitsREQ := func(c *testkit.Client, limit int) int {
		f := map[string]any{"kinds": []int{1}, "#t": []string{"limits"}}
		if limit > 0 {
			f["limit"] = limit
		}
		return len(c.Query(f))
	}
	closed := func(c *testkit.Client, filters ...any) bool {
		_, reason := c.Req("probe-"+nostr.GeneratePrivateKey()[:6], filters...)
		return reason != ""
	}
	refused := func(t *testing.T, c *testkit.Client, edit func(*nostr.Event)) bool {
		ok, _ := note(t, c, "", edit)
		return !ok
	}
	cases := []liveCase{
		{"max-message-bytes", "", "  max-message-bytes: 2048\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			// A message over the limit has no readable id: a NOTICE answers it.
			ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: strings.Repeat("m", 3000)}
			require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
			require.NoError(t, c.Send("EVENT", ev))
			for {
				m := c.Next()
				switch {
				case m.Label() == "NOTICE":
					require.Contains(t, m.Str(1), "invalid")
					return true
				case m.Label() == "OK" && m.Str(1) == ev.ID:
					return false
				}
			}
		}},
		{"max-content-bytes", "", "  max-content-bytes: 1000\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return refused(t, c, func(ev *nostr.Event) { ev.Content = strings.Repeat("c", 1500) })
		}},
		{"max-tags", "", "  max-tags: 3\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return refused(t, c, func(ev *nostr.Event) {
				ev.Tags = append(ev.Tags, nostr.Tag{"x", "1"}, nostr.Tag{"x", "2"}, nostr.Tag{"x", "3"})
			})
		}},
		{"created-at-lower-limit", "", "  created-at-lower-limit: 24h\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return refused(t, c, func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(time.Now().Add(-48 * time.Hour).Unix()) })
		}},
		{"max-topics-per-event", "", "  max-topics-per-event: 2\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return refused(t, c, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"t", "a"}, nostr.Tag{"t", "b"}) })
		}},
		{"identity-writers", "", "  identity-writers: any\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			ok, reason := note(t, c, "", func(ev *nostr.Event) { ev.Kind, ev.Tags, ev.Content = 0, nil, `{"name":"x"}` })
			require.True(t, ok, reason)
			return !strings.HasPrefix(reason, "pending:") // a newcomer's profile waits under members
		}},
		{"default-topic", "", "  default-topic: lounge\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			ok, _ := note(t, c, "", func(ev *nostr.Event) { ev.Tags = nil })
			return ok
		}},
		{"allowed-topics", "  allowed-topics: [go]\n", "  allowed-topics: [go, rust]\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			ok, _ := note(t, c, "", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "rust"}} })
			return ok
		}},
		{"max-filters", "", "  max-filters: 2\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			f := map[string]any{"kinds": []int{1}, "#t": []string{"limits"}}
			return closed(c, f, f, f)
		}},
		{"max-limit", "", "  max-limit: 1\n  default-limit: 1\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return limitsREQ(c, 3) == 1
		}},
		{"default-limit", "", "  default-limit: 2\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return limitsREQ(c, 0) == 2
		}},
		{"require-topic-in-req", "", "  require-topic-in-req: true\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return closed(c, map[string]any{"kinds": []int{1}})
		}},
		{"event-rate-ip", "  event-burst-ip: 2\n  event-rate-ip: 0\n", "  event-burst-ip: 2\n  event-rate-ip: 0.001\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return anyRefused(t, c, "", 3)
		}},
		{"event-burst-ip", "  event-rate-ip: 0.001\n  event-burst-ip: 100\n", "  event-rate-ip: 0.001\n  event-burst-ip: 2\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return anyRefused(t, c, "", 3)
		}},
		{"event-rate-pubkey", "  event-burst-pubkey: 2\n  event-rate-pubkey: 0\n", "  event-burst-pubkey: 2\n  event-rate-pubkey: 0.001\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return anyRefused(t, c, nostr.GeneratePrivateKey(), 3)
		}},
		{"event-burst-pubkey", "  event-rate-pubkey: 0.001\n  event-burst-pubkey: 100\n", "  event-rate-pubkey: 0.001\n  event-burst-pubkey: 2\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return anyRefused(t, c, nostr.GeneratePrivateKey(), 3)
		}},
		{"req-rate-ip", "  req-burst-ip: 2\n  req-rate-ip: 0\n", "  req-burst-ip: 2\n  req-rate-ip: 0.001\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			f := map[string]any{"kinds": []int{1}, "#t": []string{"limits"}, "limit": 1}
			return closed(c, f) || closed(c, f) || closed(c, f)
		}},
		{"req-burst-ip", "  req-rate-ip: 0.001\n  req-burst-ip: 100\n", "  req-rate-ip: 0.001\n  req-burst-ip: 2\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			f := map[string]any{"kinds": []int{1}, "#t": []string{"limits"}, "limit": 1}
			return closed(c, f) || closed(c, f) || closed(c, f)
		}},
		{"max-subscriptions", "", "  max-subscriptions: 1\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			keep, err := c.Subscribe("keep", map[string]any{"kinds": []int{1}, "#t": []string{"limits"}, "limit": 1})
			require.NoError(t, err)
			_, reason := keep.WaitEOSE()
			require.Empty(t, reason)
			refusedNow := closed(c, map[string]any{"kinds": []int{1}, "#t": []string{"limits"}, "limit": 1})
			require.NoError(t, keep.Close())
			return refusedNow
		}},
		{"max-conns-per-ip", "", "  max-conns-per-ip: 1\n", func(t *testing.T, r *reloadable, c *testkit.Client, ip string) bool {
			second, resp, err := testkit.ConnectHeader(t, "ws://"+r.addr, http.Header{"X-Real-IP": {ip}})
			if err != nil {
				require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
				ok, reason := note(t, c, "", nil) // the open connection stays
				require.True(t, ok, reason)
				return true
			}
			require.NoError(t, second.Close())
			return false
		}},
		{"query-timeout", "", "  query-timeout: 1ns\n", func(_ *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return closed(c, map[string]any{"kinds": []int{1}, "#t": []string{"limits"}})
		}},
		{"admin-pubkeys", "", "  admin-pubkeys: [" + testkit.Pub(admin) + "]\n", func(t *testing.T, r *reloadable, _ *testkit.Client, _ string) bool {
			resp, err := http.DefaultClient.Do(testkit.NIP86Request(t, "http://"+r.addr, admin, "supportedmethods", nil, nil))
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}},
		{"min-rank", "", "  min-rank: 50\n", func(t *testing.T, _ *reloadable, c *testkit.Client, _ string) bool {
			return refused(t, c, nil) // an unranked author, once a trust run exists
		}},
		{"log-level", "", "log-level: debug\n", func(t *testing.T, r *reloadable, c *testkit.Client, _ string) bool {
			before := strings.Count(r.logs.String(), `"msg":"authenticated"`)
			c.Auth(nostr.GeneratePrivateKey())
			return strings.Count(r.logs.String(), `"msg":"authenticated"`) > before
		}},
	}
	// min-rank needs a trust run: until one exists the gate admits everyone.
	_, err := r.db.Pool.Exec(context.Background(), `INSERT INTO cn_trust.runs
		(algorithm, snapshot_seq, as_of, params, seeds_source, started_at, finished_at, subjects, edges,
		 iterations, residual, changed, load_ms, compute_ms)
		VALUES ('trust-v1', 0, 0, '{}', 'uniform', now(), now(), 0, 0, 0, 0, 0, 0, 0)`)
	require.NoError(t, err)

	covered := map[string]bool{}
	for i, tc := range cases {
		covered[tc.flag] = true
		ip := fmt.Sprintf("10.0.%d.1", i)
		r.reload(tc.before)
		c := r.dial(ip)
		require.False(t, tc.probe(t, r, c, ip), "%s: the after behaviour before the reload", tc.flag)
		line := r.reload(tc.after)
		require.Contains(t, line, tc.flag, "%s: the log line names it", tc.flag)
		require.NotContains(t, line, `"needs_restart":"`+tc.flag, tc.flag)
		require.True(t, tc.probe(t, r, c, ip), "%s: the open connection does not see the change", tc.flag)
	}
	// Tested with a node key (groups, NIP-43) by TestReloadRanksAndGroupAdmins.
	covered["admit-min-rank"], covered["group-admit-min-rank"] = true, true
	for name := range relayLive {
		require.True(t, covered[name], "live flag --%s has no reload case", name)
	}
}

// tags publishes a note with n tags in all (its topic included) and returns
// whether it was accepted.
func tags(t *testing.T, c *testkit.Client, n int) bool {
	t.Helper()
	ok, _ := note(t, c, "", func(ev *nostr.Event) {
		for i := 1; i < n; i++ {
			ev.Tags = append(ev.Tags, nostr.Tag{"x", strconv.Itoa(i)})
		}
	})
	return ok
}

// TestReloadRefusesABadFileWhole: a file that does not parse, names an
// unknown key, gives a value its flag does not take or fails validation is
// refused whole, with one log line: the generation stays, and so does the
// running configuration, even its live settings the file changed validly.
func TestReloadRefusesABadFileWhole(t *testing.T) {
	r := startReloadable(t, "")
	r.reload("  max-tags: 5\n")
	c := r.dial("127.0.0.1")
	require.True(t, tags(t, c, 5))
	for _, tc := range []struct{ lines, want string }{
		{"  max-tags: 2\n  [oops\n", "yaml"},
		{"  max-tags: 2\n  max-tagz: 2\n", "unknown key"},
		{"  max-tags: 2\n  max-filters: many\n", "max-filters"},
		{"  max-tags: 2\n  default-topic: lounge\n  allowed-topics: [go]\n", "not an allowed topic"},
		{"  max-tags: 2\n  send-queue-bytes: 1000\n", "send queue bytes"},
		{"  max-tags: 2\n  min-rank: 101\n", "--min-rank"},
	} {
		line := r.refuse(tc.lines)
		require.Contains(t, line, tc.want, "%q", tc.lines)
		require.Equal(t, 1, strings.Count(r.logs.String(), line), "one line per refusal")
		require.True(t, tags(t, c, 5), "%q: the running max-tags changed", tc.lines)
	}
	// A good file after them applies.
	r.reload("  max-tags: 2\n")
	require.False(t, tags(t, c, 5))
}

// TestReloadRestartSettings: a changed setting that needs a restart (the
// listen address) is reported as such, on the reload's one line, and not
// applied: the relay keeps serving where it did. Live changes in the same
// file apply; the command line stays stronger than the file, as at start.
func TestReloadRestartSettings(t *testing.T) {
	r := startReloadable(t, "", "--max-filters", "3")
	r.reload("  max-tags: 5\n  max-filters: 5\n")
	c := r.dial("127.0.0.1")
	other := testkit.FreeAddr(t)
	// The base names listen first; a second listen key would not count (the
	// first value set wins), so the whole section is written here.
	r.base = strings.Replace(r.base, "listen: "+r.addr, "listen: "+other, 1)
	line := r.reload("  max-tags: 2\n  max-filters: 1\n  require-topic: false\n")
	require.Contains(t, line, `"changed":"max-tags"`)
	require.Contains(t, line, `"needs_restart":"listen,require-topic"`)
	require.False(t, tags(t, c, 5), "the live change applies")
	f := map[string]any{"kinds": []int{1}, "limit": 1}
	_, reason := c.Req("three", f, f, f)
	require.Empty(t, reason, "--max-filters 3 on the command line beats the file")
	ok, _ := note(t, c, "", func(ev *nostr.Event) { ev.Tags = nil })
	require.False(t, ok, "require-topic needs a restart: still in force")
	daemontest.WaitOK(t, "http://"+r.addr+"/healthz")
	_, err := http.Get("http://" + other + "/healthz")
	require.Error(t, err, "the new listen address is not served before a restart")
	// The next reload says it again: the running value is still the old one.
	require.Contains(t, r.reload("  max-tags: 2\n  max-filters: 1\n  require-topic: false\n"), `"needs_restart":"listen,require-topic"`)
}

// TestReloadConfigNIP86: an admin's NIP-86 reloadconfig reloads as SIGHUP
// does and answers what changed, or refuses a bad file (400).
func TestReloadConfigNIP86(t *testing.T) {
	admin := nostr.GeneratePrivateKey()
	r := startReloadable(t, "  admin-pubkeys: ["+testkit.Pub(admin)+"]\n")
	call := func() (int, map[string]any) {
		resp, err := http.DefaultClient.Do(testkit.NIP86Request(t, "http://"+r.addr, admin, "reloadconfig", nil, nil))
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	r.write("  max-tags: 3\n")
	code, body := call()
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, map[string]any{"generation": 2.0, "changed": []any{"max-tags"}, "needs_restart": []any{}}, body["result"])
	require.Equal(t, 2, r.metric("cn_config_generation"))
	c := r.dial("127.0.0.1")
	require.False(t, tags(t, c, 4))

	r.write("  max-tags: x\n")
	code, body = call()
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body["error"], "configuration refused")
	require.Equal(t, 1, r.metric("cn_config_reload_failures_total"))
	require.Equal(t, 2, r.metric("cn_config_generation"))
}

// TestSIGHUPReloadsTheProcess sends a real SIGHUP to a relay process (this
// test binary running main, as the relay binary does): its generation goes
// to 2 and the new limit applies on a connection opened before.
func TestSIGHUPReloadsTheProcess(t *testing.T) {
	db := pgtest.New(t)
	addr, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "node.yaml")
	write := func(extra string) {
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf("relay:\n  listen: %s\n  metrics-listen: %s\n%s", addr, metrics, extra)), 0o600))
	}
	write("")
	exe, err := os.Executable()
	require.NoError(t, err)
	var logs testkit.Buffer
	cmd := exec.Command(exe, "--config", file, "--database-url", db.URL)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(daemontest.StopTimeout):
			_ = cmd.Process.Kill()
			t.Error("relay process did not stop on SIGTERM")
		}
	})
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	r := &reloadable{t: t, metrics: metrics, logs: &logs}
	require.Equal(t, 1, r.metric("cn_config_generation"))
	c := testkit.Dial(t, "ws://"+addr)
	require.True(t, tags(t, c, 4))

	write("  max-tags: 3\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	r.waitMetric("cn_config_generation", 2)
	require.False(t, tags(t, c, 4), "the open connection sees the new limit")
	require.Contains(t, r.lastLog("relay: configuration reloaded"), `"changed":"max-tags"`)
}

// trustRun records a trust-v1 run ranking each of pubkeys at rank: the rank
// gates take ranks once a run exists.
func trustRun(t *testing.T, db *pgtest.DB, rank int, pubkeys ...string) {
	t.Helper()
	ctx := context.Background()
	var run int64
	require.NoError(t, db.Pool.QueryRow(ctx, `INSERT INTO cn_trust.runs
		(algorithm, snapshot_seq, as_of, params, seeds_source, started_at, finished_at, subjects, edges,
		 iterations, residual, changed, load_ms, compute_ms)
		VALUES ('trust-v1', 0, 0, '{}', 'uniform', now(), now(), 0, 0, 0, 0, 0, 0, 0) RETURNING id`).Scan(&run))
	for _, pk := range pubkeys {
		_, err := db.Pool.Exec(ctx, `INSERT INTO cn_trust.scores (pubkey, rank, score, risk, run_id) VALUES ($1, $2, 0.1, 0, $3)`, pk, rank, run)
		require.NoError(t, err)
	}
}

// TestReloadRanksAndGroupAdmins: with the node key, a reload sets the NIP-43
// admission rank (--admit-min-rank), the NIP-29 one
// (--group-admit-min-rank) and the admins the group policy knows, on a
// connection opened before.
func TestReloadRanksAndGroupAdmins(t *testing.T) {
	key, _ := daemontest.KeyFiles(t)
	t.Run("admit-min-rank", func(t *testing.T) {
		r := startReloadable(t, "  node-key-file: "+key+"\n  membership: invite\n")
		a, b := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
		trustRun(t, r.db, 60, testkit.Pub(a), testkit.Pub(b))
		c := r.dial("127.0.0.1")
		c.Auth(a)
		c.Auth(b)
		ok, reason := c.Publish(testkit.SignNow(t, a, 28934, nostr.Tags{{"-"}}, ""))
		require.False(t, ok)
		require.Equal(t, "restricted: pending review: no invite code; your join request is kept for the relay's admins", reason)
		require.Contains(t, r.reload("  admit-min-rank: 50\n"), `"changed":"admit-min-rank"`)
		ok, reason = c.Publish(testkit.SignNow(t, b, 28934, nostr.Tags{{"-"}}, ""))
		require.True(t, ok, reason)
		require.Equal(t, "info: welcome: admitted at once, your web-of-trust rank (trust-v1) is at least 50", reason)
		r.reload("  admit-min-rank: 70\n")
		ok, reason = c.Publish(testkit.SignNow(t, a, 28934, nostr.Tags{{"-"}}, ""))
		require.False(t, ok)
		require.Contains(t, reason, "a web-of-trust rank below 70")
	})
	t.Run("group-admit-min-rank and group admins", func(t *testing.T) {
		r := startReloadable(t, "  node-key-file: "+key+"\n  group-creators: admins\n")
		admin, d, e := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
		trustRun(t, r.db, 0)
		c := r.dial("127.0.0.1")
		create := func(id string) (bool, string) {
			return c.Publish(testkit.SignNow(t, admin, 9007, nostr.Tags{{"h", id}}, ""))
		}
		ok, reason := create("open")
		require.False(t, ok, "not an admin yet: %s", reason)
		r.reload("  admin-pubkeys: [" + testkit.Pub(admin) + "]\n")
		ok, reason = create("open")
		require.True(t, ok, "an admin by the reload may create a group: %s", reason)
		ok, reason = c.Publish(testkit.SignNow(t, d, 9021, nostr.Tags{{"h", "open"}}, ""))
		require.True(t, ok, reason)
		require.Contains(t, r.reload("  admin-pubkeys: ["+testkit.Pub(admin)+"]\n  group-admit-min-rank: 50\n"), `"changed":"group-admit-min-rank"`)
		ok, reason = c.Publish(testkit.SignNow(t, e, 9021, nostr.Tags{{"h", "open"}}, ""))
		require.False(t, ok)
		require.Contains(t, reason, "50")
	})
}
