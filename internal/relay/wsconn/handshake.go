package wsconn

import (
	"crypto/sha1" //nolint:gosec // RFC 6455 4.2.2 names SHA-1
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Upgrader answers a WebSocket handshake (RFC 6455 4.2) with no more state
// than the answer: what it refuses it answers as gorilla/websocket's
// Upgrader did (the status's text, Sec-WebSocket-Version: 13).
type Upgrader struct {
	// HandshakeTimeout bounds the write of the 101 answer.
	HandshakeTimeout time.Duration
	// Deflate offers permessage-deflate (RFC 7692) to a client that asks for
	// it (see deflate.go); off, the extension is never negotiated.
	Deflate DeflateOptions
}

const badHandshake = "websocket: the client is not using the websocket protocol: "

// IsUpgrade reports whether req asks for a WebSocket (Connection: upgrade
// and Upgrade: websocket).
func IsUpgrade(req *http.Request) bool {
	return hasToken(req.Header, "Connection", "upgrade") && hasToken(req.Header, "Upgrade", "websocket")
}

// Upgrade checks req's handshake, takes the connection from w (an
// http.Hijacker) and answers 101; or answers the refusal and returns its
// error. Nothing of the connection is read after the request head: a client
// that sent more (data before the handshake's end) is refused.
func (u *Upgrader) Upgrade(w http.ResponseWriter, req *http.Request) (*Conn, error) {
	switch {
	case !hasToken(req.Header, "Connection", "upgrade"):
		return nil, refuseHandshake(w, http.StatusBadRequest, badHandshake+"'upgrade' token not found in 'Connection' header")
	case !hasToken(req.Header, "Upgrade", "websocket"):
		return nil, refuseHandshake(w, http.StatusBadRequest, badHandshake+"'websocket' token not found in 'Upgrade' header")
	case req.Method != http.MethodGet:
		return nil, refuseHandshake(w, http.StatusMethodNotAllowed, badHandshake+"request method is not GET")
	case !hasToken(req.Header, "Sec-Websocket-Version", "13"):
		return nil, refuseHandshake(w, http.StatusBadRequest, "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header")
	}
	key := req.Header.Get("Sec-Websocket-Key")
	if !validKey(key) {
		return nil, refuseHandshake(w, http.StatusBadRequest, "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header must be Base64 encoded value of 16-byte in length")
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, refuseHandshake(w, http.StatusInternalServerError, "websocket: response does not implement http.Hijacker")
	}
	var defl *deflater
	var ext string
	if u.Deflate.Enabled {
		defl, ext = u.Deflate.negotiate(req.Header)
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, refuseHandshake(w, http.StatusInternalServerError, err.Error())
	}
	if brw != nil && brw.Reader.Buffered() > 0 {
		_ = nc.Close()
		return nil, errors.New("websocket: client sent data before handshake is complete")
	}
	var b [256]byte
	resp := append(b[:0], "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = appendAcceptKey(resp, key)
	if ext != "" {
		resp = append(append(append(resp, "\r\nSec-WebSocket-Extensions: "...), ext...), "\r\n\r\n"...)
	} else {
		resp = append(resp, "\r\n\r\n"...)
	}
	if u.HandshakeTimeout > 0 {
		_ = nc.SetWriteDeadline(time.Now().Add(u.HandshakeTimeout))
	}
	if _, err := nc.Write(resp); err != nil {
		_ = nc.Close()
		return nil, err
	}
	if u.HandshakeTimeout > 0 {
		_ = nc.SetWriteDeadline(time.Time{})
	}
	c := New(nc)
	c.defl = defl
	return c, nil
}

// refuseHandshake answers a refused handshake as gorilla/websocket did.
func refuseHandshake(w http.ResponseWriter, status int, reason string) error {
	w.Header().Set("Sec-Websocket-Version", "13")
	http.Error(w, http.StatusText(status), status)
	return errors.New(reason)
}

// hasToken reports whether a comma-separated header field of h lists token
// (case-insensitively).
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h[http.CanonicalHeaderKey(name)] {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// validKey reports whether key is the base64 of 16 bytes.
func validKey(key string) bool {
	if len(key) != 24 {
		return false
	}
	var b [18]byte
	n, err := base64.StdEncoding.Decode(b[:], []byte(key))
	return err == nil && n == 16
}

const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// appendAcceptKey appends the Sec-WebSocket-Accept value for key.
func appendAcceptKey(b []byte, key string) []byte {
	h := sha1.New() //nolint:gosec // RFC 6455
	h.Write([]byte(key))
	h.Write([]byte(acceptGUID))
	var sum [sha1.Size]byte
	return base64.StdEncoding.AppendEncode(b, h.Sum(sum[:0]))
}
