package blossom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/platform/ratelimit"
)

// Defaults of Config's zero fields.
const (
	DefaultMaxBlobBytes    = 100 << 20
	DefaultQuotaBytes      = 1 << 30
	DefaultQuotaBlobs      = 1000
	DefaultUploadTimeout   = 10 * time.Minute
	DefaultMaxAuthLifetime = 24 * time.Hour
	DefaultListLimit       = 1000
)

// The default per-address rates (Config.UploadRatePerIP, RequestRatePerIP):
// an upload every 5 s after a burst of 30, and 50 requests a second after a
// burst of 300 (a feed's page of pictures).
var (
	DefaultUploadRatePerIP  = ratelimit.Rate{PerSecond: 0.2, Burst: 30}
	DefaultRequestRatePerIP = ratelimit.Rate{PerSecond: 50, Burst: 300}
)

// Config is a Blossom server's settings.
type Config struct {
	// Dir holds the blob files (Files); required.
	Dir string
	// PublicURL is the base of the descriptors' urls (scheme and host, no
	// path); "" takes them from each request (its Host, https behind a proxy
	// that says X-Forwarded-Proto: https).
	PublicURL string
	// MaxBlobBytes is the largest blob; QuotaBytes and QuotaBlobs bound each
	// key's claims. Zero: the defaults; negative: no bound.
	MaxBlobBytes int64
	QuotaBytes   int64
	QuotaBlobs   int
	// UploadTimeout bounds the reading of an upload's body (a slow client
	// is cut off with 408). Zero: the default.
	UploadTimeout time.Duration
	// MaxAuthLifetime is how far ahead an authorization's expiration may be
	// (its id is remembered until then). Zero: the default.
	MaxAuthLifetime time.Duration
	// Types, if set, are the media types accepted ("image/png", or "image/*"
	// for a whole top-level type); others are refused 415. Empty: any.
	Types []string
	// UploadRatePerIP bounds the uploads (PUT /upload, PUT /mirror) of one
	// client address, RequestRatePerIP all its requests (uploads included);
	// past either the answer is 429 with Retry-After. An IPv6 client counts
	// by its /64 (ratelimit.AddrKey). Zero: the defaults; a negative
	// PerSecond: no limit.
	UploadRatePerIP  ratelimit.Rate
	RequestRatePerIP ratelimit.Rate
	// MirrorPrivate lets PUT /mirror (BUD-04) fetch from loopback, private,
	// link-local and other non-public addresses; off, such a URL (or a name
	// resolving to one) is refused 403, so that a member cannot make the
	// node reach its own network (SSRF).
	MirrorPrivate bool
}

// accepts reports whether the media type typ (parameters ignored) is one of
// Types.
func (c Config) accepts(typ string) bool {
	if len(c.Types) == 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(typ)
	if err != nil {
		return false
	}
	top, _, _ := strings.Cut(mt, "/")
	for _, t := range c.Types {
		if t == mt || t == top+"/*" || t == "*/*" {
			return true
		}
	}
	return false
}

func (c Config) typesReason() string {
	return "media type not accepted here: " + strings.Join(c.Types, ", ")
}

