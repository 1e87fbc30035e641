package dashboard

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// HeartbeatInterval is how often an event stream gets a comment line, so that
// proxies and browsers keep it open (Config.Heartbeat overrides it).
const HeartbeatInterval = 15 * time.Second

// Handler serves, read-only:
//
//	GET /              the status page (everything embedded: works offline)
//	GET /assets/...    its script, styles and the vendored chart library
//	GET /api/status    the latest snapshot (JSON)
//	GET /api/history   the kept snapshots (JSON array, oldest first; ?after=ID)
//	GET /api/events    Server-Sent Events: one `status` event per snapshot with
//	                   `id:` = the snapshot's id; Last-Event-ID (header, or
//	                   ?lastEventId=) resends the kept snapshots after it; a
//	                   comment line every HeartbeatInterval
//	GET /healthz       200 once a sample exists
//	GET /console/...   the console (Config.Console), when given
//
// Every answer (pages, assets, JSON, errors, the console's) carries
// X-Frame-Options: DENY and a Content-Security-Policy with frame-ancestors
// 'none' and script-src 'self' (ContentSecurityPolicy): no other site may
// frame these pages, and no inline script runs in them. The console may set a
// wider connect-src of its own (it talks to the relay).
//
// Without a token, a request whose Host header is not the listen address (or
// localhost on its port) gets 421: see allowedHosts.
// With a token, every path but /healthz needs `Authorization: Bearer TOKEN` or
// `?token=TOKEN` (EventSource cannot send headers); a wrong one gets 401.
func (d *Dashboard) Handler(token string) http.Handler {
	return FrameHeaders(d.handler(token))
}

// ContentSecurityPolicy is the status page's policy: scripts, styles and
// connections from its own origin only (the page's EventSource and JSON
// reads; uPlot styles its elements through the CSSOM from its script file,
// which style-src does not govern), no inline script or style, no plugins,
// no <base>, and no framing by any page (frame-ancestors 'none').
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// FrameHeaders sets X-Frame-Options: DENY and ContentSecurityPolicy on every
// answer of next before next runs (next may replace the policy with a stricter
// or wider one of its own, as the console does for its connections).
func FrameHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

func (d *Dashboard) handler(token string) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, _ := assets.ReadFile("assets/index.html")
		page = []byte(strings.ReplaceAll(string(page), "{{LISTEN}}", html.EscapeString(d.cfg.Listen)))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		s, ok := d.Latest()
		if !ok {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no sample yet"})
			return
		}
		writeJSON(w, http.StatusOK, s)
	})
	mux.HandleFunc("GET /api/history", func(w http.ResponseWriter, r *http.Request) {
		after, err := parseID(r.URL.Query().Get("after"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "after must be a snapshot id"})
			return
		}
		h := d.History(after)
		if h == nil {
			h = []Snapshot{}
		}
		writeJSON(w, http.StatusOK, h)
	})
	mux.HandleFunc("GET /api/events", d.serveEvents)
	if d.cfg.Console != nil {
		mux.Handle("/console/", d.cfg.Console)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := d.Latest(); !ok {
			http.Error(w, "no sample yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if token == "" {
		// Without a token the page is served on loopback only (CheckExposure),
		// but a web page the browser loaded from elsewhere can still reach it
		// through DNS rebinding: its own host name resolving to 127.0.0.1. The
		// Host header then names that host, so only the listen address itself
		// (and localhost on its port) is answered.
		allowed := allowedHosts(d.cfg.Listen)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !allowed[strings.ToLower(r.Host)] {
				writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "this page answers only to http://" + d.cfg.Listen + "/ (Host " + r.Host + " refused)"})
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && !tokenOK(r, token) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// allowedHosts returns the Host headers that name listen: the address as given,
// and localhost, 127.0.0.1 and [::1] on its port (in lower case).
func allowedHosts(listen string) map[string]bool {
	out := map[string]bool{strings.ToLower(listen): true}
	if _, port, err := net.SplitHostPort(listen); err == nil {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			out[net.JoinHostPort(h, port)] = true
		}
	}
	return out
}

func tokenOK(r *http.Request, token string) bool {
	got := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		got = strings.TrimPrefix(h, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func parseID(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// serveEvents streams snapshots as Server-Sent Events.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventId")
	}
	after, err := parseID(last)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Last-Event-ID must be a snapshot id"})
		return
	}
	ch, cancel := d.subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	// What the client missed (or, on a first connection, the latest sample).
	var backlog []Snapshot
	if last != "" {
		backlog = d.History(after)
	} else if s, ok := d.Latest(); ok {
		backlog = []Snapshot{s}
	}
	sent := after
	for _, s := range backlog {
		if err := writeEvent(w, s); err != nil {
			return
		}
		sent = s.ID
	}
	flusher.Flush()
	heartbeat := time.NewTicker(d.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprintf(w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339)); err != nil {
				return
			}
			flusher.Flush()
		case s := <-ch:
			if s.ID <= sent {
				continue // already sent from the history
			}
			if err := writeEvent(w, s); err != nil {
				return
			}
			sent = s.ID
			flusher.Flush()
		}
	}
}

func writeEvent(w http.ResponseWriter, s Snapshot) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: status\ndata: %s\n\n", s.ID, data)
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
