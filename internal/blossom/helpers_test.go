package blossom_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// node is a Blossom server on a test database with a member list.
type node struct {
	t       *testing.T
	srv     *blossom.Server
	http    *httptest.Server
	db      *pgtest.DB
	dir     string
	mu      sync.Mutex
	members map[string]bool
	banned  map[string]bool
}

func newNode(t *testing.T, cfg blossom.Config) *node {
	t.Helper()
	return newNodeWith(t, cfg, nil)
}

// newNodeWith is newNode with edit applied to the server's Deps.
func newNodeWith(t *testing.T, cfg blossom.Config, edit func(*blossom.Deps)) *node {
	t.Helper()
	n := &node{t: t, db: pgtest.New(t), members: map[string]bool{}, banned: map[string]bool{}}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	n.dir = cfg.Dir
	deps := blossom.Deps{Pool: n.db.Pool,
		MayUpload: func(_ context.Context, pk string) (bool, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.members[pk], nil
		},
		Banned: func(pk string) bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.banned[pk]
		}}
	if edit != nil {
		edit(&deps)
	}
	var err error
	n.srv, err = blossom.New(cfg, deps)
	require.NoError(t, err)
	n.http = httptest.NewServer(n.srv)
	t.Cleanup(n.http.Close)
	return n
}

// user is a key.
type user struct{ sk, pk string }

func newUser(t *testing.T) user {
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	return user{sk, pk}
}

func (n *node) member(u user) user {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.members[u.pk] = true
	return u
}

func (n *node) ban(u user) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.banned[u.pk] = true
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// auth signs a kind 24242 for verb naming hashes, expiring in 10 minutes;
// edit may change it before signing.
func (u user) auth(t *testing.T, verb string, hashes []string, edit func(*nostr.Event)) string {
	// A distinct content per call: two authorizations signed within a
	// second would otherwise be one event (one id).
	ev := nostr.Event{Kind: blossom.KindAuth, CreatedAt: nostr.Now() - 1, Content: verb + " " + nostr.GeneratePrivateKey()[:8],
		Tags: nostr.Tags{{"t", verb}, {"expiration", strconv.FormatInt(time.Now().Add(10*time.Minute).Unix(), 10)}}}
	for _, h := range hashes {
		ev.Tags = append(ev.Tags, nostr.Tag{"x", h})
	}
	if edit != nil {
		edit(&ev)
	}
	require.NoError(t, ev.Sign(u.sk))
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	return "Nostr " + base64.RawURLEncoding.EncodeToString(raw)
}

type reply struct {
	status int
	reason string
	header http.Header
	body   []byte
}

func (n *node) do(method, path, auth string, body io.Reader, hdr map[string]string) reply {
	n.t.Helper()
	req, err := http.NewRequest(method, n.http.URL+path, body)
	require.NoError(n.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if b, ok := body.(*bytes.Reader); ok {
		req.ContentLength = int64(b.Len())
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(n.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(n.t, err)
	return reply{status: res.StatusCode, reason: res.Header.Get("X-Reason"), header: res.Header, body: out}
}

// upload PUTs data as u with an authorization naming its hash.
func (n *node) upload(u user, data []byte, typ string) reply {
	n.t.Helper()
	h := hashOf(data)
	return n.do(http.MethodPut, "/upload", u.auth(n.t, blossom.VerbUpload, []string{h}, nil), bytes.NewReader(data),
		map[string]string{"Content-Type": typ, "X-SHA-256": h})
}

type desc struct {
	URL      string     `json:"url"`
	SHA256   string     `json:"sha256"`
	Size     int64      `json:"size"`
	Type     string     `json:"type"`
	Uploaded int64      `json:"uploaded"`
	NIP94    [][]string `json:"nip94"`
}

func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), string(r.body))
	return v
}