func (c Config) withDefaults() Config {
	pick64 := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	c.MaxBlobBytes = pick64(c.MaxBlobBytes, DefaultMaxBlobBytes)
	c.QuotaBytes = pick64(c.QuotaBytes, DefaultQuotaBytes)
	c.QuotaBlobs = int(pick64(int64(c.QuotaBlobs), DefaultQuotaBlobs))
	if c.UploadTimeout <= 0 {
		c.UploadTimeout = DefaultUploadTimeout
	}
	if c.MaxAuthLifetime <= 0 {
		c.MaxAuthLifetime = DefaultMaxAuthLifetime
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	rate := func(r, d ratelimit.Rate) ratelimit.Rate {
		switch {
		case r == ratelimit.Rate{}:
			return d
		case r.PerSecond < 0:
			return ratelimit.Rate{}
		}
		return r
	}
	c.UploadRatePerIP = rate(c.UploadRatePerIP, DefaultUploadRatePerIP)
	c.RequestRatePerIP = rate(c.RequestRatePerIP, DefaultRequestRatePerIP)
	return c
}

// Deps is what a Server asks of the node.
type Deps struct {
	Pool *pgxpool.Pool
	// MayUpload says whether pubkey may upload (the node's notion of a relay
	// member: membership.Service.IsMember); required.
	MayUpload func(ctx context.Context, pubkey string) (bool, error)
	// Banned, if set, names banned keys (NIP-86 banpubkey): they may not
	// upload, and a blob whose every owner is banned is not served.
	Banned func(pubkey string) bool
	// ClientIP, if set, is a request's client address (the node wires the
	// relay's, relay.ClientIP, which honours its --real-ip-header); nil:
	// the TCP peer.
	ClientIP func(req *http.Request) string
	// IPBlocked, if set, names blocked client addresses (NIP-86 blockip):
	// every request from one is refused 403.
	IPBlocked func(ip string) bool
	Now       func() time.Time
	Logger    *slog.Logger
	// Registerer receives the server's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
}

// Server serves Blossom (BUD-01, 02, 06, 08, 11) over HTTP. See doc.go.
type Server struct {
	cfg  Config
	db   *DB
	deps Deps
	log  *slog.Logger
	now  func() time.Time
	m    metrics

	uploads  *ratelimit.Limiter // per client address: Config.UploadRatePerIP
	requests *ratelimit.Limiter // Config.RequestRatePerIP
	fetch    *http.Client       // PUT /mirror's (newMirrorClient)
}

// New returns a Server; it creates the blob directory and clears what
// interrupted uploads left in it.
func New(cfg Config, deps Deps) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("blossom: no blob directory")
	}
	if deps.Pool == nil || deps.MayUpload == nil {
		return nil, errors.New("blossom: Pool and MayUpload are required")
	}
	cfg = cfg.withDefaults()
	files := Files{Dir: cfg.Dir}
	if err := files.Init(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, db: &DB{Pool: deps.Pool, Files: files}, deps: deps, log: deps.Logger, now: deps.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.uploads = ratelimit.New(cfg.UploadRatePerIP, s.now)
	s.requests = ratelimit.New(cfg.RequestRatePerIP, s.now)
	s.fetch = newMirrorClient(cfg.MirrorPrivate)
	s.m = newMetrics(deps.Registerer)
	return s, nil
}

// DB returns the server's metadata store.
func (s *Server) DB() *DB { return s.db }

var blobPath = regexp.MustCompile(`^/([0-9a-f]{64})(\.[A-Za-z0-9]{1,16})?$`)
var hexKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ServeHTTP answers the Blossom endpoints: GET and HEAD /<sha256>[.ext],
// DELETE /<sha256>, PUT and HEAD /upload, GET /list/<pubkey>, and OPTIONS
// on any of them; anything else 404. Every answer carries
// Access-Control-Allow-Origin: *. A blocked client address is refused 403
// and one past its rate 429 before anything else.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	// What a browser app on another origin may read: the refusal's reason and
	// wait, and what range requests and caches need (BUD-01 asks for none of
	// them, but a client without them cannot resume a download).
	h.Set("Access-Control-Expose-Headers", "X-Reason, Retry-After, Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified")
	if !s.admit(w, req) {
		return
	}
	if req.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Headers", "Authorization, *")
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, DELETE")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p := req.URL.Path
	switch {
	case p == "/mirror":
		if req.Method != http.MethodPut {
			s.refuse(w, http.StatusMethodNotAllowed, "use PUT on /mirror")
			return
		}
		s.mirror(w, req)
	case p == "/upload":
		switch req.Method {
		case http.MethodPut:
			s.upload(w, req)
		case http.MethodHead:
			s.uploadCheck(w, req)
		default:
			s.refuse(w, http.StatusMethodNotAllowed, "use PUT or HEAD on /upload")
		}
	case strings.HasPrefix(p, "/list/"):
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			s.refuse(w, http.StatusMethodNotAllowed, "use GET on /list")
			return
		}
		s.list(w, req, strings.TrimPrefix(p, "/list/"))
	default:
		m := blobPath.FindStringSubmatch(p)
		if m == nil {
			s.refuse(w, http.StatusNotFound, "not found")
			return
		}
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			s.get(w, req, m[1])
		case http.MethodDelete:
			s.delete(w, req, m[1])
		default:
			s.refuse(w, http.StatusMethodNotAllowed, "use GET, HEAD or DELETE on a blob")
		}
	}
}

