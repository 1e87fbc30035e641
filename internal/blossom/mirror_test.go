package blossom_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
)

// origin is another server holding blobs (an httptest server on loopback).
func origin(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// mirror PUTs /mirror of url as u, with an upload authorization naming hash.
func (n *node) mirror(u user, hash, url string) reply {
	n.t.Helper()
	body, err := json.Marshal(map[string]string{"url": url})
	require.NoError(n.t, err)
	return n.do(http.MethodPut, "/mirror", u.auth(n.t, blossom.VerbUpload, []string{hash}, nil), bytes.NewReader(body),
		map[string]string{"Content-Type": "application/json"})
}

// TestMirror: PUT /mirror (BUD-04) fetches the URL and stores its blob as
// the authorization's key's upload, with the origin's content type; a blob
// whose hash is not the x tag's is refused 409 and not stored; the origin's
// refusal is 502; a non-member is refused before any fetch.
func TestMirror(t *testing.T) {
	t.Parallel()
	data := []byte("a picture on another server")
	var fetched atomic.Int32
	src := origin(t, func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/pic", http.StatusFound)
			return
		}
		if r.URL.Path == "/elsewhere" {
			http.Redirect(w, r, "gopher://example.com/pic", http.StatusFound)
			return
		}
		if r.URL.Path != "/pic" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(data)
	})
	n := newNode(t, blossom.Config{MirrorPrivate: true})
	u := n.member(newUser(t))
	h := hashOf(data)

	r := n.mirror(u, h, src+"/pic")
	require.Equal(t, http.StatusCreated, r.status, r.reason)
	d := decode[desc](t, r)
	require.Equal(t, h, d.SHA256)
	require.Equal(t, int64(len(data)), d.Size)
	require.Equal(t, "image/png", d.Type)
	got := n.do(http.MethodGet, "/"+h, "", nil, nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, data, got.body)
	list := decode[[]desc](t, n.do(http.MethodGet, "/list/"+u.pk, "", nil, nil))
	require.Len(t, list, 1, "the mirror is the key's upload")

	v := n.member(newUser(t))
	r = n.mirror(v, h, src+"/moved")
	require.Equal(t, http.StatusOK, r.status, "a redirect is followed (200: the blob was stored already): %s", r.reason)
	require.Len(t, decode[[]desc](t, n.do(http.MethodGet, "/list/"+v.pk, "", nil, nil)), 1, "a claim of v's")
	r = n.mirror(v, hashOf([]byte("x")), src+"/elsewhere")
	require.Equal(t, http.StatusBadGateway, r.status, "not to another scheme")

	other := hashOf([]byte("something else"))
	r = n.mirror(u, other, src+"/pic")
	require.Equal(t, http.StatusConflict, r.status)
	require.Contains(t, r.reason, "x tag")
	require.Equal(t, http.StatusNotFound, n.do(http.MethodGet, "/"+other, "", nil, nil).status)

	r = n.mirror(u, other, src+"/missing")
	require.Equal(t, http.StatusBadGateway, r.status)
	require.Contains(t, r.reason, "404")

	before := fetched.Load()
	r = n.mirror(newUser(t), h, src+"/pic")
	require.Equal(t, http.StatusForbidden, r.status, "only members")
	require.Equal(t, before, fetched.Load(), "refused before any fetch")

	// A reused authorization is refused, as for uploads.
	body, _ := json.Marshal(map[string]string{"url": src + "/pic"})
	auth := u.auth(t, blossom.VerbUpload, []string{other}, nil)
	require.Equal(t, http.StatusConflict, n.do(http.MethodPut, "/mirror", auth, bytes.NewReader(body), nil).status)
	require.Equal(t, http.StatusUnauthorized, n.do(http.MethodPut, "/mirror", auth, bytes.NewReader(body), nil).status)

	for _, bad := range []string{`{}`, `not json`, `{"url": "file:///etc/passwd"}`, `{"url": "ftp://example.com/x"}`, `{"url": "http://"}`} {
		r := n.do(http.MethodPut, "/mirror", u.auth(t, blossom.VerbUpload, []string{h}, nil), strings.NewReader(bad), nil)
		require.Equal(t, http.StatusBadRequest, r.status, bad)
		require.NotEmpty(t, r.reason)
	}
	require.Equal(t, http.StatusMethodNotAllowed, n.do(http.MethodGet, "/mirror", "", nil, nil).status)
}

// TestMirrorRefusesPrivateAddresses: without Config.MirrorPrivate a URL on
// a loopback or private address, or a name resolving to one, is refused 403
// and never fetched (SSRF). A name is checked by the address each
// connection is made to (after DNS), which covers a redirect too.
func TestMirrorRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int32
	src := origin(t, func(w http.ResponseWriter, r *http.Request) { fetched.Add(1); _, _ = w.Write([]byte("internal")) })
	port := src[strings.LastIndexByte(src, ':')+1:]
	n := newNode(t, blossom.Config{})
	u := n.member(newUser(t))
	h := hashOf([]byte("internal"))
	for _, url := range []string{src + "/x", "http://localhost:" + port + "/x", "http://[::1]:" + port + "/x",
		"http://10.0.0.1:" + port + "/x", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]:" + port + "/x"} {
		r := n.mirror(u, h, url)
		require.Equal(t, http.StatusForbidden, r.status, url)
		require.Contains(t, r.reason, "private or loopback", url)
	}
	require.Zero(t, fetched.Load(), "the internal server was never reached")
}

// TestMirrorBounded: a mirrored blob is held to the largest blob and the
// key's quota, announced (Content-Length) or not (chunked, cut off as it
// passes), and to UploadTimeout (504) when the origin stalls; nothing is
// stored.
func TestMirrorBounded(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 5000)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	src := origin(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			_, _ = w.Write(big)
		case "/chunked":
			for range 5 {
				_, _ = w.Write(big[:1000])
				w.(http.Flusher).Flush()
			}
		case "/stall":
			_, _ = w.Write([]byte("first bytes"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	n := newNode(t, blossom.Config{MirrorPrivate: true, MaxBlobBytes: 4000, UploadTimeout: 500 * time.Millisecond})
	u := n.member(newUser(t))
	for _, path := range []string{"/big", "/chunked"} {
		r := n.mirror(u, hashOf(big), src+path)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status, path)
	}
	start := time.Now()
	r := n.mirror(u, hashOf([]byte("first bytes")), src+"/stall")
	require.Equal(t, http.StatusGatewayTimeout, r.status)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Empty(t, decode[[]desc](t, n.do(http.MethodGet, "/list/"+u.pk, "", nil, nil)))

	q := newNode(t, blossom.Config{MirrorPrivate: true, QuotaBytes: 3000})
	v := q.member(newUser(t))
	r = q.mirror(v, hashOf(big), src+"/chunked")
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "past the key's byte quota")
}
