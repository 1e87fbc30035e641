package testkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// NIP86ContentType is the Content-Type of a NIP-86 request
// (relayadmin.ContentType, which testkit does not import).
const NIP86ContentType = "application/nostr+json+rpc"

// NIP98 returns the Authorization header value ("Nostr <base64>") of a
// NIP-98 event signed by sk for a request of method (POST) to url with body:
// its u, method and payload tags and a fresh nonce, so that two calls within
// a second are two events (a relay refuses a replayed one). edit, when not
// nil, may change the event before it is signed.
func NIP98(t testing.TB, sk, url, method string, body []byte, edit func(*nostr.Event)) string {
	t.Helper()
	sum := sha256.Sum256(body)
	ev := &nostr.Event{Kind: nostr.KindHTTPAuth, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"u", url}, {"method", method}, {"payload", hex.EncodeToString(sum[:])}, {"nonce", nostr.GeneratePrivateKey()}}}
	if edit != nil {
		edit(ev)
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatalf("testkit: sign NIP-98: %v", err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(raw)
}

// NIP86Request is the NIP-86 call of method with params (nil: none) to the
// relay's HTTP URL, authorized by sk with NIP98 (edit as there).
func NIP86Request(t testing.TB, url, sk, method string, params []any, edit func(*nostr.Event)) *http.Request {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	req.Header.Set("Content-Type", NIP86ContentType)
	req.Header.Set("Authorization", NIP98(t, sk, url, http.MethodPost, body, edit))
	return req
}

// NIP86 makes the NIP-86 call of method with params as sk to the relay's HTTP
// URL and returns the HTTP status and the body.
func NIP86(t testing.TB, url, sk, method string, params ...any) (int, []byte) {
	t.Helper()
	return Do(t, NIP86Request(t, url, sk, method, params, nil))
}

// Do sends req with http.DefaultClient and returns the status and the body.
func Do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testkit: %s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("testkit: read %s: %v", req.URL, err)
	}
	return resp.StatusCode, b
}
