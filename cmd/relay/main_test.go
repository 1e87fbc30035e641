package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/oneline"
	"github.com/kukuri/communitynode/internal/testkit"
)

// runMainEnv, set to 1, makes the test binary run the relay's main instead
// of the tests (TestSIGHUPReloadsTheProcess runs it as a process).
const runMainEnv = "CN_RELAY_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	pgtest.Main(m)
}

// TestRunServesAndStops runs the command against a real database: it serves a
// publish and a REQ, then stops cleanly on cancel.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	addr := testkit.FreeAddr(t)
	var logs testkit.Buffer
	metrics := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, &logs), "relay", "--listen", addr, "--metrics-listen", metrics,
		"--database-url", db.URL, "--name", "smoke")
	daemontest.WaitOK(t, "http://"+addr+"/healthz")
	// /metrics is served on --metrics-listen only, never on the public address.
	require.Contains(t, daemontest.WaitOK(t, "http://"+metrics+"/metrics"), "cn_relay_connections")
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	c := testkit.Dial(t, "ws://"+addr)
	defer c.Close()
	// With the default flags the NIP-42 challenge is the first message, before
	// the client has sent anything.
	challenge := c.Next()
	require.Equal(t, "AUTH", challenge.Label(), "%s", challenge)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "smoke"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	require.NoError(t, c.Send("EVENT", ev))
	require.Equal(t, []any{"OK", ev.ID, true, ""}, c.Next().Values())
	require.NoError(t, c.Send("REQ", "s", map[string]any{"#t": []string{"go"}}))
	got := c.Next().Values()
	require.Equal(t, "EVENT", got[0])
	require.Equal(t, ev.ID, got[2].(map[string]any)["id"])
	require.Equal(t, []any{"EOSE", "s"}, c.Next().Values())

	stop()
	require.Contains(t, logs.String(), `"msg":"relay stopped"`)
}

