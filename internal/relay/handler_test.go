package relay

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/protocol"
)

func getInfo(t *testing.T, url string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return resp, doc
}

func TestNIP11(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.Info = Info{Name: "test relay", Description: "for tests", Contact: "mailto:ops@example.com", Version: "v1"}
		c.MaxSubscriptions = 7
		c.Limits.MaxMessageBytes = 5000
		c.Limits.MaxLimit = 300
		c.Limits.Search = false
	})
	resp, doc := getInfo(t, tr.http)
	require.Equal(t, "application/nostr+json", resp.Header.Get("Content-Type"))
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.NotEmpty(t, resp.Header.Get("Access-Control-Allow-Headers"))
	require.NotEmpty(t, resp.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "test relay", doc["name"])
	require.Equal(t, "mailto:ops@example.com", doc["contact"])
	require.Equal(t, []any{1.0, 9.0, 11.0, 40.0, 42.0, 45.0, 70.0, 77.0}, doc["supported_nips"], "AUTH is offered by default (direct messages), NIP-77 too")
	lim := doc["limitation"].(map[string]any)
	require.Equal(t, 5000.0, lim["max_message_length"])
	require.Equal(t, 7.0, lim["max_subscriptions"])
	require.Equal(t, 300.0, lim["max_limit"])
	require.Equal(t, 100.0, lim["default_limit"])
	require.Equal(t, 10.0, lim["max_filters"])
	require.Equal(t, 64.0, lim["max_subid_length"])
	require.Equal(t, 2000.0, lim["max_event_tags"])
	require.Equal(t, 65536.0, lim["max_content_length"])
	require.Equal(t, 900.0, lim["created_at_upper_limit"])
	require.Equal(t, 630720000.0, lim["created_at_lower_limit"], "20 years")
	require.Equal(t, false, lim["auth_required"])
	require.Equal(t, true, lim["restricted_writes"], "topics are required")
	require.Equal(t, map[string]any{
		"events_need_topic": true, "inherit_from": []any{"e", "E", "a", "A", "q"},
		"identity_kinds": protocol.IdentityKindsText, "identity_writers": "members", "req_requires_topic": false,
		"newcomer_identity": "pending until the key is a member (its first post in a topic, an operator's allowpubkey, or a trust rank at the relay's gate)",
		"person_kinds":      []any{4.0, 1059.0, 1984.0, 1985.0, 9735.0},
		"private_kinds":     []any{4.0, 1059.0},
		"ephemeral":         "delivered live to every matching subscription of every relay of this node; never stored",
		"tag_t":             "an event's own t tags, every kind (identity events included); never inherited topics",
	}, doc["topic_policy"], "the topic policy in force")

	authed := startRelay(t, nil, func(c *Config) {
		c.Auth = AuthConfig{Enabled: true, RequiredForReads: true, RequiredForWrites: true}
	})
	_, doc = getInfo(t, authed.http)
	require.Equal(t, []any{1.0, 9.0, 11.0, 40.0, 42.0, 45.0, 50.0, 70.0, 77.0}, doc["supported_nips"], "search is on by default")
	strict := startRelay(t, nil, func(c *Config) {
		c.Limits.RequireTopicInREQ = true
		c.Limits.AllowedTopics = map[string]bool{"go": true, "nostr": true}
		c.Limits.IdentityWriters = protocol.IdentityWritersAny
	})
	_, sdoc := getInfo(t, strict.http)
	policy := sdoc["topic_policy"].(map[string]any)
	require.Equal(t, true, policy["req_requires_topic"])
	require.Equal(t, "any", policy["identity_writers"])
	require.Equal(t, []any{"go", "nostr"}, policy["allowed_topics"])
	require.Equal(t, true, doc["limitation"].(map[string]any)["auth_required"])

	// CORS preflight.
	req, err := http.NewRequest(http.MethodOptions, tr.http, nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestHTTPEndpoints(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	get := func(path string) (int, string) {
		resp, err := http.Get(tr.http + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body = get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Nostr relay")
	code, _ = get("/nope")
	require.Equal(t, http.StatusNotFound, code)

	c := dial(t, tr.url)
	c.send("REQ", "s", goFilter())
	c.eose("s")
	code, _ = get("/metrics")
	require.Equal(t, http.StatusNotFound, code, "metrics are not served on the public address")
	metrics := httptest.NewServer(tr.MetricsHandler())
	defer metrics.Close()
	resp, err := http.Get(metrics.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body = string(raw)
	for _, name := range []string{"cn_relay_connections 1", `cn_relay_messages_total{type="REQ"} 1`, "cn_relay_subscriptions 1"} {
		require.Contains(t, body, name)
	}
}

func TestConnectionsPerIP(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) { c.MaxConnsPerIP = 2 })
	a := dial(t, tr.url)
	dial(t, tr.url)
	_, resp, err := websocket.DefaultDialer.Dial(tr.url, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	// A closed connection frees its slot.
	require.NoError(t, a.tk.Close())
	require.Eventually(t, func() bool {
		ws, _, err := websocket.DefaultDialer.Dial(tr.url, nil)
		if err != nil {
			return false
		}
		ws.Close()
		return true
	}, waitTimeout, 10*time.Millisecond)
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	r := &Relay{}
	req, err := http.NewRequest(http.MethodGet, "/", nil)
	require.NoError(t, err)
	req.RemoteAddr = "10.0.0.1:5555"
	ip := func() string {
		t.Helper()
		ip, _ := r.clientIP(req)
		return ip
	}
	req.Header.Set("X-Forwarded-For", "6.6.6.6, 192.0.2.7")
	require.Equal(t, "10.0.0.1", ip(), "headers are ignored unless configured")
	r.cfg.RealIPHeader = "X-Forwarded-For"
	require.Equal(t, "192.0.2.7", ip(), "the entry the proxy added, not the client's")
	req.Header.Del("X-Forwarded-For")
	require.Equal(t, "10.0.0.1", ip())
	for in, want := range map[string]string{
		"192.0.2.7:5555": "192.0.2.7", "[2001:db8::1]:443": "2001:db8::1", "fe80::1%eth0": "fe80::1", " 2001:DB8::2 ": "2001:db8::2",
	} {
		req.Header.Set("X-Forwarded-For", in)
		got, bad := r.clientIP(req)
		require.Equal(t, want, got, in)
		require.False(t, bad, in)
	}
	for _, in := range []string{"not-an-ip-1", "6.6.6.6, unknown", "192.0.2.999", "", "1.2.3.4:x"} {
		req.Header.Set("X-Forwarded-For", in)
		got, bad := r.clientIP(req)
		require.Equal(t, "10.0.0.1", got, in)
		require.True(t, bad, in)
	}
}

func TestIPKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"192.0.2.7:5555", "192.0.2.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:DB8:1:2::FFFF", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"unknown", "unknown"},
		{"192.0.2.999", "192.0.2.999"},
		{"", ""},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, ratelimit.AddrKey(tc.ip), tc.ip)
	}
}

// TestConnectionsPerIPv6Prefix: addresses of one IPv6 /64 share the per-IP limits;
// another /64 has its own.
func TestConnectionsPerIPv6Prefix(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.MaxConnsPerIP = 2
		c.RealIPHeader = "X-Real-IP"
	})
	dialFrom := func(ip string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial(tr.url, http.Header{"X-Real-IP": {ip}})
	}
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2"} {
		ws, _, err := dialFrom(ip)
		require.NoError(t, err)
		defer ws.Close()
	}
	_, resp, err := dialFrom("2001:db8:1:2:ffff::3")
	require.Error(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	ws, _, err := dialFrom("2001:db8:1:3::1")
	require.NoError(t, err, "another /64")
	ws.Close()
}
