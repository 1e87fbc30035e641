package relay

import (
	"crypto/rand"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/kukuri/communitynode/internal/platform/oneline"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the relay on one address:
//
//	GET /  with Upgrade: websocket        the Nostr protocol
//	GET /  with Accept: application/nostr+json   the NIP-11 document (CORS enabled)
//	GET /  otherwise                      a short plain-text note
//	GET /healthz                          200 while serving and the database answers,
//	                                      else 503 and the reason (see healthCheck)
//	POST / with application/nostr+json+rpc       NIP-86, when a Management handler is set
//	any other path                        Deps.Media when set (Blossom), else 404
//
// and nothing else: /metrics is MetricsHandler's, served on a private address
// (Config.MetricsListen), never on the public one. On Serve's listener a
// request head is at most 8 KiB (431 beyond) and must arrive within 10 s, and
// a plain upgrade reaches serveWebSocket without passing through this handler
// (see acceptor), with the same outcome.
func (r *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", r.serveHealth)
	mux.HandleFunc("/", r.serveRoot)
	return mux
}

// MetricsHandler serves GET /metrics from the injected Gatherer (404 without
// one). Run serves it on Config.MetricsListen.
func (r *Relay) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	if r.gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(r.gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

func (r *Relay) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.closing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("shutting down\n"))
		return
	}
	if err := r.health.check(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("database unreachable: " + oneline.Error(err) + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

func (r *Relay) serveRoot(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/" {
		if r.media != nil {
			r.media.ServeHTTP(w, req)
			return
		}
		http.NotFound(w, req)
		return
	}
	if wsconn.IsUpgrade(req) {
		r.serveWebSocket(w, req)
		return
	}
	if r.management != nil && isManagementRequest(req) {
		// Web admin pages (the node's console, any NIP-86 web client) read
		// the answer cross-origin; the NIP-98 header, not a cookie, authorises.
		setCORS(w.Header())
		r.management.ServeHTTP(w, req)
		return
	}
	switch req.Method {
	case http.MethodOptions:
		setCORS(w.Header())
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet, http.MethodHead:
		if acceptsNostrJSON(req) {
			r.serveInfo(w)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("This is a Nostr relay; connect with a Nostr client (WebSocket).\n"))
	default:
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	// "*" does not cover Authorization (Fetch standard): NIP-98 needs it named.
	h.Set("Access-Control-Allow-Headers", "Authorization, *")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS, POST")
}

// isManagementRequest reports whether req is a NIP-86 call (by its Content-Type).
func isManagementRequest(req *http.Request) bool {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && mt == "application/nostr+json+rpc"
}

// acceptsNostrJSON reports whether the Accept header lists application/nostr+json.
func acceptsNostrJSON(req *http.Request) bool {
	for _, v := range req.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == "application/nostr+json" {
				return true
			}
		}
	}
	return false
}

// serveWebSocket upgrades and serves one client connection until it ends.
func (r *Relay) serveWebSocket(w http.ResponseWriter, req *http.Request) {
	if r.closing.Load() {
		r.m.refusedConns.WithLabelValues("shutting_down").Inc()
		http.Error(w, "relay is shutting down", http.StatusServiceUnavailable)
		return
	}
	ip, badHeader := r.clientIP(req)
	if badHeader {
		r.m.badRealIP.Inc()
	}
	if r.policy != nil && r.policy.IPBlocked(ip) {
		r.m.refusedConns.WithLabelValues("blocked").Inc()
		http.Error(w, "your address is blocked from this relay", http.StatusForbidden)
		return
	}
	key := ratelimit.AddrKey(ip)
	if strings.HasPrefix(ip, key) {
		key = ip[:len(key)] // (one string for both: an IPv4 client's key is its address)
	}
	if !r.connsPerIP.acquire(key) {
		r.m.refusedConns.WithLabelValues("per_ip_limit").Inc()
		http.Error(w, "too many connections from your address", http.StatusTooManyRequests)
		return
	}
	ws, err := r.wsUpgrader.Upgrade(w, req)
	if err != nil {
		r.connsPerIP.release(key)
		return // the upgrader has answered the request
	}
	c := newConnOn(r, ws, ip, key)
	if !r.track(c) {
		r.m.refusedConns.WithLabelValues("shutting_down").Inc()
		_ = ws.WriteControl(wsconn.OpClose,
			wsconn.ClosePayload(wsconn.CloseGoingAway, "relay shutting down"), r.now().Add(r.cfg.WriteTimeout))
		_ = ws.Close()
		r.connsPerIP.release(key)
		return
	}
	r.m.connections.Inc()
	// The handler returns now, and net/http's goroutine with it (its stack,
	// grown by the request, and the request are freed): the connection is
	// read when its socket is readable and written while something is due
	// (conn.start).
	c.start(connEnded)
}

// connEnded forgets a connection serveWebSocket started once it has ended (a
// function, not a closure: a held connection keeps no closure for it).
func connEnded(c *conn) {
	c.r.m.connections.Dec()
	c.r.untrack(c)
	c.r.connsPerIP.release(c.key)
}

// clientIP is the client's address (ratelimit.AddrKey turns it into the key of the per-IP
// limits): the last entry of the last RealIPHeader line when configured and
// present (the address the trusted proxy saw; earlier entries may come from the
// client), else the TCP peer. Only an IP address (optionally with a port, which is
// dropped) is taken from the header: anything else falls back to the TCP peer and
// reports badHeader, so that a client whose proxy passes its header through
// cannot pick a fresh limit key per connection.
func (r *Relay) clientIP(req *http.Request) (ip string, badHeader bool) {
	return ClientIP(req, r.cfg.RealIPHeader)
}

// ClientIP is req's client address as the relay sees it (Relay.clientIP)
// with realIPHeader its Config.RealIPHeader: the node's Blossom server uses
// it, so that its per-address limits and NIP-86 blockip count what the
// relay's do.
func ClientIP(req *http.Request, realIPHeader string) (ip string, badHeader bool) {
	if h := realIPHeader; h != "" {
		if values := req.Header.Values(h); len(values) > 0 {
			v := values[len(values)-1]
			if addr, ok := parseAddr(strings.TrimSpace(v[strings.LastIndexByte(v, ',')+1:])); ok {
				return addr.String(), false
			}
			badHeader = true
		}
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr, badHeader
	}
	return host, badHeader
}

// parseAddr parses an IP address, or an address with a port ("192.0.2.7:80",
// "[2001:db8::1]:443"), and drops a zone.
func parseAddr(s string) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		addr = ap.Addr()
	}
	return addr.WithZone(""), true
}

// newChallenge returns a fresh NIP-42 challenge (conn.challengeText is how
// it is sent), never all zero.
func newChallenge() [16]byte {
	var b [16]byte
	for b == [16]byte{} {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	}
	return b
}