// TestAuthChallengeFlag: the challenge goes out on connect unless
// --auth-challenge-on-connect=false (or CN_RELAY_AUTH_CHALLENGE_ON_CONNECT=false)
// asks for it lazily.
func TestAuthChallengeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", true},
		{[]string{"--auth-challenge-on-connect=false"}, "", false},
		{nil, "false", false},
		{[]string{"--auth-challenge-on-connect"}, "false", true},
	} {
		t.Setenv("CN_RELAY_AUTH_CHALLENGE_ON_CONNECT", tc.env)
		if tc.env == "" {
			require.NoError(t, os.Unsetenv("CN_RELAY_AUTH_CHALLENGE_ON_CONNECT"))
		}
		app := newApp(io.Discard, io.Discard)
		var got node.RelayOptions
		app.Action = func(c *cli.Context) error {
			var err error
			got, err = relayOptions(c)
			return err
		}
		require.NoError(t, app.RunContext(context.Background(), append([]string{"relay", "--database-url", "postgres://x"}, tc.args...)))
		require.Equal(t, tc.want, got.Relay.Auth.ChallengeOnConnect, "%v %q", tc.args, tc.env)
		require.True(t, got.Relay.Auth.Enabled)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"relay"}, "database-url"},
		{[]string{"relay", "--database-url", "postgres://x", "--batch-max-events", "0"}, "batch max events"},
		{[]string{"relay", "--database-url", "postgres://x", "--auth=false", "--auth-required-for-reads"}, "not enabled"},
		{[]string{"relay", "--database-url", "postgres://x", "--log-level", "loud"}, "--log-level"},
		{[]string{"relay", "--database-url", "postgres://x", "extra"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		err := newApp(io.Discard, io.Discard).RunContext(context.Background(), tc.args)
		require.Error(t, err, tc.args)
		require.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// TestNIP11Complete: the NIP-11 document from an info file, flags over it, the
// node key's pubkey as `self`, and 86 when admins are set.
func TestNIP11Complete(t *testing.T) {
	db := pgtest.New(t)
	addr := testkit.FreeAddr(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "node.key")
	key, err := nodekey.Generate(keyFile)
	require.NoError(t, err)
	info := filepath.Join(dir, "info.json")
	require.NoError(t, os.WriteFile(info, []byte(`{
		"name": "from the file", "description": "Tokyo's Nostr community", "icon": "https://example.com/i.png",
		"banner": "https://example.com/b.png", "contact": "mailto:ops@example.com",
		"posting_policy": "https://example.com/policy", "terms_of_service": "https://example.com/tos",
		"relay_countries": ["JP"], "language_tags": ["ja", "en"], "tags": ["community"],
		"retention": [{"kinds": [0, 3, [10000, 19999]]}, {"time": 7776000}]}`), 0o600))
	admin := strings.Repeat("ab", 32)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "relay", "--listen", addr, "--metrics-listen", "", "--database-url", db.URL, "--info-file", info,
		"--name", "from the flag", "--node-key-file", keyFile, "--admin-pubkeys", admin)
	var doc map[string]any
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr, nil)
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&doc) == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "from the flag", doc["name"], "flags override the file")
	require.Equal(t, "Tokyo's Nostr community", doc["description"])
	require.Equal(t, "https://example.com/i.png", doc["icon"])
	require.Equal(t, "https://example.com/b.png", doc["banner"])
	require.Equal(t, key.PubKey, doc["self"], "self is the node key")
	require.Equal(t, "https://example.com/policy", doc["posting_policy"])
	require.Equal(t, "https://example.com/tos", doc["terms_of_service"])
	require.Equal(t, []any{"JP"}, doc["relay_countries"])
	require.Equal(t, []any{map[string]any{"kinds": []any{0.0, 3.0, []any{10000.0, 19999.0}}}, map[string]any{"time": 7776000.0}}, doc["retention"])
	require.Contains(t, doc["supported_nips"], 86.0)
	require.NotEmpty(t, doc["software"])
	require.Contains(t, doc, "limitation")
	require.Contains(t, doc, "topic_policy")
	stop()

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"nmae": "typo"}`), 0o600))
	err = newApp(io.Discard, io.Discard).RunContext(context.Background(), []string{"relay", "--database-url", "postgres://x", "--info-file", bad})
	require.ErrorContains(t, err, "unknown field")
	err = newApp(io.Discard, io.Discard).RunContext(context.Background(), []string{"relay", "--database-url", "postgres://x", "--admin-pubkeys", "npub1nope"})
	require.ErrorContains(t, err, "admin pubkeys")
}

// TestSecondRelayNamesTheAddressFlag: a second relay on the host whose /metrics
// (or public) address the first one holds exits at once, and its error line
// (what main prints after "relay: ") says which flag and variable to set;
// relay --help says so beforehand.
func TestSecondRelayNamesTheAddressFlag(t *testing.T) {
	db := pgtest.New(t)
	addr, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
	daemontest.Start(t, newApp(io.Discard, io.Discard), "relay", "--listen", addr, "--metrics-listen", metrics, "--database-url", db.URL)
	daemontest.WaitOK(t, "http://"+metrics+"/metrics")

	for _, tc := range []struct {
		listen, metrics, want string
	}{
		{testkit.FreeAddr(t), metrics, "listen on metrics address " + metrics + ": address already in use (set --metrics-listen / CN_RELAY_METRICS_LISTEN)"},
		{addr, testkit.FreeAddr(t), "listen on relay address " + addr + ": address already in use (set --listen / CN_RELAY_LISTEN)"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := newApp(io.Discard, io.Discard).RunContext(ctx, []string{"relay", "--listen", tc.listen, "--metrics-listen", tc.metrics, "--database-url", db.URL})
		cancel()
		require.Error(t, err)
		require.Equal(t, tc.want, oneline.Error(err))
		require.Equal(t, 1, daemon.ExitCode(err))
	}

	var help bytes.Buffer
	require.NoError(t, newApp(&help, io.Discard).Run([]string{"relay", "--help"}))
	require.Regexp(t, `--metrics-listen value .*each relay on a host needs its own, as it needs its own --listen .*\[\$CN_RELAY_METRICS_LISTEN\]`, help.String())
}
