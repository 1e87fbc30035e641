// Package audience names the URLs this node answers to, and checks that a
// signed request was made for one of them: a NIP-42 AUTH event's `relay` tag,
// a NIP-98 Authorization event's `u` tag (and, later, a Blossom server name).
//
// Promises:
//
//   - The set comes from configuration (the operator's public URLs) or, with
//     none configured, from the address the relay listens on, and only when that
//     address is loopback (Loopback). It never comes from anything a client
//     sends: a Host header is chosen by the client, so a hostile relay could
//     forward this relay's challenge to its own users and have them sign for
//     its name (the attack of issue 47).
//   - Two URLs name the same place when their host (without case or a
//     trailing dot), their port (ws and http mean 80, wss and https 443; a
//     missing scheme means wss) and their path (without a trailing slash) are
//     equal. The scheme itself is not compared: a TLS-terminating proxy hides it
//     from the relay, never the host, port or path.
//   - A Set is immutable and safe for concurrent use. The zero Set names
//     nothing: every check against it fails.
package audience

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// place is one URL in its compared form.
type place struct {
	host string // lower case, no trailing dot; IPv6 without brackets
	port string // explicit, or the scheme's default
	path string // escaped, without a trailing slash ("" for the root)
}

// Set is the URLs this node answers to.
type Set struct {
	places []place
	urls   []string // as configured, for messages and logs
}

// Parse builds the Set of the configured public URLs (ws, wss, http or https,
// each with a host). It refuses an empty list and any URL it cannot use.
func Parse(urls []string) (Set, error) {
	if len(urls) == 0 {
		return Set{}, errors.New("no URL")
	}
	var s Set
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		u, err := url.Parse(raw)
		if err != nil {
			return Set{}, fmt.Errorf("public url %q: %w", raw, err)
		}
		switch u.Scheme {
		case "ws", "wss", "http", "https":
		default:
			return Set{}, fmt.Errorf("public url %q: the scheme must be ws, wss, http or https", raw)
		}
		p, ok := placeOf(raw)
		if !ok {
			return Set{}, fmt.Errorf("public url %q: missing host", raw)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return Set{}, fmt.Errorf("public url %q: a relay URL has no user, query or fragment", raw)
		}
		s.places = append(s.places, p)
		s.urls = append(s.urls, raw)
	}
	return s, nil
}

// ErrNotLoopback is returned by Loopback for an address that others can reach:
// the URL clients use to reach it (a DNS name, a proxy, NAT) cannot be known
// from the address, so it must be configured.
var ErrNotLoopback = errors.New("the listen address is not loopback")

// Loopback builds the Set of a relay that listens on addr (host:port) with no
// public URL configured: every loopback name of that port (127.0.0.1,
// localhost and, for an IPv6 listener, ::1), at the root path. Such a relay
// is reached from this machine only, as `cnctl dev` and `make run` are. An
// address that is not loopback (0.0.0.0, a LAN or public address, a host
// name other than localhost) is ErrNotLoopback; a port of 0 is refused too.
func Loopback(addr string) (Set, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Set{}, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if port == "" || port == "0" {
		return Set{}, fmt.Errorf("listen address %q: no port", addr)
	}
	var names []string
	switch ip := net.ParseIP(host); {
	case strings.EqualFold(host, "localhost"):
		names = []string{"127.0.0.1", "localhost", "::1"}
	case ip != nil && ip.IsLoopback() && ip.To4() != nil:
		names = []string{host, "localhost"}
	case ip != nil && ip.IsLoopback():
		names = []string{"::1", "localhost"}
	default:
		return Set{}, fmt.Errorf("%w: %s", ErrNotLoopback, addr)
	}
	var s Set
	for _, n := range names {
		s.places = append(s.places, place{host: strings.ToLower(n), port: port})
	}
	s.urls = []string{"ws://" + net.JoinHostPort(names[0], port)}
	return s, nil
}

// Empty reports whether s names nothing.
func (s Set) Empty() bool { return len(s.places) == 0 }

// URLs returns the URLs as configured (for a Loopback set, the first loopback
// name's ws:// URL), for messages that tell a client what to sign.
func (s Set) URLs() []string { return append([]string(nil), s.urls...) }

// String is the URLs, comma separated.
func (s Set) String() string { return strings.Join(s.urls, ", ") }

// Names reports whether u (a NIP-42 `relay` tag, a NIP-98 `u` tag without its
// query) names one of the set's URLs. A URL without a scheme is read as wss://.
func (s Set) Names(u string) bool {
	p, ok := placeOf(u)
	if !ok {
		return false
	}
	for _, w := range s.places {
		if w == p {
			return true
		}
	}
	return false
}

// NamesRequest reports whether u (a NIP-98 `u` tag) names a request with
// the query rawQuery made to one of the set's URLs: the place as Names
// compares it, and the query exactly. The path compared is the configured
// URL's (a proxy in front of the relay may rewrite the path it forwards),
// and the host the request was sent to (its Host header) plays no part.
func (s Set) NamesRequest(u, rawQuery string) bool {
	parsed, err := url.Parse(strings.TrimSpace(u))
	if err != nil || parsed.RawQuery != rawQuery {
		return false
	}
	parsed.RawQuery, parsed.Fragment = "", ""
	return s.Names(parsed.String())
}

// placeOf parses a URL into its compared form.
func placeOf(raw string) (place, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return place{}, false
	}
	if !strings.Contains(raw, "://") {
		raw = "wss://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return place{}, false
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "ws", "http":
			port = "80"
		case "wss", "https":
			port = "443"
		default:
			return place{}, false
		}
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	return place{host: host, port: port, path: trimPath(u.EscapedPath())}, true
}

func trimPath(p string) string { return strings.TrimRight(p, "/") }
