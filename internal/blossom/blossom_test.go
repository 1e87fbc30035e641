package blossom_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
)

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// TestUploadGetListDelete: the BUD-01/02 round trip, with the stored
// content type, range requests, descriptors with an extension and NIP-94
// tags, and deletion removing the file.
func TestUploadGetListDelete(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice := n.member(newUser(t))
	data := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(t, 5000)...)
	h := hashOf(data)

	r := n.upload(alice, data, "image/png")
	require.Equal(t, http.StatusCreated, r.status, r.reason)
	d := decode[desc](t, r)
	require.Equal(t, h, d.SHA256)
	require.Equal(t, int64(len(data)), d.Size)
	require.Equal(t, "image/png", d.Type)
	require.Equal(t, n.http.URL+"/"+h+".png", d.URL)
	require.Contains(t, d.NIP94, []string{"x", h})
	require.Contains(t, d.NIP94, []string{"m", "image/png"})
	require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))

	r = n.upload(alice, data, "image/png")
	require.Equal(t, http.StatusOK, r.status, "a second upload of a stored blob")

	for _, p := range []string{"/" + h, "/" + h + ".png", "/" + h + ".jpg"} {
		r = n.do(http.MethodGet, p, "", nil, nil)
		require.Equal(t, http.StatusOK, r.status, p)
		require.Equal(t, data, r.body)
		require.Equal(t, "image/png", r.header.Get("Content-Type"), "the stored type, whatever the extension")
		require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
	}
	r = n.do(http.MethodHead, "/"+h, "", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, strconv.Itoa(len(data)), r.header.Get("Content-Length"))
	require.Equal(t, "bytes", r.header.Get("Accept-Ranges"))
	r = n.do(http.MethodGet, "/"+h, "", nil, map[string]string{"Range": "bytes=10-19"})
	require.Equal(t, http.StatusPartialContent, r.status)
	require.Equal(t, data[10:20], r.body)
	r = n.do(http.MethodGet, "/"+h, "", nil, map[string]string{"Range": "bytes=999999-"})
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, r.status)

	r = n.do(http.MethodGet, "/list/"+alice.pk, "", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	list := decode[[]desc](t, r)
	require.Len(t, list, 1)
	require.Equal(t, h, list[0].SHA256)

	r = n.do(http.MethodDelete, "/"+h, alice.auth(t, blossom.VerbDelete, []string{h}, nil), nil, nil)
	require.Equal(t, http.StatusOK, r.status, r.reason)
	r = n.do(http.MethodGet, "/"+h, "", nil, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.NotEmpty(t, r.reason)
	_, err := os.Stat(filepath.Join(n.dir, h[:2], h))
	require.ErrorIs(t, err, os.ErrNotExist, "the last claim's deletion removes the file")
	require.Equal(t, "[]\n", string(n.do(http.MethodGet, "/list/"+alice.pk, "", nil, nil).body))
}

// TestCORS: BUD-01's headers on answers and on the preflight.
func TestCORS(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	for _, p := range []string{"/upload", "/" + hashOf([]byte("x")), "/list/" + newUser(t).pk} {
		r := n.do(http.MethodOptions, p, "", nil, map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "PUT"})
		require.Equal(t, http.StatusNoContent, r.status)
		require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "Authorization, *", r.header.Get("Access-Control-Allow-Headers"))
		require.Equal(t, "GET, HEAD, PUT, DELETE", r.header.Get("Access-Control-Allow-Methods"))
		require.Equal(t, "86400", r.header.Get("Access-Control-Max-Age"))
	}
	r := n.do(http.MethodGet, "/"+hashOf([]byte("x")), "", nil, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"), "refusals too")
	for _, h := range []string{"X-Reason", "Content-Range", "Accept-Ranges", "ETag"} {
		require.Contains(t, r.header.Get("Access-Control-Expose-Headers"), h, "a browser app reads it")
	}
}

