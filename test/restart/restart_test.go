package restart_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	topic = "restart"
	// sinceMargin is what a reconnecting client subtracts from the newest
	// created_at it saw: created_at has a resolution of one second, and an
	// event committed just after the close may be older than the newest seen.
	sinceMargin = 2
	// page is the limit of a resubscription's stored part (the relay's
	// --max-limit default): a client that gets a full page asks for the one
	// before it (until), as NIP-01 clients page.
	page = 500
	// shutdownTimeout is the relay's --shutdown-timeout (the hard limit).
	shutdownTimeout = 10 * time.Second
)

// TestRelayRestartUnderLoad is described in doc.go.
func TestRelayRestartUnderLoad(t *testing.T) {
	clients, churners, restarts, spread, every := 50, 2, 3, 2*time.Second, 100*time.Millisecond
	if testing.Short() {
		clients, churners, restarts, spread, every = 10, 1, 1, 500*time.Millisecond, 50*time.Millisecond
	}
	bin := build(t, "relay")
	db := pgtest.New(t)
	addr, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
	args := []string{"--listen", addr, "--metrics-listen", metrics, "--database-url", db.URL,
		"--reuse-port", "--drain-spread", spread.String(), "--shutdown-timeout", shutdownTimeout.String(),
		"--event-rate-ip", "0", "--event-rate-pubkey", "0", "--req-rate-ip", "0", "--max-conns-per-ip", "10000"}
	logs := t.TempDir()
	procs := []*proc{startProc(t, bin, args, filepath.Join(logs, "relay-0.log"), "relay serving")}
	defer func() {
		if t.Failed() {
			for i := range procs {
				b, _ := os.ReadFile(filepath.Join(logs, fmt.Sprintf("relay-%d.log", i)))
				t.Logf("relay %d log (last 3 KiB):\n%s", i, tail(b, 3072))
			}
		}
	}()

	url := "ws://" + addr
	began := time.Now().Unix()
	stopPublishing := make(chan struct{})
	cs := make([]*client, clients)
	var wg sync.WaitGroup
	for i := range cs {
		cs[i] = &client{id: i, url: url, key: nostr.GeneratePrivateKey(), since: began - sinceMargin,
			seen: map[string]bool{}, closes: map[int]int{}}
		wg.Go(func() { cs[i].run(t, stopPublishing, every) })
	}
	stopChurn := make(chan struct{})
	churn := make([]*churner, churners)
	var churnWG sync.WaitGroup
	for i := range churn {
		churn[i] = &churner{url: url}
		churnWG.Go(func() { churn[i].run(stopChurn) })
	}

	// progress waits until every client is on its connection n (1: the first)
	// and has had more events acknowledged on it.
	progress := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			for _, c := range cs {
				if conn, acks := c.progress(); conn < n || acks < 3 {
					return false
				}
			}
			return true
		}, 60*time.Second, 10*time.Millisecond, "clients make no progress on connection %d", n)
	}
	progress(1)
	for r := 1; r <= restarts; r++ {
		old := procs[len(procs)-1]
		procs = append(procs, startProc(t, bin, args, filepath.Join(logs, fmt.Sprintf("relay-%d.log", r)), "relay serving"))
		signalled := time.Now()
		require.NoError(t, old.stop(t, shutdownTimeout+10*time.Second), "the old relay exits 0")
		stopped := old.line("relay stopped")
		t.Logf("restart %d: the old relay exited %v after SIGTERM: %s", r, time.Since(signalled).Round(time.Millisecond), stopped)
		require.Contains(t, stopped, `"connections_cut":0`, "no connection was cut at the hard limit")
		progress(r + 1)
	}
	close(stopPublishing)
	wg.Wait()
	close(stopChurn)
	churnWG.Wait()

	// Every acknowledged event is stored and reached every client.
	var acked []string
	for _, c := range cs {
		acked = append(acked, c.acked...)
	}
	var stored int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_relay.events WHERE id = ANY($1)", acked).Scan(&stored))
	require.Equal(t, len(acked), stored, "every OK true is stored")
	allSeen := func() bool {
		for _, c := range cs {
			if c.missing(acked) > 0 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(30 * time.Second); !allSeen() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // (polling a condition with a deadline)
	}
	for _, c := range cs {
		if c.missing(acked) > 0 {
			c.mu.Lock()
			var miss []string
			for _, id := range acked {
				if !c.seen[id] {
					miss = append(miss, ackLog[id])
				}
			}
			t.Logf("client %d (reconnects: %v) misses %d: %v", c.id, c.reconnectLog, len(miss), miss)
			c.mu.Unlock()
			t.Fail()
		}
	}
	require.False(t, t.Failed(), "a client misses acknowledged events")

	var gaps, served []time.Duration
	dialErrs, resent, okFalse, churnDials, churnErrs := 0, 0, 0, 0, 0
	codes := map[int]int{}
	for _, c := range cs {
		c.mu.Lock()
		gaps = append(gaps, c.gaps...)
		served = append(served, c.served...)
		dialErrs += c.dialErrs
		resent += c.unanswered
		okFalse += c.okFalse
		for code, n := range c.closes {
			codes[code] += n
		}
		c.mu.Unlock()
		c.close()
	}
	for _, ch := range churn {
		churnDials += int(ch.dials.Load())
		churnErrs += int(ch.errs.Load())
		for code, n := range ch.closeCodes() {
			codes[code] += n
		}
	}
	slices.Sort(gaps)
	slices.Sort(served)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load average %s; from the dial to the first message: p50 %v, p99 %v, max %v",
		strings.TrimSpace(string(load)), pct(served, 50), pct(served, 99), pct(served, 100))
	t.Logf("%d clients, %d restarts (drain spread %v): %d events acknowledged, %d unanswered at a close and sent anew, %d OK false; "+
		"%d reconnects, gap from close to the first message on the new connection: p50 %v, p99 %v, max %v; "+
		"dial errors %d of the clients, %d of %d churning dials; close codes %v",
		clients, restarts, spread, len(acked), resent, okFalse, len(gaps),
		pct(gaps, 50), pct(gaps, 99), pct(gaps, 100), dialErrs, churnErrs, churnDials, codes)
	require.Zero(t, dialErrs, "no connection attempt of a client refused")
	require.Zero(t, churnErrs, "no connection attempt of a churning client refused")
	require.Zero(t, okFalse, "no event refused")
	require.Len(t, gaps, clients*restarts, "each client reconnected once per restart")
	for code := range codes {
		require.Equal(t, 1012, code, "every close is 1012 (service restart): %v", codes)
	}
}