// admit applies the per-address protections: NIP-86 blockip (403), the
// request rate and, for an upload, the upload rate (429 with Retry-After).
// It answers a refusal itself and reports whether the request may go on.
func (s *Server) admit(w http.ResponseWriter, req *http.Request) bool {
	ip := s.clientIP(req)
	if s.deps.IPBlocked != nil && s.deps.IPBlocked(ip) {
		s.refuse(w, http.StatusForbidden, "your address is blocked from this server")
		return false
	}
	key := ratelimit.AddrKey(ip)
	if ok, wait := s.requests.Allow(key); !ok {
		s.limited(w, wait, "rate-limited: too many requests from your address")
		return false
	}
	if req.Method == http.MethodPut && (req.URL.Path == "/upload" || req.URL.Path == "/mirror") {
		if ok, wait := s.uploads.Allow(key); !ok {
			s.limited(w, wait, "rate-limited: too many uploads from your address")
			return false
		}
	}
	return true
}

// clientIP is req's client address: Deps.ClientIP's, else the TCP peer.
func (s *Server) clientIP(req *http.Request) string {
	if s.deps.ClientIP != nil {
		return s.deps.ClientIP(req)
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// limited answers 429 with Retry-After.
func (s *Server) limited(w http.ResponseWriter, wait time.Duration, reason string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	s.refuse(w, http.StatusTooManyRequests, reason)
}

// refuse answers status with the X-Reason header and a JSON body.
func (s *Server) refuse(w http.ResponseWriter, status int, reason string) {
	s.m.refused.WithLabelValues(strconv.Itoa(status)).Inc()
	w.Header().Set("X-Reason", reason)
	if status == http.StatusUnauthorized {
		// RFC 9110: a 401 names its scheme; the relay's NIP-86 endpoint says the same.
		w.Header().Set("WWW-Authenticate", "Nostr")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": reason})
}

func (s *Server) failed(w http.ResponseWriter, what string, err error) {
	s.log.Warn("blossom "+what+" failed", "err", err)
	s.refuse(w, http.StatusServiceUnavailable, what+" failed; try again")
}

func (s *Server) get(w http.ResponseWriter, req *http.Request, hash string) {
	b, err := s.db.Get(req.Context(), hash)
	switch {
	case errors.Is(err, ErrNotFound):
		s.refuse(w, http.StatusNotFound, "blob not found")
		return
	case err != nil:
		s.failed(w, "read", err)
		return
	}
	if reason := s.unavailable(b); reason != "" {
		s.refuse(w, http.StatusUnavailableForLegalReasons, reason)
		return
	}
	f, err := os.Open(s.db.Files.Path(hash))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			s.refuse(w, http.StatusNotFound, "blob not found")
			return
		}
		s.failed(w, "read", err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", b.Type)
	h.Set("ETag", `"`+hash+`"`)
	h.Set("Cache-Control", "public, max-age=86400, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	s.m.served.Inc()
	http.ServeContent(w, req, "", b.Created, f)
}

// unavailable says why a stored blob is not served, or "".
func (s *Server) unavailable(b *Blob) string {
	if b.Hidden != "" {
		return "blob hidden by moderation"
	}
	if s.deps.Banned != nil && len(b.Owners) > 0 {
		for _, o := range b.Owners {
			if !s.deps.Banned(o) {
				return ""
			}
		}
		return "blob hidden: its uploaders are banned"
	}
	return ""
}

// uploader checks an upload's authorization and its author's right to
// upload; it answers the refusal itself and returns nil then.
func (s *Server) uploader(w http.ResponseWriter, req *http.Request) *Auth {
	a, aerr := parseAuth(req, VerbUpload, s.now(), s.cfg.MaxAuthLifetime, s.host(req))
	if aerr != nil {
		s.refuse(w, aerr.status, aerr.reason)
		return nil
	}
	if len(a.Hashes) == 0 {
		s.refuse(w, http.StatusUnauthorized, "authorization needs an x tag naming the blob")
		return nil
	}
	pk := a.Event.PubKey
	if s.deps.Banned != nil && s.deps.Banned(pk) {
		s.refuse(w, http.StatusForbidden, "banned")
		return nil
	}
	ok, err := s.deps.MayUpload(req.Context(), pk)
	if err != nil {
		s.failed(w, "membership check", err)
		return nil
	}
	if !ok {
		s.refuse(w, http.StatusForbidden, "only members of this community may upload")
		return nil
	}
	return a
}

// noLimit is the size bound with neither a largest blob nor a byte quota
// (LimitReader's limit+1 must not overflow).
const noLimit = math.MaxInt64 / 2

// remaining returns how many bytes pubkey may still upload in one blob, or a
// refusal (413) when its count quota is used up; owned says the blob named
// is pubkey's already (it costs nothing).
func (s *Server) remaining(ctx context.Context, pubkey string, owned bool) (int64, string, error) {
	limit := s.cfg.MaxBlobBytes
	if limit <= 0 {
		limit = noLimit
	}
	if owned {
		return limit, "", nil
	}
	u, err := s.db.Usage(ctx, s.db.Pool, pubkey)
	if err != nil {
		return 0, "", err
	}
	if s.cfg.QuotaBlobs > 0 && u.Blobs >= s.cfg.QuotaBlobs {
		return 0, fmt.Sprintf("blob count quota used up: %d blobs", s.cfg.QuotaBlobs), nil
	}
	if s.cfg.QuotaBytes > 0 {
		left := max(s.cfg.QuotaBytes-u.Bytes, 0)
		if left < limit {
			return left, "", nil
		}
	}
	return limit, "", nil
}

func (s *Server) tooLarge(limit int64) string {
	if s.cfg.MaxBlobBytes > 0 && limit >= s.cfg.MaxBlobBytes {
		return fmt.Sprintf("blob too large: at most %d bytes", s.cfg.MaxBlobBytes)
	}
	return fmt.Sprintf("byte quota: %d bytes left of %d", limit, s.cfg.QuotaBytes)
}

// uploadCheck answers HEAD /upload (BUD-06) from X-SHA-256,
// X-Content-Length and X-Content-Type.
func (s *Server) uploadCheck(w http.ResponseWriter, req *http.Request) {
	hash := strings.ToLower(req.Header.Get("X-SHA-256"))
	if !hexKey.MatchString(hash) {
		s.refuse(w, http.StatusBadRequest, "X-SHA-256 must be a hex SHA-256")
		return
	}
	lstr := req.Header.Get("X-Content-Length")
	if lstr == "" {
		s.refuse(w, http.StatusLengthRequired, "X-Content-Length required")
		return
	}
	size, err := strconv.ParseInt(lstr, 10, 64)
	if err != nil || size < 0 {
		s.refuse(w, http.StatusBadRequest, "X-Content-Length must be a number of bytes")
		return
	}
	if t := req.Header.Get("X-Content-Type"); t != "" {
		if _, _, err := mime.ParseMediaType(t); err != nil {
			s.refuse(w, http.StatusBadRequest, "X-Content-Type is not a media type")
			return
		}
		if !s.cfg.accepts(t) {
			s.refuse(w, http.StatusUnsupportedMediaType, s.cfg.typesReason())
			return
		}
	}
	if s.cfg.MaxBlobBytes > 0 && size > s.cfg.MaxBlobBytes {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(s.cfg.MaxBlobBytes))
		return
	}
	a := s.uploader(w, req)
	if a == nil {
		return
	}
	if !a.Covers(hash) {
		s.refuse(w, http.StatusForbidden, "authorization x tag does not name this blob")
		return
	}
	if b, err := s.db.Get(req.Context(), hash); err == nil && b.Hidden != "" {
		s.refuse(w, http.StatusForbidden, "blob hidden by moderation")
		return
	}
	owned, err := s.db.Owns(req.Context(), hash, a.Event.PubKey)
	if err != nil {
		s.failed(w, "quota check", err)
		return
	}
	limit, reason, err := s.remaining(req.Context(), a.Event.PubKey, owned)
	if err != nil {
		s.failed(w, "quota check", err)
		return
	}
	if reason != "" {
		s.refuse(w, http.StatusRequestEntityTooLarge, reason)
		return
	}
	if size > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(limit))
		return
	}
	w.WriteHeader(http.StatusOK)
}

// upload answers PUT /upload (BUD-02): the body is streamed to a file in
// the blob directory while it is hashed, never held in memory, and cut off
// (413) as soon as it passes the size its author may still store, or (408)
// when it takes longer than UploadTimeout.
func (s *Server) upload(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	a := s.uploader(w, req)
	if a == nil {
		return
	}
	pk := a.Event.PubKey
	claimed := strings.ToLower(req.Header.Get("X-SHA-256"))
	if claimed != "" {
		if !hexKey.MatchString(claimed) {
			s.refuse(w, http.StatusBadRequest, "X-SHA-256 must be a hex SHA-256")
			return
		}
		if !a.Covers(claimed) {
			s.refuse(w, http.StatusForbidden, "authorization x tag does not name this blob")
			return
		}
	}
	if ct := req.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/octet-stream") && !s.cfg.accepts(ct) {
		s.refuse(w, http.StatusUnsupportedMediaType, s.cfg.typesReason())
		return
	}
	owned := false
	if claimed != "" {
		var err error
		if owned, err = s.db.Owns(ctx, claimed, pk); err != nil {
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
	if req.ContentLength > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(limit))
		return
	}
	fresh, err := s.db.UseAuth(ctx, a.Event.ID, a.Expires, s.now())
	if err != nil {
		s.failed(w, "authorization record", err)
		return
	}
	// A used upload authorization is refused unless its key still holds the
	// blob: then the upload changes nothing (and a client that signs the
	// same upload twice within a second makes the same event, id included).
	// It is never a way back in for a blob its key deleted.
	if !fresh && claimed != "" && !owned {
		s.refuse(w, http.StatusUnauthorized, "authorization already used")
		return
	}

	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.UploadTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.failed(w, "upload", err)
		return
	}
	sp, err := s.spool(req.Body, limit)
	if sp.tmp == "" {
		s.failed(w, "upload", err)
		return
	}
	defer func() { _ = os.Remove(sp.tmp) }() // no-op once placed
	if sp.n > limit {
		s.refuse(w, http.StatusRequestEntityTooLarge, s.tooLarge(limit))
		closeAfter(w, rc)
		return
	}
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			s.refuse(w, http.StatusRequestTimeout, fmt.Sprintf("upload took longer than %s", s.cfg.UploadTimeout))
		} else {
			s.log.Info("blossom upload cut", "err", err)
			s.refuse(w, http.StatusBadRequest, "upload body could not be read")
		}
		closeAfter(w, rc)
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	hash := sp.hash
	if claimed != "" && hash != claimed {
		s.refuse(w, http.StatusConflict, "body does not match X-SHA-256")
		return
	}
	if !a.Covers(hash) {
		s.refuse(w, http.StatusForbidden, "authorization x tag does not name this blob")
		return
	}
	if !fresh && claimed == "" {
		if owned, err = s.db.Owns(ctx, hash, pk); err != nil {
			s.failed(w, "upload", err)
			return
		}
		if !owned {
			s.refuse(w, http.StatusUnauthorized, "authorization already used")
			return
		}
	}
	s.store(w, req, pk, hash, sp.n, contentType(req.Header.Get("Content-Type"), sp.head), sp.tmp)
}