// TestAuthChecks: every BUD-11 check refuses an upload that fails it, and
// a body whose hash is not the authorization's x tag is refused.
func TestAuthChecks(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice := n.member(newUser(t))
	data := randomBytes(t, 100)
	h := hashOf(data)
	exp := func(d time.Duration) func(*nostr.Event) {
		return func(ev *nostr.Event) {
			ev.Tags = nostr.Tags{{"t", "upload"}, {"x", h}, {"expiration", strconv.FormatInt(time.Now().Add(d).Unix(), 10)}}
		}
	}
	cases := map[string]struct {
		auth   string
		status int
	}{
		"none":               {"", http.StatusUnauthorized},
		"not nostr":          {"Bearer abc", http.StatusUnauthorized},
		"not base64":         {"Nostr !!!", http.StatusUnauthorized},
		"wrong kind":         {alice.auth(t, "upload", []string{h}, func(ev *nostr.Event) { ev.Kind = 27235 }), http.StatusUnauthorized},
		"expired":            {alice.auth(t, "upload", []string{h}, exp(-time.Minute)), http.StatusUnauthorized},
		"expires too late":   {alice.auth(t, "upload", []string{h}, exp(48*time.Hour)), http.StatusUnauthorized},
		"no expiration":      {alice.auth(t, "upload", []string{h}, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "upload"}, {"x", h}} }), http.StatusUnauthorized},
		"future":             {alice.auth(t, "upload", []string{h}, func(ev *nostr.Event) { ev.CreatedAt = nostr.Now() + 3600 }), http.StatusUnauthorized},
		"wrong verb":         {alice.auth(t, "delete", []string{h}, nil), http.StatusUnauthorized},
		"other server":       {alice.auth(t, "upload", []string{h}, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"server", "cdn.example.com"}) }), http.StatusUnauthorized},
		"no x tag":           {alice.auth(t, "upload", nil, nil), http.StatusUnauthorized},
		"x names other blob": {alice.auth(t, "upload", []string{hashOf([]byte("other"))}, nil), http.StatusForbidden},
	}
	for name, c := range cases {
		r := n.do(http.MethodPut, "/upload", c.auth, bytes.NewReader(data), nil)
		require.Equal(t, c.status, r.status, "%s: %s", name, r.reason)
		require.NotEmpty(t, r.reason, name)
		if c.status == http.StatusUnauthorized {
			require.Equal(t, "Nostr", r.header.Get("WWW-Authenticate"), name)
		}
	}
	bad := alice.auth(t, "upload", []string{h}, nil)
	bad = bad[:len(bad)-4] + "AAAA" // breaks the signature
	require.Equal(t, http.StatusUnauthorized, n.do(http.MethodPut, "/upload", bad, bytes.NewReader(data), nil).status)

	// The X-SHA-256 the authorization names, but another body.
	r := n.do(http.MethodPut, "/upload", alice.auth(t, "upload", []string{h}, nil), bytes.NewReader([]byte("something else")),
		map[string]string{"X-SHA-256": h})
	require.Equal(t, http.StatusConflict, r.status, r.reason)
	// No X-SHA-256: the body's hash is not the x tag's.
	r = n.do(http.MethodPut, "/upload", alice.auth(t, "upload", []string{h}, nil), bytes.NewReader([]byte("something else")), nil)
	require.Equal(t, http.StatusForbidden, r.status, r.reason)
	require.Empty(t, tmpFiles(t, n), "refused bodies leave no file")

	// A server tag naming this host, standard base64 with padding: accepted.
	u, _ := url.Parse(n.http.URL)
	ok := alice.auth(t, "upload", []string{h}, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"server", u.Hostname()}) })
	r = n.do(http.MethodPut, "/upload", ok, bytes.NewReader(data), nil)
	require.Equal(t, http.StatusCreated, r.status, r.reason)
}