// proc is a daemon process; its stderr (JSON log lines) is kept, and copied
// to a file.
type proc struct {
	cmd    *exec.Cmd
	exited chan error // its exit, once its stderr is read to the end
	mu     sync.Mutex
	lines  []string
}

// startProc starts bin and waits until it logs readyMsg.
func startProc(t *testing.T, bin string, args []string, logFile, readyMsg string) *proc {
	t.Helper()
	f, err := os.Create(logFile)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		p.exited <- p.cmd.Wait()
	}()
	p.waitLine(t, readyMsg, 60*time.Second)
	return p
}

// line returns the first line logging msg, or "".
func (p *proc) line(msg string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if strings.Contains(l, `"msg":"`+msg+`"`) {
			return l
		}
	}
	return ""
}

// waitLine waits until the process logs msg and returns that line.
func (p *proc) waitLine(t *testing.T, msg string, within time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		if l := p.line(msg); l != "" {
			return l
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			if l := p.line(msg); l != "" {
				return l
			}
			p.mu.Lock()
			t.Fatalf("%s exited (%v) before logging %q: %s", p.cmd.Path, err, msg, strings.Join(p.lines[max(0, len(p.lines)-10):], "\n"))
		case <-time.After(10 * time.Millisecond): // (polling for the line, with a deadline)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v", p.cmd.Path, msg, within)
		}
	}
}

// stop sends SIGTERM and waits for the exit (at most within).
func (p *proc) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exited:
		return err
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v of SIGTERM", p.cmd.Path, within)
		return nil
	}
}