// spooled is a body written to a temporary file of the blob store while it
// was hashed (spool).
type spooled struct {
	tmp  string // the file ("" when it could not be created); the caller removes it unless store placed it
	n    int64  // bytes read: at most the limit + 1, so that a caller sees a body past the limit
	hash string // hex SHA-256 of those bytes
	head []byte // their first 512 bytes, for the type (contentType)
}

// spool copies at most limit+1 bytes of body into a new temporary file of the
// blob store, hashing them, then fsyncs and closes the file: the one path an
// upload's and a mirror's bytes take to disk, never held in memory. An error
// with tmp set is the body's or the disk's; with tmp "", the file's creation.
func (s *Server) spool(body io.Reader, limit int64) (spooled, error) {
	f, err := s.db.Files.Temp()
	if err != nil {
		return spooled{}, err
	}
	sp := spooled{tmp: f.Name()}
	hasher := sha256.New()
	var sniff sniffer
	sp.n, err = io.Copy(io.MultiWriter(f, hasher, &sniff), io.LimitReader(body, limit+1))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	sp.hash, sp.head = hex.EncodeToString(hasher.Sum(nil)), sniff.head
	return sp, err
}

// store records the blob hash (n bytes of type typ, written and fsynced to
// tmp) as pk's and answers its descriptor: 201 when new to pk, 200 when pk
// held it already; the quota is checked again in the transaction (413).
func (s *Server) store(w http.ResponseWriter, req *http.Request, pk, hash string, n int64, typ, tmp string) {
	ctx := req.Context()
	if !s.cfg.accepts(typ) {
		s.refuse(w, http.StatusUnsupportedMediaType, s.cfg.typesReason())
		return
	}
	now := s.now().Truncate(time.Second)
	created, err := s.db.Add(ctx, hash, n, typ, pk, tmp, Quota{Bytes: s.cfg.QuotaBytes, Blobs: s.cfg.QuotaBlobs}, now)
	switch {
	case errors.Is(err, ErrQuota):
		s.refuse(w, http.StatusRequestEntityTooLarge, "quota exceeded")
		return
	case errors.Is(err, ErrHidden):
		s.refuse(w, http.StatusForbidden, "blob hidden by moderation")
		return
	case err != nil:
		s.failed(w, "upload", err)
		return
	}
	b, err := s.db.Get(ctx, hash)
	if err != nil {
		s.failed(w, "upload", err)
		return
	}
	b.Uploaded = now
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		s.m.uploadedBytes.Add(float64(n))
	}
	s.m.uploads.Inc()
	s.writeJSON(w, status, s.descriptor(req, b, true))
}