// TestReusedAuth: an authorization is used once, for uploads and deletes.
func TestReusedAuth(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice := n.member(newUser(t))
	data := randomBytes(t, 100)
	h := hashOf(data)
	a := alice.auth(t, "upload", []string{h}, nil)
	require.Equal(t, http.StatusCreated, n.do(http.MethodPut, "/upload", a, bytes.NewReader(data), nil).status)
	// While alice holds the blob a replayed upload changes nothing: 200 (a
	// client signing the same upload twice within a second makes the same
	// event).
	for _, hdr := range []map[string]string{{"X-SHA-256": h}, nil} {
		r := n.do(http.MethodPut, "/upload", a, bytes.NewReader(data), hdr)
		require.Equal(t, http.StatusOK, r.status, r.reason)
	}

	d := alice.auth(t, "delete", []string{h}, nil)
	require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/"+h, d, nil, nil).status)
	for _, hdr := range []map[string]string{{"X-SHA-256": h}, nil} {
		r := n.do(http.MethodPut, "/upload", a, bytes.NewReader(data), hdr)
		require.Equal(t, http.StatusUnauthorized, r.status, "a replayed upload does not bring a deleted blob back")
		require.Contains(t, r.reason, "already used")
	}
	require.Equal(t, http.StatusNotFound, n.do(http.MethodGet, "/"+h, "", nil, nil).status)
	require.Equal(t, http.StatusCreated, n.upload(alice, data, "").status)
	r := n.do(http.MethodDelete, "/"+h, d, nil, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "a delete replayed after a re-upload")
	require.Equal(t, http.StatusOK, n.do(http.MethodGet, "/"+h, "", nil, nil).status)
}

// TestPathTraversal: only /<64 hex>[.ext] names a blob; nothing else reaches
// the filesystem.
func TestPathTraversal(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice := n.member(newUser(t))
	data := []byte("hello")
	h := hashOf(data)
	require.Equal(t, http.StatusCreated, n.upload(alice, data, "text/plain").status)
	secret := filepath.Join(n.dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("do not serve"), 0o600))
	for _, p := range []string{"/../../etc/passwd", "/" + h + ".../x", "/" + h + "/../secret", "/" + h + ".png/../../etc/passwd",
		"/../secret", "/" + h[:2] + "/" + h, "/tmp/x", "/" + strings.ToUpper(h), "/" + h + ".%2e%2e%2fsecret", "/" + h + "%00.png"} {
		status, body := rawGet(t, n, p)
		require.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, status, p)
		require.NotContains(t, body, "do not serve", p)
		require.NotContains(t, body, "root:", p)
	}
	status, body := rawGet(t, n, "/"+h+".txt")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "hello")
}

// rawGet sends the path as written, with no client-side cleaning.
func rawGet(t *testing.T, n *node, path string) (int, string) {
	u, _ := url.Parse(n.http.URL)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, u.Host)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func tmpFiles(t *testing.T, n *node) []string {
	es, err := os.ReadDir(filepath.Join(n.dir, "tmp"))
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// stallingBody sends first, then blocks until released.
type stallingBody struct {
	first   []byte
	release chan struct{}
	sent    atomic.Int64
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		k := copy(p, b.first)
		b.first = b.first[k:]
		b.sent.Add(int64(k))
		return k, nil
	}
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// TestSlowUploadBounded: a body that stops arriving is cut off after
// UploadTimeout with 408, and leaves no file.
func TestSlowUploadBounded(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{UploadTimeout: 500 * time.Millisecond})
	alice := n.member(newUser(t))
	body := &stallingBody{first: []byte("0123456789"), release: make(chan struct{})}
	defer close(body.release)
	req, err := http.NewRequest(http.MethodPut, n.http.URL+"/upload", body)
	require.NoError(t, err)
	req.Header.Set("Authorization", alice.auth(t, "upload", []string{hashOf([]byte("whatever"))}, nil))
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode)
	require.Contains(t, res.Header.Get("X-Reason"), "longer than")
	require.Less(t, time.Since(start), 10*time.Second)
	require.Eventually(t, func() bool { return len(tmpFiles(t, n)) == 0 }, 5*time.Second, 10*time.Millisecond)
}

