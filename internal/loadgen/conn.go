package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// maxMessage bounds one relay message (a REQ answer is one message per event).
const maxMessage = 16 << 20

// CheckURL accepts ws:// and wss:// URLs with a host.
func CheckURL(raw string) error {
	if raw == "" {
		return errors.New("no relay URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bad relay URL %q: %w", raw, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return fmt.Errorf("bad relay URL %q: want ws:// or wss://", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("bad relay URL %q: no host", raw)
	}
	return nil
}

// conn is one client WebSocket. Only its worker reads and writes it; Close may be
// called from anywhere.
type conn struct {
	ws      *websocket.Conn
	timeout time.Duration
	dead    bool // set by its worker once the connection failed
}

// dialAll opens n connections in parallel. On any failure it closes the others
// and returns the first error.
func dialAll(ctx context.Context, rawURL string, n int, timeout time.Duration) ([]*conn, error) {
	conns := make([]*conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			conns[i], errs[i] = dial(ctx, rawURL, timeout)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to %s: %w", rawURL, ctx.Err())
		}
		for i, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("connect to %s (connection %d of %d): %w", rawURL, i+1, n, e)
			}
		}
	}
	return conns, nil
}

func dial(ctx context.Context, rawURL string, timeout time.Duration) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: timeout} // no proxy: latency is the relay's
	ws, resp, err := d.DialContext(ctx, rawURL, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %s)", err, resp.Status)
		}
		return nil, err
	}
	ws.SetReadLimit(maxMessage)
	return &conn{ws: ws, timeout: timeout}, nil
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

// close says goodbye briefly and closes the socket.
func (c *conn) close() {
	_ = c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(100*time.Millisecond))
	_ = c.ws.Close()
}

// live returns the connections that have not failed.
func live(conns []*conn) []*conn {
	var out []*conn
	for _, c := range conns {
		if !c.dead {
			out = append(out, c)
		}
	}
	return out
}

// closeOnCancel closes every connection when ctx ends (unblocking their reads);
// the returned stop undoes that.
func closeOnCancel(ctx context.Context, conns []*conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.ws.Close()
		}
	})
}

func (c *conn) write(msg []byte) error {
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.TextMessage, msg)
}

// read returns the next message, waiting until deadline at most.
func (c *conn) read(deadline time.Time) ([]byte, error) {
	if err := c.ws.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	_, data, err := c.ws.ReadMessage()
	return data, err
}

// relayMsg is a parsed relay message: its label and the raw elements after it.
type relayMsg struct {
	label string
	args  []json.RawMessage
}

func parseRelayMsg(data []byte) (relayMsg, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil || len(arr) == 0 {
		return relayMsg{}, fmt.Errorf("not a JSON array: %.80s", data)
	}
	var m relayMsg
	if err := json.Unmarshal(arr[0], &m.label); err != nil {
		return relayMsg{}, fmt.Errorf("no label: %.80s", data)
	}
	m.args = arr[1:]
	return m, nil
}

// str returns args[i] as a string ("" if absent or not a string).
func (m relayMsg) str(i int) string {
	var s string
	if i < len(m.args) {
		_ = json.Unmarshal(m.args[i], &s)
	}
	return s
}

// ok parses ["OK", id, accepted, message].
func (m relayMsg) ok() (id string, accepted bool, msg string, err error) {
	if len(m.args) < 2 {
		return "", false, "", errors.New("short OK")
	}
	if err := json.Unmarshal(m.args[0], &id); err != nil {
		return "", false, "", fmt.Errorf("OK id: %w", err)
	}
	if err := json.Unmarshal(m.args[1], &accepted); err != nil {
		return "", false, "", fmt.Errorf("OK flag: %w", err)
	}
	return id, accepted, m.str(2), nil
}
