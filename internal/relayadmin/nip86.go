package relayadmin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/nbd-wtf/go-nostr"
)

// ContentType marks a NIP-86 request.
const ContentType = "application/nostr+json+rpc"

// maxBody bounds a NIP-86 request body.
const maxBody = 64 << 10

// AuthWindow is how far a NIP-98 event's created_at may be from now.
const AuthWindow = 60 * time.Second

// API serves NIP-86 on the relay's URL. Every request needs a NIP-98
// `Authorization: Nostr <base64 kind 27235 event>` header whose `u` is the
// relay's URL, `method` POST, `payload` the SHA-256 of the body, created_at
// within AuthWindow, with a valid signature, by one of Admins, and not used
// before (an event is accepted once, across the node's relay processes; see
// firstUse). No admins: 401
// for everyone. Bad or missing auth: 401; a valid event by a non-admin: 403;
// a bad request: 400; all with a JSON {"error": "..."}.
//
// The admins may change while the API serves (SetAdmins, a configuration
// reload): each request reads the set in force.
type API struct {
	Admin  *Admin
	Admins map[string]bool // the admins at start; later ones come through SetAdmins
	// Audience is the URLs of this relay that a NIP-98 `u` tag must name (the
	// relay's Audience: configured, or its loopback listen address), read at
	// each request. Nil, or an empty Set, refuses every request: the Host
	// header a request was sent with is never trusted, or an admin's header
	// signed for another service could be replayed here (issue 47).
	Audience func() audience.Set
	Logger   *slog.Logger
	Now      func() time.Time

	admins atomic.Pointer[map[string]bool] // set by SetAdmins; nil: Admins
}

// SetAdmins makes admins the pubkeys (hex) that may use the API from the next
// request on.
func (a *API) SetAdmins(admins []string) {
	m := make(map[string]bool, len(admins))
	for _, pk := range admins {
		m[pk] = true
	}
	a.admins.Store(&m)
}

// adminSet is the admins in force.
func (a *API) adminSet() map[string]bool {
	if m := a.admins.Load(); m != nil {
		return *m
	}
	return a.Admins
}

// Enabled reports whether anyone may use the API (some admin is configured).
func (a *API) Enabled() bool { return len(a.adminSet()) > 0 }

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "NIP-86 requests are POSTed"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "request body too large or unreadable"})
		return
	}
	admins := a.adminSet()
	if len(admins) == 0 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "relay management is disabled: no admin pubkeys are configured"})
		return
	}
	auth, err := a.authorize(r, body)
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Nostr")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized: " + err.Error()})
		return
	}
	pubkey := auth.PubKey
	if !admins[pubkey] {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden: " + pubkey + " is not an admin of this relay"})
		return
	}
	first, err := a.firstUse(r.Context(), auth)
	if err != nil {
		if a.Logger != nil {
			a.Logger.Error("NIP-98 replay check failed", "admin", pubkey, "err", err)
		}
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "error: could not check the Authorization event, try again"})
		return
	}
	if !first {
		w.Header().Set("WWW-Authenticate", "Nostr")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized: this Authorization event was already used; sign a new one for every request (NIP-98)"})
		return
	}
	var req struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Method == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `bad request: want {"method": "...", "params": [...]}`})
		return
	}
	result, err := a.Admin.Do(r.Context(), Actor{Name: pubkey, Source: "nip86"}, req.Method, req.Params)
	switch {
	case errors.As(err, new(*nip86.BadRequest)):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case err != nil:
		if a.Logger != nil {
			a.Logger.Error("NIP-86 call failed", "method", req.Method, "admin", pubkey, "err", err)
		}
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "error: " + req.Method + " failed"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"result": result})
	}
}

// firstUse records the id of an accepted Authorization event and reports whether
// this is its first use on any relay process of the node (cn_admin.nip98_seen,
// schema 0018): an event is accepted once within its window. Expired records
// are deleted on the way.
func (a *API) firstUse(ctx context.Context, ev *nostr.Event) (bool, error) {
	tag, err := a.Admin.Pool.Exec(ctx, `WITH expired AS (DELETE FROM cn_admin.nip98_seen WHERE expires_at < $3)
		INSERT INTO cn_admin.nip98_seen (event_id, expires_at) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`,
		ev.ID, ev.CreatedAt.Time().Add(AuthWindow), a.now())
	if err != nil {
		return false, fmt.Errorf("record NIP-98 event: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// authorize checks the NIP-98 Authorization header and returns its event.
func (a *API) authorize(r *http.Request, body []byte) (*nostr.Event, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Nostr") {
		return nil, errors.New("missing Authorization: Nostr <base64 event> (NIP-98)")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(token), "=")); err != nil {
			return nil, errors.New("the Authorization event is not base64")
		}
	}
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, errors.New("the Authorization event is not JSON")
	}
	now := a.now()
	switch {
	case ev.Kind != 27235:
		return nil, errors.New("the Authorization event must be kind 27235")
	case len(ev.ID) != 64 || len(ev.PubKey) != 64 || len(ev.Sig) != 128 || !ev.CheckID():
		return nil, errors.New("the Authorization event's id does not match its content")
	}
	if ok, err := ev.CheckSignature(); err != nil || !ok {
		return nil, errors.New("bad signature")
	}
	if d := now.Sub(ev.CreatedAt.Time()); d > AuthWindow || d < -AuthWindow {
		return nil, errors.New("the Authorization event is older or newer than 60 s")
	}
	if m := tagValue(&ev, "method"); !strings.EqualFold(m, r.Method) {
		return nil, errors.New("the method tag must be " + r.Method)
	}
	if !a.urlMatches(tagValue(&ev, "u"), r) {
		if a.Audience == nil || a.Audience().Empty() {
			return nil, errors.New("this relay's URL is not known yet")
		}
		return nil, errors.New("the u tag must be this relay's URL (" + a.Audience().String() + ")")
	}
	sum := sha256.Sum256(body)
	if p := tagValue(&ev, "payload"); !strings.EqualFold(p, hex.EncodeToString(sum[:])) {
		return nil, errors.New("the payload tag must be the SHA-256 of the request body")
	}
	return &ev, nil
}

// urlMatches reports whether u names this relay: one of its Audience's URLs,
// in its ws(s) or http(s) form (a TLS-terminating proxy hides the scheme,
// never the host and path), with the request's query.
func (a *API) urlMatches(u string, r *http.Request) bool {
	if a.Audience == nil {
		return false
	}
	return a.Audience().NamesRequest(u, r.URL.RawQuery)
}

func tagValue(ev *nostr.Event, name string) string {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