// countingBody yields size bytes and counts what was read from it.
type countingBody struct {
	left int64
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), b.left))
	for i := range p[:k] {
		p[i] = byte(i)
	}
	b.left -= int64(k)
	b.read.Add(int64(k))
	return k, nil
}

// TestQuotaOverrunMidUpload: an upload of unannounced length is cut off
// with 413 once it passes what its key's byte quota leaves, without the
// rest of the body being read, and stores nothing.
func TestQuotaOverrunMidUpload(t *testing.T) {
	t.Parallel()
	const quota = 1 << 20
	n := newNode(t, blossom.Config{QuotaBytes: quota})
	alice := n.member(newUser(t))
	first := randomBytes(t, 600<<10)
	require.Equal(t, http.StatusCreated, n.upload(alice, first, "").status)

	body := &countingBody{left: 64 << 20}
	req, err := http.NewRequest(http.MethodPut, n.http.URL+"/upload", io.NopCloser(body)) // no Content-Length
	require.NoError(t, err)
	req.Header.Set("Authorization", alice.auth(t, "upload", []string{hashOf([]byte("unknown"))}, nil))
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
		require.Contains(t, res.Header.Get("X-Reason"), "quota")
	} // else the server closed while the client was still sending: also a refusal
	require.Less(t, body.read.Load(), int64(8<<20), "the body is not read to its end")
	require.Eventually(t, func() bool { return len(tmpFiles(t, n)) == 0 }, 5*time.Second, 10*time.Millisecond)
	u, err := n.srv.DB().Usage(context.Background(), n.db.Pool, alice.pk)
	require.NoError(t, err)
	require.Equal(t, blossom.Usage{Bytes: int64(len(first)), Blobs: 1}, u)

	// Announced: refused before reading.
	r := n.upload(alice, randomBytes(t, 500<<10), "")
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	// What fits is accepted.
	require.Equal(t, http.StatusCreated, n.upload(alice, randomBytes(t, 400<<10), "").status)
}

// TestCountQuota: the number of blobs per key is bounded.
func TestCountQuota(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{QuotaBlobs: 2})
	alice := n.member(newUser(t))
	a, b := []byte("a"), []byte("b")
	require.Equal(t, http.StatusCreated, n.upload(alice, a, "").status)
	require.Equal(t, http.StatusCreated, n.upload(alice, b, "").status)
	require.Equal(t, http.StatusRequestEntityTooLarge, n.upload(alice, []byte("c"), "").status)
	require.Equal(t, http.StatusOK, n.upload(alice, a, "").status, "a blob the key holds costs nothing")
}

// TestWhoMayUpload: non-members and banned keys are refused; a banned
// key's blobs are not served or listed.
func TestWhoMayUpload(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	stranger := newUser(t)
	r := n.upload(stranger, []byte("hi"), "")
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, r.reason, "members")

	mallory := n.member(newUser(t))
	data := []byte("spam")
	require.Equal(t, http.StatusCreated, n.upload(mallory, data, "").status)
	n.ban(mallory)
	require.Equal(t, http.StatusForbidden, n.upload(mallory, []byte("more"), "").status)
	require.Equal(t, http.StatusUnavailableForLegalReasons, n.do(http.MethodGet, "/"+hashOf(data), "", nil, nil).status)
	require.Equal(t, "[]\n", string(n.do(http.MethodGet, "/list/"+mallory.pk, "", nil, nil).body))
}