// client publishes one note at a time and holds one subscription to every
// note, reconnecting when its connection closes.
type client struct {
	id  int
	url string
	key string

	mu           sync.Mutex
	ws           *websocket.Conn
	conns        int             // connections made
	acksOnConn   int             // OK true on the current connection
	acked        []string        // ids answered OK true
	seen         map[string]bool // ids received on the subscription
	since        int64           // the newest created_at seen, minus sinceMargin
	dialErrs     int
	okFalse      int
	unanswered   int // events a close left without an answer (sent anew)
	closes       map[int]int
	closedAt     time.Time       // when the current connection's reading ended
	gaps         []time.Duration // from a close to the first message on the next connection
	served       []time.Duration // of which from the dial to the first message
	reconnectLog []string
}

var (
	ackMu  sync.Mutex
	ackLog = map[string]string{}
)

// conn is one connection's reading side.
type conn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex // one writer at a time: the publisher, the pager
	oks     chan okMsg
	done    chan struct{}
	since   int64
	pages   int   // REQs sent
	stored  int   // events of the current REQ's stored part
	oldest  int64 // their lowest created_at
	pending bool  // the current REQ's EOSE has not come
	dialed  time.Time
}

func (cn *conn) write(v any) error {
	b, _ := json.Marshal(v)
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	return cn.ws.WriteMessage(websocket.TextMessage, b)
}

// req asks for the stored events from since up to until (0: now) and, for
// the first, the live ones after.
func (cn *conn) req(until int64) error {
	f := map[string]any{"#t": []string{topic}, "since": cn.since, "limit": page}
	if until > 0 {
		f["until"] = until
	}
	cn.pages++
	cn.stored, cn.oldest, cn.pending = 0, 0, true
	return cn.write([]any{"REQ", fmt.Sprintf("s%d", cn.pages), f})
}

type okMsg struct {
	id     string
	ok     bool
	reason string
}

func (c *client) progress() (conns, acks int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns, c.acksOnConn
}

func (c *client) missing(ids []string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, id := range ids {
		if !c.seen[id] {
			n++
		}
	}
	return n
}

func (c *client) close() {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if ws != nil {
		_ = ws.Close()
	}
}

// connect dials until it has a connection (every failure counted) and
// subscribes with since.
func (c *client) connect(t *testing.T) *conn {
	for attempt := 0; ; attempt++ {
		dialed := time.Now()
		ws, _, err := websocket.DefaultDialer.Dial(c.url, nil)
		if err != nil {
			c.mu.Lock()
			c.dialErrs++
			c.mu.Unlock()
			if attempt > 1000 {
				t.Errorf("client %d cannot connect: %v", c.id, err)
				return nil
			}
			continue
		}
		c.mu.Lock()
		c.reconnectLog = append(c.reconnectLog, fmt.Sprintf("at %s since %d", time.Now().Format("05.000"), c.since))
		c.ws = ws
		c.conns++
		c.acksOnConn = 0
		since := c.since
		reconnect := !c.closedAt.IsZero()
		closedAt := c.closedAt
		c.mu.Unlock()
		cn := &conn{ws: ws, oks: make(chan okMsg, 16), done: make(chan struct{}), since: since, dialed: dialed}
		if err := cn.req(0); err != nil {
			_ = ws.Close()
			continue
		}
		go c.read(cn, reconnect, closedAt)
		return cn
	}
}

