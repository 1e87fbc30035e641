package blossom

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

// KindAuth is the kind of a Blossom authorization event (BUD-11).
const KindAuth = 24242

// The verbs of an authorization's `t` tag.
const (
	VerbGet    = "get"
	VerbUpload = "upload"
	VerbList   = "list"
	VerbDelete = "delete"
)

// maxAuthHeader bounds the Authorization header's encoded event.
const maxAuthHeader = 16 << 10

// Auth is a checked kind 24242 authorization.
type Auth struct {
	Event   *nostr.Event
	Expires time.Time
	Hashes  []string // its `x` tags, lower-case hex
}

// Covers reports whether the authorization names hash in an `x` tag.
func (a *Auth) Covers(hash string) bool { return slices.Contains(a.Hashes, hash) }

// authError is a refused authorization: an HTTP status and the X-Reason.
type authError struct {
	status int
	reason string
}

func (e *authError) Error() string { return e.reason }

func unauthorized(reason string) *authError {
	return &authError{status: http.StatusUnauthorized, reason: reason}
}

// parseAuth reads and checks the Authorization header of req for verb (BUD-11
// "Validation"): scheme Nostr, a base64 (URL-safe or standard, padded or
// not) kind 24242 event with a valid id and signature, created_at not in the
// future, an expiration tag in the future and at most maxLife ahead, a `t`
// tag equal to verb, and, if it has `server` tags, one naming host. Whether
// its `x` tags cover a hash is the caller's check (Auth.Covers).
func parseAuth(req *http.Request, verb string, now time.Time, maxLife time.Duration, host string) (*Auth, *authError) {
	h := req.Header.Get("Authorization")
	if h == "" {
		return nil, unauthorized("authorization required: a signed kind 24242 event (Authorization: Nostr <base64>)")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Nostr") {
		return nil, unauthorized("authorization scheme must be Nostr")
	}
	token = strings.TrimSpace(token)
	if len(token) > maxAuthHeader {
		return nil, unauthorized("authorization too long")
	}
	raw, err := decodeBase64(token)
	if err != nil {
		return nil, unauthorized("authorization is not base64")
	}
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, unauthorized("authorization is not a Nostr event")
	}
	if ev.Kind != KindAuth {
		return nil, unauthorized("authorization must be kind 24242")
	}
	if r := protocol.VerifyEvent(&ev); r != "" {
		return nil, unauthorized("authorization " + r)
	}
	if ev.CreatedAt.Time().After(now) {
		return nil, unauthorized("authorization created_at is in the future")
	}
	exp := ev.Tags.GetFirst([]string{"expiration", ""})
	if exp == nil {
		return nil, unauthorized("authorization needs an expiration tag")
	}
	secs, err := strconv.ParseInt((*exp)[1], 10, 64)
	if err != nil {
		return nil, unauthorized("authorization expiration is not a number")
	}
	expires := time.Unix(secs, 0)
	if !expires.After(now) {
		return nil, unauthorized("authorization expired")
	}
	if maxLife > 0 && expires.After(now.Add(maxLife)) {
		return nil, unauthorized("authorization expires too late: at most " + maxLife.String() + " ahead")
	}
	var verbs, servers, hashes []string
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "t":
			verbs = append(verbs, t[1])
		case "server":
			servers = append(servers, strings.ToLower(t[1]))
		case "x":
			hashes = append(hashes, strings.ToLower(t[1]))
		}
	}
	if !slices.Contains(verbs, verb) {
		return nil, unauthorized("authorization t tag must be " + verb)
	}
	if len(servers) > 0 && !slices.Contains(servers, strings.ToLower(host)) {
		return nil, unauthorized("authorization is for another server")
	}
	return &Auth{Event: &ev, Expires: expires, Hashes: hashes}, nil
}

// decodeBase64 accepts the base64url without padding BUD-11 names and the
// standard alphabet older clients send.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// hostName is a request's host without its port, lower-case.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(h)
	}
	return strings.ToLower(hostport)
}