// TestTooLarge: the largest blob, announced or not, and BUD-06's HEAD /upload.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{MaxBlobBytes: 1000})
	alice := n.member(newUser(t))
	big := randomBytes(t, 1001)
	r := n.upload(alice, big, "")
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Contains(t, r.reason, "too large")
	r = n.do(http.MethodPut, "/upload", alice.auth(t, "upload", []string{hashOf(big)}, nil), io.NopCloser(bytes.NewReader(big)), nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "chunked")

	h := hashOf(big)
	head := func(size int, auth string) reply {
		return n.do(http.MethodHead, "/upload", auth, nil, map[string]string{"X-SHA-256": h, "X-Content-Length": strconv.Itoa(size), "X-Content-Type": "image/png"})
	}
	require.Equal(t, http.StatusRequestEntityTooLarge, head(1001, alice.auth(t, "upload", []string{h}, nil)).status)
	require.Equal(t, http.StatusOK, head(1000, alice.auth(t, "upload", []string{h}, nil)).status)
	require.Equal(t, http.StatusUnauthorized, head(1000, "").status)
	require.Equal(t, http.StatusForbidden, head(1000, newUser(t).auth(t, "upload", []string{h}, nil)).status, "not a member")
	r = n.do(http.MethodHead, "/upload", "", nil, map[string]string{"X-SHA-256": h})
	require.Equal(t, http.StatusLengthRequired, r.status)
	r = n.do(http.MethodHead, "/upload", "", nil, map[string]string{"X-SHA-256": "nothex", "X-Content-Length": "1"})
	require.Equal(t, http.StatusBadRequest, r.status)
}

// TestSharedBlob: a blob two keys uploaded is stored once; deleting one
// claim keeps it for the other; the file goes with the last claim. Uploads
// and deletes of one hash race without leaving a row without its file.
func TestSharedBlob(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice, bob := n.member(newUser(t)), n.member(newUser(t))
	data := randomBytes(t, 20000)
	h := hashOf(data)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i, u := range []user{alice, bob} {
		wg.Add(1)
		go func() { defer wg.Done(); statuses[i] = n.upload(u, data, "").status }()
	}
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusCreated, http.StatusOK}, statuses)
	var rows int
	require.NoError(t, n.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM cn_blossom.blobs`).Scan(&rows))
	require.Equal(t, 1, rows)

	require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/"+h, alice.auth(t, "delete", []string{h}, nil), nil, nil).status)
	r := n.do(http.MethodGet, "/"+h, "", nil, nil)
	require.Equal(t, http.StatusOK, r.status, "bob's claim keeps it")
	require.Equal(t, data, r.body)
	require.Equal(t, http.StatusNotFound, n.do(http.MethodDelete, "/"+h, alice.auth(t, "delete", []string{h}, nil), nil, nil).status,
		"alice has no claim left")

	// bob deletes while alice uploads again, many times: whatever the order,
	// a stored row has its file.
	for i := range 15 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			n.do(http.MethodDelete, "/"+h, bob.auth(t, "delete", []string{h}, nil), nil, nil)
		}()
		go func() { defer wg.Done(); n.upload(alice, data, "") }()
		wg.Wait()
		b, err := n.srv.DB().Get(context.Background(), h)
		if err == nil {
			_, serr := os.Stat(filepath.Join(n.dir, h[:2], h))
			require.NoError(t, serr, "round %d: owners %v but no file", i, b.Owners)
			require.Equal(t, data, n.do(http.MethodGet, "/"+h, "", nil, nil).body)
		}
		// Both keys own it again for the next round.
		n.upload(alice, data, "")
		n.upload(bob, data, "")
	}
}

// TestHidden: a hidden blob is answered 451, left out of lists and cannot
// be uploaded again; unhiding serves it again; a purge removes the file.
func TestHidden(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{})
	alice := n.member(newUser(t))
	data := []byte("reported picture")
	h := hashOf(data)
	require.Equal(t, http.StatusCreated, n.upload(alice, data, "image/jpeg").status)
	ctx := context.Background()
	changed, err := n.srv.DB().Hide(ctx, h, "test", "report rule")
	require.NoError(t, err)
	require.True(t, changed)
	r := n.do(http.MethodGet, "/"+h, "", nil, nil)
	require.Equal(t, http.StatusUnavailableForLegalReasons, r.status)
	require.Equal(t, "[]\n", string(n.do(http.MethodGet, "/list/"+alice.pk, "", nil, nil).body))
	require.Equal(t, http.StatusForbidden, n.upload(alice, data, "").status)
	_, err = n.srv.DB().Unhide(ctx, h, "test")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, n.do(http.MethodGet, "/"+h, "", nil, nil).status)

	freed, err := n.srv.DB().Purge(ctx, h, "test", "")
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), freed)
	_, err = os.Stat(filepath.Join(n.dir, h[:2], h))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, http.StatusUnavailableForLegalReasons, n.do(http.MethodGet, "/"+h, "", nil, nil).status)
	require.Equal(t, http.StatusForbidden, n.upload(alice, data, "").status, "a purged blob stays out")
	var ops []string
	rows, err := n.db.Pool.Query(ctx, `SELECT op FROM cn_blossom.log ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var op string
		require.NoError(t, rows.Scan(&op))
		ops = append(ops, op)
	}
	require.Equal(t, []string{"upload", "hide", "unhide", "purge"}, ops)
}

