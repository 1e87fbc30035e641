package blossom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// mirrorBodyLimit bounds PUT /mirror's JSON body ({"url": ...}).
const mirrorBodyLimit = 16 << 10

// mirrorBodyTimeout bounds the reading of that body.
const mirrorBodyTimeout = 10 * time.Second

// mirrorRedirects bounds the redirects a mirror follows.
const mirrorRedirects = 5

// errForbiddenAddress is a mirror URL whose host resolves to an address
// Config.MirrorPrivate does not allow.
var errForbiddenAddress = errors.New("address not allowed")

// refusedPrefixes are addresses beyond the netip predicates that are no
// public server's: "this network", shared address space (CGNAT), IETF
// protocol assignments, benchmarking, and NAT64's well-known prefix (which
// embeds an IPv4 address, possibly a private one).
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"),
}

// publicAddr reports whether a mirror may connect to addr: not loopback,
// private (RFC 1918, fc00::/7), link-local, multicast, unspecified, nor one
// of refusedPrefixes.
func publicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// newMirrorClient is the HTTP client mirrors fetch with (Server.fetch): no proxy from the
// environment, every connection's address checked when it is made (after
// DNS, so a name that resolves to a private address is refused, whichever
// address a redirect or a second lookup gives), at most mirrorRedirects
// redirects, to http(s) only.
func newMirrorClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !publicAddr(ap.Addr()) {
			return fmt.Errorf("%w: %s", errForbiddenAddress, address)
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 30 * time.Second, MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= mirrorRedirects {
				return fmt.Errorf("more than %d redirects", mirrorRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s URL", req.URL.Scheme)
			}
			return nil
		},
	}
}

// mirror answers PUT /mirror (BUD-04): the node fetches the blob at the
// body's url itself and stores it as an upload by the authorization's key,
// under the same rules (a member's upload authorization used once, the
// largest blob and the key's quotas, the accepted types), streamed to a
// file while hashed and cut off as soon as it passes what the key may still
// store or Config.UploadTimeout. The blob's hash must be the one the
// authorization's x tag names. Only http(s) URLs are fetched, and only from
// public addresses unless Config.MirrorPrivate.
func (s *Server) mirror(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	a := s.uploader(w, req)
	if a == nil {
		return
	}
	pk := a.Event.PubKey
	var body struct {
		URL string `json:"url"`
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(mirrorBodyTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.failed(w, "mirror", err)
		return
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, mirrorBodyLimit)).Decode(&body); err != nil {
		s.refuse(w, http.StatusBadRequest, `body must be JSON {"url": "..."}`)
		closeAfter(w, rc)
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	u, err := url.Parse(body.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		s.refuse(w, http.StatusBadRequest, "url must be an http or https URL")
		return
	}
	if !s.cfg.MirrorPrivate {
		if addr, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !publicAddr(addr) {
			s.refuse(w, http.StatusForbidden, "mirror: this server does not fetch from private or loopback addresses")
			return
		}
	}
	// With one x tag the blob is known before it is fetched: a hidden one is
	// refused, and one the key holds costs nothing.
	owned := false
	if len(a.Hashes) == 1 {
		if b, err := s.db.Get(ctx, a.Hashes[0]); err == nil && b.Hidden != "" {
			s.refuse(w, http.StatusForbidden, "blob hidden by moderation")
			return
		}
		if owned, err = s.db.Owns(ctx, a.Hashes[0], pk); err != nil {
			s.failed(w, "quota check", err)
			return
		}
	}
	limit, reason, err := s.remaining(ctx, pk, owned)
	if err != nil {
		s.failed(w, "quota check", err)
		return
	}
	if reason != "" {
		s.refuse(w, http.StatusRequestEntityTooLarge, reason)
		return
	}
	fresh, err := s.db.UseAuth(ctx, a.Event.ID, a.Expires, s.now())
	if err != nil {
		s.failed(w, "authorization record", err)
		return
	}
	if !fresh && !owned {
		s.refuse(w, http.StatusUnauthorized, "authorization already used")
		return
	}

	fetchCtx, cancel := context.WithTimeout(ctx, s.cfg.UploadTimeout)
	defer cancel()
	freq, err := http.NewRequestWithContext(fetchCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "url must be an http or https URL")
		return
	}
	freq.Header.Set("User-Agent", "communitynode-blossom-mirror")
	res, err := s.fetch.Do(freq)
	if err != nil {
		s.mirrorFailed(w, err)
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		s.refuse(w, http.StatusBadGateway, fmt.Sprintf("mirror: the URL answered %d", res.StatusCode))
		return
	}
	if ct := res.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/octet-stream") && !s.cfg.accepts(ct) {
		s.refuse(w, http.StatusUnsupportedMediaType, s.cfg.typesReason())
		return
	}
	if res.ContentLength > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(limit))
		return
	}
	sp, err := s.spool(res.Body, limit)
	if sp.tmp == "" {
		s.failed(w, "mirror", err)
		return
	}
	defer func() { _ = os.Remove(sp.tmp) }() // no-op once placed
	if sp.n > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(limit))
		return
	}
	if err != nil {
		s.mirrorFailed(w, err)
		return
	}
	hash := sp.hash
	if !a.Covers(hash) {
		s.refuse(w, http.StatusConflict, "mirror: the URL's blob does not match the authorization's x tag")
		return
	}
	if !fresh {
		if owned, err = s.db.Owns(ctx, hash, pk); err != nil || !owned {
			s.refuse(w, http.StatusUnauthorized, "authorization already used")
			return
		}
	}
	s.store(w, req, pk, hash, sp.n, contentType(res.Header.Get("Content-Type"), sp.head), sp.tmp)
}

// mirrorFailed answers a fetch that failed: 403 for a forbidden address, 504
// when it took longer than UploadTimeout, else 502.
func (s *Server) mirrorFailed(w http.ResponseWriter, err error) {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, errForbiddenAddress):
		s.refuse(w, http.StatusForbidden, "mirror: this server does not fetch from private or loopback addresses")
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		s.refuse(w, http.StatusGatewayTimeout, fmt.Sprintf("mirror: the fetch took longer than %s", s.cfg.UploadTimeout))
	default:
		s.log.Info("blossom mirror failed", "err", err)
		s.refuse(w, http.StatusBadGateway, "mirror: the URL could not be fetched")
	}
}