// closeAfter asks for the connection to be closed after a refusal whose
// body was not read to its end (so the rest is not parsed as a request).
func closeAfter(w http.ResponseWriter, rc *http.ResponseController) {
	w.Header().Set("Connection", "close")
	_ = rc.Flush()
}

func (s *Server) delete(w http.ResponseWriter, req *http.Request, hash string) {
	a, aerr := parseAuth(req, VerbDelete, s.now(), s.cfg.MaxAuthLifetime, s.host(req))
	if aerr != nil {
		s.refuse(w, aerr.status, aerr.reason)
		return
	}
	if !a.Covers(hash) {
		s.refuse(w, http.StatusForbidden, "authorization x tag does not name this blob")
		return
	}
	fresh, err := s.db.UseAuth(req.Context(), a.Event.ID, a.Expires, s.now())
	if err != nil {
		s.failed(w, "authorization record", err)
		return
	}
	if !fresh {
		s.refuse(w, http.StatusUnauthorized, "authorization already used")
		return
	}
	err = s.db.Remove(req.Context(), hash, a.Event.PubKey, s.now())
	switch {
	case errors.Is(err, ErrNotFound):
		s.refuse(w, http.StatusNotFound, "you have no such blob")
	case err != nil:
		s.failed(w, "delete", err)
	default:
		s.m.deletes.Inc()
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) list(w http.ResponseWriter, req *http.Request, pubkey string) {
	if !hexKey.MatchString(pubkey) {
		s.refuse(w, http.StatusBadRequest, "pubkey must be 64 lower-case hex digits")
		return
	}
	var since, until time.Time
	for name, t := range map[string]*time.Time{"since": &since, "until": &until} {
		if v := req.URL.Query().Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				s.refuse(w, http.StatusBadRequest, name+" must be a unix time")
				return
			}
			*t = time.Unix(n, 0)
		}
	}
	out := []descriptor{}
	if s.deps.Banned == nil || !s.deps.Banned(pubkey) {
		blobs, err := s.db.List(req.Context(), pubkey, since, until, DefaultListLimit)
		if err != nil {
			s.failed(w, "list", err)
			return
		}
		for i := range blobs {
			out = append(out, s.descriptor(req, &blobs[i], false))
		}
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// descriptor is a blob descriptor (BUD-02), with NIP-94 tags (BUD-08) on
// upload answers.
type descriptor struct {
	URL      string     `json:"url"`
	SHA256   string     `json:"sha256"`
	Size     int64      `json:"size"`
	Type     string     `json:"type"`
	Uploaded int64      `json:"uploaded"`
	NIP94    [][]string `json:"nip94,omitempty"`
}

func (s *Server) descriptor(req *http.Request, b *Blob, nip94 bool) descriptor {
	url := s.base(req) + "/" + b.SHA256 + extension(b.Type)
	d := descriptor{URL: url, SHA256: b.SHA256, Size: b.Size, Type: b.Type, Uploaded: b.Uploaded.Unix()}
	if nip94 {
		d.NIP94 = [][]string{{"url", url}, {"m", b.Type}, {"x", b.SHA256}, {"ox", b.SHA256}, {"size", strconv.FormatInt(b.Size, 10)}}
	}
	return d
}

// base is the scheme and host of the descriptors' urls.
func (s *Server) base(req *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if req.TLS != nil || strings.EqualFold(req.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + req.Host
}

// host is the domain name an authorization's server tags must name.
func (s *Server) host(req *http.Request) string {
	if s.cfg.PublicURL != "" {
		if _, rest, ok := strings.Cut(s.cfg.PublicURL, "://"); ok {
			return hostName(strings.SplitN(rest, "/", 2)[0])
		}
	}
	return hostName(req.Host)
}

// sniffer keeps the first 512 bytes written (for content sniffing).
type sniffer struct{ head []byte }

func (s *sniffer) Write(p []byte) (int, error) {
	if room := 512 - len(s.head); room > 0 {
		s.head = append(s.head, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// contentType is the type to store: the upload's Content-Type when it is a
// valid media type other than application/octet-stream, else what the
// first bytes look like (http.DetectContentType).
func contentType(header string, head []byte) string {
	if mt, params, err := mime.ParseMediaType(header); err == nil && mt != "application/octet-stream" {
		return mime.FormatMediaType(mt, params)
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(head)
}

var extensions = map[string]string{
	"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp",
	"image/svg+xml": ".svg", "image/avif": ".avif", "image/heic": ".heic",
	"video/mp4": ".mp4", "video/webm": ".webm", "video/quicktime": ".mov",
	"audio/mpeg": ".mp3", "audio/ogg": ".ogg", "audio/mp4": ".m4a", "audio/wav": ".wav", "audio/webm": ".weba",
	"application/pdf": ".pdf", "text/plain": ".txt", "application/json": ".json", "application/octet-stream": ".bin",
}

// extension is the file extension of a descriptor's url for typ (BUD-02
// asks for one); ".bin" when none is known.
func extension(typ string) string {
	mt, _, err := mime.ParseMediaType(typ)
	if err != nil {
		return ".bin"
	}
	if e, ok := extensions[mt]; ok {
		return e
	}
	if es, _ := mime.ExtensionsByType(mt); len(es) > 0 {
		return es[0]
	}
	return ".bin"
}