// TestTypes: with Config.Types only those media types are stored: by the
// Content-Type sent, by what the bytes look like when none is, and in
// BUD-06's HEAD /upload.
func TestTypes(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{Types: []string{"image/*", "application/pdf"}})
	alice := n.member(newUser(t))
	png := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(t, 100)...)
	require.Equal(t, http.StatusCreated, n.upload(alice, png, "image/png").status)
	require.Equal(t, http.StatusCreated, n.upload(alice, randomBytes(t, 100), "application/pdf").status)
	r := n.upload(alice, []byte("#!/bin/sh\necho hi\n"), "text/x-shellscript")
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	require.Contains(t, r.reason, "image/*")
	r = n.upload(alice, []byte("plain words, sniffed as text"), "")
	require.Equal(t, http.StatusUnsupportedMediaType, r.status, "sniffed")
	h := hashOf([]byte("x"))
	r = n.do(http.MethodHead, "/upload", alice.auth(t, "upload", []string{h}, nil), nil,
		map[string]string{"X-SHA-256": h, "X-Content-Length": "1", "X-Content-Type": "video/mp4"})
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	require.Empty(t, tmpFiles(t, n))
}

// TestNoBounds: negative limits mean none (a blob of any size, any number).
func TestNoBounds(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{MaxBlobBytes: -1, QuotaBytes: -1, QuotaBlobs: -1})
	alice := n.member(newUser(t))
	data := randomBytes(t, 3<<20)
	require.Equal(t, http.StatusCreated, n.upload(alice, data, "").status)
	r := n.do(http.MethodPut, "/upload", alice.auth(t, "upload", []string{hashOf(data[1:])}, nil), io.NopCloser(bytes.NewReader(data[1:])), nil)
	require.Equal(t, http.StatusCreated, r.status, "chunked: %s", r.reason)
}

// TestQuotaUnderConcurrentUploads: uploads by one key that each fit what is
// left but not together do not both get in: the quota is checked again
// under the key's lock in the transaction that records the claim.
func TestQuotaUnderConcurrentUploads(t *testing.T) {
	t.Parallel()
	n := newNode(t, blossom.Config{QuotaBytes: 1 << 20})
	alice := n.member(newUser(t))
	for round := range 5 {
		blobs := [][]byte{randomBytes(t, 600<<10), randomBytes(t, 600<<10)}
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		for i := range blobs {
			wg.Add(1)
			go func() { defer wg.Done(); statuses[i] = n.upload(alice, blobs[i], "").status }()
		}
		wg.Wait()
		require.ElementsMatch(t, []int{http.StatusCreated, http.StatusRequestEntityTooLarge}, statuses, "round %d", round)
		u, err := n.srv.DB().Usage(context.Background(), n.db.Pool, alice.pk)
		require.NoError(t, err)
		require.LessOrEqual(t, u.Bytes, int64(1<<20))
		for i, s := range statuses { // make room for the next round
			if s == http.StatusCreated {
				h := hashOf(blobs[i])
				require.Equal(t, http.StatusOK, n.do(http.MethodDelete, "/"+h, alice.auth(t, "delete", []string{h}, nil), nil, nil).status)
			}
		}
	}
}
