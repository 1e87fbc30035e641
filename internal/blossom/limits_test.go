package blossom_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
)

// TestBlockedAddress: a client address Deps.IPBlocked names (NIP-86
// blockip) is refused 403 with X-Reason on every endpoint, uploads
// included, and served again once unblocked.
func TestBlockedAddress(t *testing.T) {
	t.Parallel()
	var blocked atomic.Bool
	var seen atomic.Value
	n := newNodeWith(t, blossom.Config{}, func(d *blossom.Deps) {
		d.IPBlocked = func(ip string) bool { seen.Store(ip); return blocked.Load() }
	})
	u := n.member(newUser(t))
	require.Equal(t, http.StatusCreated, n.upload(u, []byte("before the block"), "text/plain").status)

	blocked.Store(true)
	for _, r := range []reply{
		n.upload(u, []byte("during the block"), "text/plain"),
		n.do(http.MethodGet, "/"+hashOf([]byte("before the block")), "", nil, nil),
		n.do(http.MethodGet, "/list/"+u.pk, "", nil, nil),
		n.do(http.MethodHead, "/upload", "", nil, nil),
		n.do(http.MethodOptions, "/upload", "", nil, nil),
	} {
		require.Equal(t, http.StatusForbidden, r.status)
		require.Contains(t, r.reason, "blocked")
		require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
	}
	require.Equal(t, "127.0.0.1", seen.Load(), "without Deps.ClientIP the TCP peer is the address")

	blocked.Store(false)
	require.Equal(t, http.StatusOK, n.do(http.MethodGet, "/list/"+u.pk, "", nil, nil).status)
}

// TestRateLimitsPerAddress: past Config.UploadRatePerIP's burst an upload is
// refused 429 with X-Reason and Retry-After, before its body is read; past
// RequestRatePerIP's burst any request is. Another address keeps its own
// budget (Deps.ClientIP names it).
func TestRateLimitsPerAddress(t *testing.T) {
	t.Parallel()
	var addr atomic.Value
	addr.Store("192.0.2.1")
	n := newNodeWith(t, blossom.Config{
		UploadRatePerIP:  ratelimit.Rate{PerSecond: 0.001, Burst: 2},
		RequestRatePerIP: ratelimit.Rate{PerSecond: 0.001, Burst: 6},
	}, func(d *blossom.Deps) {
		d.ClientIP = func(*http.Request) string { return addr.Load().(string) }
	})
	u := n.member(newUser(t))
	require.Equal(t, http.StatusCreated, n.upload(u, []byte("one"), "text/plain").status)
	require.Equal(t, http.StatusCreated, n.upload(u, []byte("two"), "text/plain").status)
	r := n.upload(u, []byte("three"), "text/plain")
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Contains(t, r.reason, "uploads")
	wait, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds")
	require.Greater(t, wait, 0)
	require.Contains(t, r.header.Get("Access-Control-Expose-Headers"), "Retry-After")

	// Three requests used; three more pass, the seventh does not.
	for range 3 {
		require.Equal(t, http.StatusOK, n.do(http.MethodGet, "/list/"+u.pk, "", nil, nil).status)
	}
	r = n.do(http.MethodGet, "/"+hashOf([]byte("one")), "", nil, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Contains(t, r.reason, "requests")
	require.NotEmpty(t, r.header.Get("Retry-After"))

	addr.Store("192.0.2.2")
	require.Equal(t, http.StatusOK, n.do(http.MethodGet, "/"+hashOf([]byte("one")), "", nil, nil).status)
	require.Equal(t, http.StatusCreated, n.upload(u, []byte("three"), "text/plain").status)
}