// read reads cn until it ends, filing what comes.
func (c *client) read(cn *conn, reconnect bool, closedAt time.Time) {
	defer close(cn.done)
	first := true
	for {
		_, data, err := cn.ws.ReadMessage()
		if err != nil {
			code := -1 // cut without a close frame
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				code = ce.Code
			}
			c.mu.Lock()
			c.closes[code]++
			c.closedAt = time.Now()
			c.mu.Unlock()
			return
		}
		if first && reconnect {
			c.mu.Lock()
			c.gaps = append(c.gaps, time.Since(closedAt))
			c.served = append(c.served, time.Since(cn.dialed))
			c.mu.Unlock()
		}
		first = false
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			continue
		}
		var label string
		_ = json.Unmarshal(msg[0], &label)
		switch label {
		case "EVENT":
			var ev nostr.Event
			var sub string
			if len(msg) == 3 && json.Unmarshal(msg[1], &sub) == nil && json.Unmarshal(msg[2], &ev) == nil {
				c.mu.Lock()
				c.seen[ev.ID] = true
				c.since = max(c.since, int64(ev.CreatedAt)-sinceMargin)
				c.mu.Unlock()
				if cn.pending && sub == fmt.Sprintf("s%d", cn.pages) {
					cn.stored++
					if cn.oldest == 0 || int64(ev.CreatedAt) < cn.oldest {
						cn.oldest = int64(ev.CreatedAt)
					}
				}
			}
		case "EOSE":
			var sub string
			if json.Unmarshal(msg[1], &sub) == nil && sub == fmt.Sprintf("s%d", cn.pages) {
				cn.pending = false
				if cn.stored >= page {
					// A full page: the one before it (until is inclusive:
					// the events of its second come again, which the seen
					// set takes once).
					_ = cn.req(cn.oldest)
				}
			}
		case "OK":
			var m okMsg
			if len(msg) == 4 && json.Unmarshal(msg[1], &m.id) == nil && json.Unmarshal(msg[2], &m.ok) == nil {
				_ = json.Unmarshal(msg[3], &m.reason)
				cn.oks <- m
			}
		}
	}
}

// run publishes a note every interval, each once it has the previous one's
// answer, until stop; a note a close leaves unanswered is given up (it may or
// may not be stored, and counts as neither) and the client reconnects. It
// leaves the last connection open, its subscription reading on.
func (c *client) run(t *testing.T, stop <-chan struct{}, every time.Duration) {
	cn := c.connect(t)
	if cn == nil {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", topic}}, Content: fmt.Sprintf("client %d note %d", c.id, n)}
		if err := ev.Sign(c.key); err != nil {
			t.Errorf("sign: %v", err)
			return
		}
		_ = cn.write([]any{"EVENT", ev})
		select {
		case ok := <-cn.oks:
			c.mu.Lock()
			switch {
			case ok.id != ev.ID:
				t.Errorf("client %d: OK for %s, want %s", c.id, ok.id, ev.ID)
			case ok.ok:
				ackMu.Lock()
				ackLog[ev.ID] = fmt.Sprintf("c%d n%d created %d acked %s", c.id, n, ev.CreatedAt, time.Now().Format("05.000"))
				ackMu.Unlock()
				c.acked = append(c.acked, ev.ID)
				c.acksOnConn++
			default:
				c.okFalse++
				t.Logf("client %d: OK false %q", c.id, ok.reason)
			}
			c.mu.Unlock()
		case <-cn.done:
			c.mu.Lock()
			c.unanswered++
			c.mu.Unlock()
		}
		select {
		case <-cn.done:
			_ = cn.ws.Close()
			if cn = c.connect(t); cn == nil {
				return
			}
		default:
		}
	}
}

// churner connects, waits for the relay's first message (the NIP-42
// challenge) and leaves, again and again: the connection attempts that arrive
// while a listener closes.
type churner struct {
	url         string
	dials, errs atomic.Int64
	mu          sync.Mutex
	codes       map[int]int
}

func (ch *churner) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ch.dials.Add(1)
		ws, _, err := websocket.DefaultDialer.Dial(ch.url, nil)
		if err != nil {
			ch.errs.Add(1)
			continue
		}
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			code := -1
			if errors.As(err, &ce) {
				code = ce.Code
			}
			ch.mu.Lock()
			if ch.codes == nil {
				ch.codes = map[int]int{}
			}
			ch.codes[code]++
			ch.mu.Unlock()
		}
		_ = ws.Close()
	}
}

func (ch *churner) closeCodes() map[int]int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.codes
}

// build builds cmd/name and returns the binary's path.
func build(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "github.com/kukuri/communitynode/cmd/"+name).CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return filepath.Join(dir, name)
}

// pct is the p-th percentile of sorted (p 100: the largest).
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))].Round(time.Millisecond)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
