package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// defaultHeadTimeout bounds the reading of a request head (Relay.headTimeout,
// also net/http's ReadHeaderTimeout) and the WebSocket handshake's write (the
// upgrader's HandshakeTimeout).
const defaultHeadTimeout = 10 * time.Second

// maxHeadBytes is the largest request head (request line and headers) the
// relay reads; a longer one is answered 431 and the connection closed.
const maxHeadBytes = 8 << 10

// acceptor serves a relay's listener. It reads each connection's request head
// itself (within Relay.headTimeout and maxHeadBytes, into a pooled buffer) and
// upgrades a WebSocket request (GET / with Upgrade: websocket and nothing
// after the head) through Relay.serveWebSocket with no net/http server
// connection, request goroutine or buffers: the connection keeps only what
// gorilla and the relay make for it. Every other request (NIP-11, NIP-86,
// /healthz, anything malformed) goes, with the bytes already read replayed,
// to the relay's http.Server, which serves that connection from then on
// (keep-alive included) exactly as it would have without the acceptor.
type acceptor struct {
	r    *Relay
	ln   net.Listener
	rest *connQueue // the listener the http.Server serves
	pool sync.Pool  // of *handshake

	mu      sync.Mutex
	heads   map[net.Conn]struct{} // connections whose head is being read
	stopped bool                  // the listener is closed (stop): no more accepts
	closed  bool                  // and the heads are cut (close): no more connections
	wg      sync.WaitGroup        // one per connection until upgraded, refused or handed over
}

func newAcceptor(r *Relay, ln net.Listener) *acceptor {
	a := &acceptor{r: r, ln: ln, rest: newConnQueue(ln.Addr()), heads: make(map[net.Conn]struct{})}
	a.pool.New = newHandshake
	return a
}

// run accepts connections until the listener fails or close is called; it
// returns nil after close and the listener's error otherwise.
func (a *acceptor) run() error {
	var delay time.Duration
	for {
		c, err := a.ln.Accept()
		if err != nil {
			if a.isStopped() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Temporary() { //nolint:staticcheck // as net/http: EMFILE and the like pass
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				a.r.log.Warn("relay accept", "err", err, "retry_in", delay.String())
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		// The deadline is set before the connection is registered, so that
		// close's deadline, set after, wins.
		_ = c.SetReadDeadline(time.Now().Add(a.r.headTimeout))
		if !a.add(c) {
			_ = c.Close()
			return nil
		}
		go a.serve(c)
	}
}

func (a *acceptor) isStopped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped
}

// stop stops accepting: it takes the connections waiting in the listener's
// accept queue, which are served as any other, then closes the listener. It
// returns how many it took. The heads being read are read on (close cuts
// them).
//
// Closing a listener resets the connections left in its accept queue (Linux
// moves them to another listener of the SO_REUSEPORT group instead only with
// net.ipv4.tcp_migrate_req=1): taking them first leaves only those completed
// in the instant between the last take and the close (docs/operations.md).
func (a *acceptor) stop() int {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return 0
	}
	a.stopped = true
	a.mu.Unlock()
	queued := takeQueued(a.ln)
	_ = a.ln.Close()
	for _, c := range queued {
		_ = c.SetReadDeadline(time.Now().Add(a.r.headTimeout))
		if !a.add(c) {
			_ = c.Close()
			continue
		}
		go a.serve(c)
	}
	return len(queued)
}

