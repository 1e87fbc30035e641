package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/node/nodetest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
)

func blossomUpload(t *testing.T, base, sk string, data []byte) *http.Response {
	t.Helper()
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	ev := nostr.Event{Kind: blossom.KindAuth, CreatedAt: nostr.Now() - 1, Content: "Upload " + nostr.GeneratePrivateKey()[:8],
		Tags: nostr.Tags{{"t", "upload"}, {"x", h}, {"expiration", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}}}
	require.NoError(t, ev.Sign(sk))
	raw, _ := json.Marshal(ev)
	req, err := http.NewRequest(http.MethodPut, base+"/upload", bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Nostr "+base64.RawURLEncoding.EncodeToString(raw))
	req.Header.Set("Content-Type", "text/plain")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestRelayServesBlossom: node.Relay with Blossom serves it on the relay's
// address beside WebSocket, NIP-11 (which names it) and /healthz; uploads
// follow the relay's notion of a member (here open mode: a key becomes one
// by its first accepted post).
func TestRelayServesBlossom(t *testing.T) {
	db := pgtest.New(t)
	cfg := nodetest.RelayConfig(t)
	dir := t.TempDir()
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler),
		Blossom: &node.BlossomOptions{Dir: dir}}, false)
	base := "http://" + cfg.Listen

	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var info struct {
		Blossom *struct {
			URL          string `json:"url"`
			MaxBlobBytes int64  `json:"max_blob_bytes"`
		} `json:"blossom"`
		SupportedNIPs []int `json:"supported_nips"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&info))
	res.Body.Close()
	require.NotNil(t, info.Blossom, "NIP-11 names the Blossom server")
	require.Equal(t, base, info.Blossom.URL)
	require.Equal(t, int64(node.DefaultBlossomMaxBlobBytes), info.Blossom.MaxBlobBytes)
	require.NotEmpty(t, info.SupportedNIPs)

	sk := nostr.GeneratePrivateKey()
	data := []byte("a voice note")
	res = blossomUpload(t, base, sk, data)
	require.Equal(t, http.StatusForbidden, res.StatusCode, "not a member yet")
	require.Contains(t, res.Header.Get("X-Reason"), "members")

	c := testkit.Dial(t, "ws://"+cfg.Listen)
	post := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: "hello", Tags: nostr.Tags{{"t", "general"}}}
	require.NoError(t, post.Sign(sk))
	ok, msg := c.Publish(post)
	require.True(t, ok, msg)

	res = blossomUpload(t, base, sk, data)
	require.Equal(t, http.StatusCreated, res.StatusCode, res.Header.Get("X-Reason"))
	var d struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&d))
	got, err := http.Get(d.URL)
	require.NoError(t, err)
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	require.Equal(t, http.StatusOK, got.StatusCode)
	require.Equal(t, data, body)
	require.Equal(t, "*", got.Header.Get("Access-Control-Allow-Origin"))

	hz, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	hz.Body.Close()
	require.Equal(t, http.StatusOK, hz.StatusCode, "the relay's own paths are the relay's")
}

// TestBlossomOnItsOwnAddress: with BlossomOptions.Listen, Blossom answers
// there and not on the relay's address.
func TestBlossomOnItsOwnAddress(t *testing.T) {
	db := pgtest.New(t)
	cfg := nodetest.RelayConfig(t)
	own := testkit.FreeAddr(t)
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler),
		Blossom: &node.BlossomOptions{Dir: t.TempDir(), Listen: own}}, false)
	path := "/list/" + nostr.GeneratePrivateKey()
	res, err := http.Get("http://" + cfg.Listen + path)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + own + path)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
}

// stalling sends a few bytes, then nothing until released.
type stalling struct {
	first   []byte
	release chan struct{}
}

func (b *stalling) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// TestSlowUploadOnTheRelayAddress: the upload timeout holds on the relay's
// own listener (its acceptor hands the connection to net/http, and the read
// deadline reaches the socket): a stalled body is answered 408.
func TestSlowUploadOnTheRelayAddress(t *testing.T) {
	db := pgtest.New(t)
	cfg := nodetest.RelayConfig(t)
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler),
		Blossom: &node.BlossomOptions{Dir: t.TempDir(), UploadTimeout: 500 * time.Millisecond}}, false)
	sk := nostr.GeneratePrivateKey()
	c := testkit.Dial(t, "ws://"+cfg.Listen)
	post := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: "hello", Tags: nostr.Tags{{"t", "general"}}}
	require.NoError(t, post.Sign(sk))
	ok, msg := c.Publish(post)
	require.True(t, ok, msg)

	sum := sha256.Sum256([]byte("never sent"))
	h := hex.EncodeToString(sum[:])
	ev := nostr.Event{Kind: blossom.KindAuth, CreatedAt: nostr.Now() - 1, Content: "Upload",
		Tags: nostr.Tags{{"t", "upload"}, {"x", h}, {"expiration", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}}}
	require.NoError(t, ev.Sign(sk))
	raw, _ := json.Marshal(ev)
	body := &stalling{first: []byte("0123456789"), release: make(chan struct{})}
	defer close(body.release)
	req, err := http.NewRequest(http.MethodPut, "http://"+cfg.Listen+"/upload", body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Nostr "+base64.RawURLEncoding.EncodeToString(raw))
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode)
	require.Less(t, time.Since(start), 10*time.Second)
}

// TestBlossomBlockIPAndRatePerAddress: Blossom requests on the relay's
// address are held to the relay's per-address protections, with the client
// address the relay sees (--real-ip-header): an address NIP-86 blockip
// names is refused 403 with X-Reason (others are served), and one past
// --blossom-request-rate-ip 429 with Retry-After (others keep their budget).
func TestBlossomBlockIPAndRatePerAddress(t *testing.T) {
	db := pgtest.New(t)
	cfg := nodetest.RelayConfig(t)
	cfg.RealIPHeader = "X-Real-IP"
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler),
		Blossom: &node.BlossomOptions{Dir: t.TempDir(), RequestRatePerIP: ratelimit.Rate{PerSecond: 0.001, Burst: 3}}}, false)
	path := "http://" + cfg.Listen + "/list/" + nostr.GeneratePrivateKey()
	get := func(ip string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-Real-IP", ip)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}

	a := &relayadmin.Admin{Pool: db.Pool, Store: store.NewPublisher(), TopicRules: protocol.DefaultTopicRules()}
	_, err := a.Do(context.Background(), relayadmin.Actor{Name: "test", Source: "cnctl"}, "blockip",
		[]json.RawMessage{json.RawMessage(`"192.0.2.0/24"`), json.RawMessage(`"abuse"`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return get("192.0.2.7").StatusCode == http.StatusForbidden },
		10*time.Second, 20*time.Millisecond, "the relay's policy learns the block")
	res := get("192.0.2.8")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, res.Header.Get("X-Reason"), "blocked")

	for range 3 {
		require.Equal(t, http.StatusOK, get("198.51.100.1").StatusCode)
	}
	res = get("198.51.100.1")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.Contains(t, res.Header.Get("X-Reason"), "rate-limited")
	require.Equal(t, http.StatusOK, get("198.51.100.2").StatusCode, "another address has its own budget")
}

// TestBlossomHideThroughNIP86: with Blossom on, the relay serves the NIP-86
// methods hideblob and unhideblob (what the console's Media page calls, and
// what cnctl blobs hide|unhide do): an admin's hideblob makes the blob 451,
// unhideblob serves it again; a key that is not an admin is refused, and a
// blob not stored is a bad request.
func TestBlossomHideThroughNIP86(t *testing.T) {
	db := pgtest.New(t)
	cfg := nodetest.RelayConfig(t)
	admin := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(admin)
	nodetest.StartRelay(t, node.RelayOptions{DatabaseURL: db.URL, Relay: cfg, Logger: slog.New(slog.DiscardHandler),
		AdminPubkeys: []string{adminPK}, Blossom: &node.BlossomOptions{Dir: t.TempDir()}}, false)
	base := "http://" + cfg.Listen
	data := []byte("a reported picture")
	res := blossomUpload(t, base, admin, data) // the admin is a member
	require.Equal(t, http.StatusCreated, res.StatusCode, res.Header.Get("X-Reason"))
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	status := func() int {
		res, err := http.Get(base + "/" + h)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	call := func(sk, method string, params ...any) (int, map[string]any) {
		res, err := http.DefaultClient.Do(testkit.NIP86Request(t, base, sk, method, params, nil))
		require.NoError(t, err)
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}

	code, out := call(nostr.GeneratePrivateKey(), "hideblob", h, "spam")
	require.Equal(t, http.StatusForbidden, code, out)
	require.Equal(t, http.StatusOK, status())

	code, out = call(admin, "supportedmethods")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, out["result"], "hideblob")
	require.Contains(t, out["result"], "unhideblob")

	code, out = call(admin, "hideblob", h, "reported")
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, true, out["result"])
	require.Equal(t, http.StatusUnavailableForLegalReasons, status())
	code, out = call(admin, "hideblob", h)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, false, out["result"], "already hidden")

	var actor string
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT actor FROM cn_blossom.log WHERE op = 'hide' AND sha256 = decode($1, 'hex')", h).Scan(&actor))
	require.Equal(t, adminPK, actor, "the admin's key is the actor in the blob log")

	code, out = call(admin, "unhideblob", h)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, true, out["result"])
	require.Equal(t, http.StatusOK, status())

	code, _ = call(admin, "hideblob", strings.Repeat("0", 64))
	require.Equal(t, http.StatusBadRequest, code, "a blob not stored")
	code, _ = call(admin, "hideblob", "../etc")
	require.Equal(t, http.StatusBadRequest, code)
}