// waitUntil is wait, or less once ctx is done.
func (a *acceptor) waitUntil(ctx context.Context) {
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (a *acceptor) add(c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.heads[c] = struct{}{}
	a.wg.Add(1)
	return true
}

// headRead ends c's head read as far as close is concerned.
func (a *acceptor) headRead(c net.Conn) {
	a.mu.Lock()
	delete(a.heads, c)
	a.mu.Unlock()
}

// close stops accepting (stop, if it has not) and ends every head still
// being read (the connection is closed unanswered, as net/http does at a
// timeout); the connections already handed over (and a.rest) are the
// http.Server's to shut down, the upgraded ones the relay's.
func (a *acceptor) close() {
	a.stop()
	a.mu.Lock()
	a.closed = true
	for c := range a.heads {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
	a.mu.Unlock()
	// a.rest is closed by the http.Server's Shutdown: closed before, it would
	// end the server's Serve with an error.
}

// wait returns once every accepted connection has been upgraded, refused or
// handed over (after close and the http.Server's Shutdown: within the
// upgrader's HandshakeTimeout plus the relay's WriteTimeout).
func (a *acceptor) wait() { a.wg.Wait() }

// handshake is what reading a head and upgrading need, pooled: none of it
// stays with a connection (gorilla, with the relay's ReadBufferSize and
// WriteBufferPool, keeps neither the reader nor the writer it is handed).
type handshake struct {
	raw [maxHeadBytes]byte
	src bytes.Reader
	br  *bufio.Reader // parses raw; gorilla's Hijack reader
	bw  *bufio.Writer // gorilla writes the 101 response in its buffer
	rw  bufio.ReadWriter
	w   upgradeResponse
}

func newHandshake() any {
	h := &handshake{br: bufio.NewReaderSize(nil, 1024), bw: bufio.NewWriterSize(nil, 256)}
	h.rw = bufio.ReadWriter{Reader: h.br, Writer: h.bw}
	return h
}

// errHeadTooLarge is a request head longer than maxHeadBytes.
var errHeadTooLarge = errors.New("request head too large")

// serve reads c's request head and upgrades c, refuses it or hands it over.
func (a *acceptor) serve(c net.Conn) {
	defer a.wg.Done()
	h := a.pool.Get().(*handshake)
	n, end, err := readHead(c, h.raw[:])
	a.headRead(c)
	if err != nil {
		a.pool.Put(h)
		a.refuse(c, err)
		return
	}
	a.handle(c, h, n, end)
	a.pool.Put(h)
}

// refuse closes c, whose head could not be read: unanswered after a timeout,
// an EOF or a reset, as net/http does; with net/http's 431 answer, to the
// byte, after a head too large.
func (a *acceptor) refuse(c net.Conn, err error) {
	defer c.Close()
	if !errors.Is(err, errHeadTooLarge) {
		return
	}
	const publicErr = "431 Request Header Fields Too Large"
	_ = c.SetWriteDeadline(time.Now().Add(a.r.cfg.WriteTimeout))
	_, _ = io.WriteString(c, "HTTP/1.1 "+publicErr+"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+publicErr)
	// The client may still be writing its head: closing with its bytes
	// unread would reset the connection, and the answer with it. Read what
	// comes for a while (net/http waits as long), keeping none of it.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64*maxHeadBytes))
}

// handle serves the request whose head is h.raw[:end] (n bytes read).
func (a *acceptor) handle(c net.Conn, h *handshake, n, end int) {
	h.src.Reset(h.raw[:end])
	h.br.Reset(&h.src)
	req, err := http.ReadRequest(h.br)
	h.br.Reset(nil)
	if err != nil || n != end || !plainUpgrade(req) {
		// net/http answers or serves it, as if it had read the head.
		a.rest.push(&replayConn{Conn: c, pending: append([]byte(nil), h.raw[:n]...)})
		return
	}
	req.RemoteAddr = c.RemoteAddr().String()
	h.w = upgradeResponse{conn: c, rw: &h.rw}
	a.r.serveWebSocket(&h.w, req)
	h.w.finish(a.r.cfg.WriteTimeout)
	h.w = upgradeResponse{}
	h.br.Reset(nil)
	h.bw.Reset(nil)
}

// readHead reads from c into buf until buf holds a request head (up to and
// including the empty line that ends it): n bytes read, the head's end, or
// the read's error or errHeadTooLarge.
func readHead(c net.Conn, buf []byte) (n, end int, err error) {
	for n < len(buf) {
		m, rerr := c.Read(buf[n:])
		from := max(0, n-2)
		n += m
		if end := headEnd(buf[from:n]); end >= 0 {
			return n, from + end, nil
		}
		if rerr != nil {
			return n, 0, rerr
		}
	}
	return n, 0, errHeadTooLarge
}

// headEnd is the end of the first empty line in b ("\n\n" or "\n\r\n", as
// net/http's parser takes a bare LF for a line end), or -1.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// plainUpgrade reports whether req is a WebSocket upgrade to / that net/http
// would pass to the relay's handler as it is: HTTP/1.1, a well-formed Host
// (http.ReadRequest has moved it to req.Host), no body. Anything else is left to net/http.
func plainUpgrade(req *http.Request) bool {
	return req.Method == http.MethodGet && req.URL.Path == "/" && req.ProtoAtLeast(1, 1) &&
		req.Host != "" && validHost(req.Host) &&
		req.ContentLength == 0 && len(req.TransferEncoding) == 0 &&
		wsconn.IsUpgrade(req)
}

// validHost reports whether h holds only the bytes net/http accepts in a Host
// header (httpguts.ValidHostHeader).
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// upgradeResponse is the http.ResponseWriter and http.Hijacker the acceptor
// gives Relay.serveWebSocket: Hijack hands over the connection and the
// handshake's reader and writer; a refusal (http.Error, or the upgrader's
// answer to a bad handshake) is written by finish, with Connection: close.
type upgradeResponse struct {
	conn     net.Conn
	rw       *bufio.ReadWriter
	header   http.Header
	status   int
	body     []byte
	hijacked bool
}

func (w *upgradeResponse) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

func (w *upgradeResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *upgradeResponse) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// Hijack hands over the connection, with nothing buffered in the reader.
func (w *upgradeResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	return w.conn, w.rw, nil
}

// finish writes the response and closes the connection unless it was hijacked.
func (w *upgradeResponse) finish(timeout time.Duration) {
	if w.hijacked {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h := w.Header()
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Content-Length", strconv.Itoa(len(w.body)))
	h.Set("Connection", "close")
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(w.status) + " " + http.StatusText(w.status) + "\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(w.body)
	_ = w.conn.SetWriteDeadline(time.Now().Add(timeout))
	_, _ = w.conn.Write(b.Bytes())
	_ = w.conn.Close()
}

// connQueue is the net.Listener the relay's http.Server serves: the
// connections the acceptor hands over.
type connQueue struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{conns: make(chan net.Conn), done: make(chan struct{}), addr: addr}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// push hands c to the http.Server, or closes it once the queue is closed.
func (q *connQueue) push(c net.Conn) {
	select {
	case q.conns <- c:
	case <-q.done:
		_ = c.Close()
	}
}

// replayConn is a connection whose first reads return pending: the bytes the
// acceptor read before handing it over.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return c.Conn.Read(p)
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return n, nil
}
