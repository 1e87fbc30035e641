// Package relaysync reconciles this node's events with another relay over
// NIP-77 and moves what is missing (cnctl sync).
//
// Promises:
//   - The reconciliation covers the events of one filter that an
//     unauthenticated reader may see on each side (store.Reader.SyncItems with
//     the public viewer; the remote relay applies its own rules).
//   - Downloaded events are not trusted: they are written as JSON Lines for
//     bulk.Importer, which stores them through the relay's admission and store
//     path (signatures, topic rules, bans, NIP-09, NIP-40). Only ids the
//     reconciliation found missing here are asked for.
//   - Uploaded events are the visible local events the remote lacks, sent as
//     EVENT messages; the remote's OK verdicts are counted by reason.
//   - Every wait for the remote is bounded by Options.Timeout: a relay that
//     does not speak NIP-77 (silence, or a NOTICE) ends the sync with an error
//     instead of hanging. The bound is a deadline for the awaited answer, not
//     for any message: a relay that keeps sending other messages (AUTH
//     challenges, events of other subscriptions) does not extend it. Remote
//     NEG messages are checked (negentropy.Check) before the library reads
//     them.
//   - Progress lines go to the progress writer at most once per
//     Options.ProgressEvery, plus one line when the reconciliation ends.
package relaysync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// Direction says what moves.
type Direction string

const (
	Down Direction = "down" // remote -> this node
	Up   Direction = "up"   // this node -> remote
	Both Direction = "both"
)

// ParseDirection accepts down, up or both.
func ParseDirection(s string) (Direction, error) {
	switch d := Direction(s); d {
	case Down, Up, Both:
		return d, nil
	}
	return "", fmt.Errorf("direction %q: want down, up or both", s)
}

// Options configure one sync.
type Options struct {
	URL       string
	Filter    nostr.Filter
	Direction Direction
	// Timeout bounds every wait for the remote's answer (default 15 s).
	Timeout time.Duration
	// FrameLimit bounds our NEG messages (default 60000 bytes before hex, which
	// fits the default 128 KiB message limit of relays).
	FrameLimit int
	// Batch is the ids per download REQ and per upload round (default 200).
	Batch int
	// ProgressEvery is the least time between two progress lines (default 1 s).
	ProgressEvery time.Duration
}

// progress writes throttled progress lines.
type progress struct {
	w     io.Writer
	every time.Duration
	last  time.Time
}

// due reports whether ProgressEvery has passed since the last line; when it
// has, the caller writes one (say) now.
func (p *progress) due() bool { return time.Since(p.last) >= p.every }

// say writes a line if one is due.
func (p *progress) say(format string, args ...any) {
	if p.due() {
		p.last = time.Now()
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}

// Local is this node's side: its items and its events by id.
type Local interface {
	Items(ctx context.Context, f nostr.Filter) ([]negentropy.Item, error)
	Events(ctx context.Context, ids []string) ([]*nostr.Event, error)
}

// Result is what a sync found and did.
type Result struct {
	Have, Need int // ids only here, only there
	Rounds     int // NEG-MSG round trips
	// NegBytesSent and NegBytesReceived are the NIP-77 messages' payloads
	// (the hex of NEG-OPEN's and the NEG-MSGs' messages, as sent), and
	// Reconcile the time from the NEG-OPEN to the last NEG-MSG.
	NegBytesSent, NegBytesReceived int64
	Reconcile                      time.Duration
	Downloaded                     int // events received for the needed ids
	Uploaded                       int // events the remote accepted
	// UploadRefused counts the remote's refusals by reason (OK false).
	UploadRefused map[string]int
}

// Run reconciles and moves events. Downloaded events are written to down as
// JSON Lines (nil when Direction is Up); the caller stores them. progress, if
// not nil, gets a line per phase.
func Run(ctx context.Context, local Local, o Options, down io.Writer, progressTo io.Writer) (Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.FrameLimit <= 0 {
		o.FrameLimit = 60000
	}
	if o.Batch <= 0 {
		o.Batch = 200
	}
	if progressTo == nil {
		progressTo = io.Discard
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	pr := &progress{w: progressTo, every: o.ProgressEvery, last: time.Now()}
	res := Result{UploadRefused: map[string]int{}}
	items, err := local.Items(ctx, o.Filter)
	if err != nil {
		return res, fmt.Errorf("local items: %w", err)
	}
	dialer := websocket.Dialer{HandshakeTimeout: o.Timeout}
	ws, _, err := dialer.DialContext(ctx, o.URL, nil)
	if err != nil {
		return res, fmt.Errorf("connect %s: %w", o.URL, err)
	}
	r := &remote{ws: ws, msgs: make(chan []json.RawMessage, 256), gone: make(chan struct{}), timeout: o.Timeout}
	go r.read()
	defer r.close()

	began := time.Now()
	have, need, rounds, err := r.reconcile(ctx, items, o, pr)
	res.Have, res.Need, res.Rounds = len(have), len(need), rounds
	res.NegBytesSent, res.NegBytesReceived, res.Reconcile = r.negSent, r.negReceived, time.Since(began)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progressTo, "sync: %d local items, %d only here, %d only there, %d rounds, NIP-77 messages %d bytes sent and %d received, reconciled in %s\n",
		len(items), len(have), len(need), rounds, r.negSent, r.negReceived, res.Reconcile.Round(time.Millisecond))
	if o.Direction == Down || o.Direction == Both {
		n, err := r.download(ctx, need, o.Batch, down, pr)
		res.Downloaded = n
		if err != nil {
			return res, fmt.Errorf("download: %w", err)
		}
	}
	if o.Direction == Up || o.Direction == Both {
		sent := 0
		for chunk := range slices.Chunk(have, o.Batch) {
			evs, err := local.Events(ctx, chunk)
			if err != nil {
				return res, fmt.Errorf("local events: %w", err)
			}
			ok, err := r.upload(ctx, evs, res.UploadRefused)
			res.Uploaded += ok
			if err != nil {
				return res, fmt.Errorf("upload: %w", err)
			}
			sent += len(chunk)
			pr.say("sync: uploaded %d of %d (%d accepted)", sent, len(have), res.Uploaded)
		}
	}
	return res, nil
}

type remote struct {
	ws      *websocket.Conn
	msgs    chan []json.RawMessage
	gone    chan struct{}
	err     error
	timeout time.Duration
	// negSent and negReceived add up the NIP-77 messages' payloads (hex).
	negSent, negReceived int64
}

func (r *remote) read() {
	defer close(r.gone)
	for {
		_, data, err := r.ws.ReadMessage()
		if err != nil {
			r.err = err
			return
		}
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) == 0 {
			continue // not a Nostr message: ignore it
		}
		r.msgs <- msg
	}
}

func (r *remote) close() {
	_ = r.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = r.ws.Close()
	<-r.gone
}

func (r *remote) send(parts ...any) error {
	data, err := json.Marshal(parts)
	if err != nil {
		return err
	}
	_ = r.ws.SetWriteDeadline(time.Now().Add(r.timeout))
	return r.ws.WriteMessage(websocket.TextMessage, data)
}

// deadline is when an answer asked for now is late.
func (r *remote) deadline() time.Time { return time.Now().Add(r.timeout) }

// next returns the next message, waiting until the deadline at most.
func (r *remote) next(ctx context.Context, deadline time.Time, waitingFor string) ([]json.RawMessage, string, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case msg := <-r.msgs:
		var typ string
		_ = json.Unmarshal(msg[0], &typ)
		return msg, typ, nil
	case <-r.gone:
		return nil, "", fmt.Errorf("connection lost waiting for %s: %w", waitingFor, r.err)
	case <-t.C:
		return nil, "", fmt.Errorf("no %s within %s", waitingFor, r.timeout)
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// reasonKey groups refusals whose text carries details, as cnctl import does:
// "invalid: x (detail)" counts as "invalid: x".
func reasonKey(reason string) string {
	if i := strings.LastIndex(reason, " ("); i > 0 && strings.HasSuffix(reason, ")") {
		return reason[:i]
	}
	return reason
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func newSubID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// reconcile runs the NIP-77 session and returns the ids only here and only
// there.
func (r *remote) reconcile(ctx context.Context, items []negentropy.Item, o Options, pr *progress) (have, need []string, rounds int, err error) {
	cl, err := negentropy.NewClient(items, o.FrameLimit)
	if err != nil {
		return nil, nil, 0, err
	}
	defer cl.Close()
	msg, err := cl.Start()
	if err != nil {
		return nil, nil, 0, err
	}
	sub := newSubID("cnsync-")
	r.negSent += int64(len(msg))
	if err := r.send("NEG-OPEN", sub, o.Filter, msg); err != nil {
		return nil, nil, 0, err
	}
	defer func() { _ = r.send("NEG-CLOSE", sub) }()
	deadline := r.deadline()
	for {
		m, typ, err := r.next(ctx, deadline, "NIP-77 answer (does the relay support NIP-77?)")
		if err != nil {
			return nil, nil, rounds, err
		}
		if len(m) < 2 || str(m[1]) != sub {
			if typ == "NOTICE" && len(m) >= 2 {
				return nil, nil, rounds, fmt.Errorf("relay answered NOTICE %q: it may not support NIP-77", str(m[1]))
			}
			continue // something else (AUTH challenge, ...)
		}
		switch typ {
		case "NEG-ERR":
			reason := ""
			if len(m) >= 3 {
				reason = str(m[2])
			}
			return nil, nil, rounds, fmt.Errorf("relay refused the sync: %s", reason)
		case "NEG-MSG":
			if len(m) != 3 {
				return nil, nil, rounds, errors.New("malformed NEG-MSG from the relay")
			}
			rounds++
			r.negReceived += int64(len(str(m[2])))
			next, done, err := cl.Reconcile(str(m[2]))
			if err != nil {
				return nil, nil, rounds, fmt.Errorf("relay's NEG-MSG: %w", err)
			}
			if done {
				have, need = cl.Result()
				return have, need, rounds, nil
			}
			r.negSent += int64(len(next))
			if err := r.send("NEG-MSG", sub, next); err != nil {
				return nil, nil, rounds, err
			}
			deadline = r.deadline()
			if pr.due() {
				h, n := cl.Result()
				pr.say("sync: reconciling, round %d: %d only here, %d only there so far", rounds, len(h), len(n))
			}
		default:
			return nil, nil, rounds, fmt.Errorf("unexpected %s during the sync", typ)
		}
	}
}

// download asks for the needed events by id, a batch per REQ, and writes each
// received event (for one of the asked ids) as a JSON line.
func (r *remote) download(ctx context.Context, need []string, batch int, w io.Writer, pr *progress) (int, error) {
	n := 0
	for chunk := range slices.Chunk(need, batch) {
		asked := map[string]bool{}
		for _, id := range chunk {
			asked[id] = true
		}
		sub := newSubID("cndl-")
		if err := r.send("REQ", sub, nostr.Filter{IDs: chunk, Limit: len(chunk)}); err != nil {
			return n, err
		}
		deadline := r.deadline()
		for done := false; !done; {
			m, typ, err := r.next(ctx, deadline, "events")
			if err != nil {
				return n, err
			}
			if len(m) < 2 || str(m[1]) != sub {
				continue
			}
			switch typ {
			case "EVENT":
				if len(m) != 3 {
					continue
				}
				var ev struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(m[2], &ev) != nil || !asked[ev.ID] {
					continue // not asked for: never stored
				}
				delete(asked, ev.ID)
				if _, err := w.Write(append(append([]byte(nil), m[2]...), '\n')); err != nil {
					return n, err
				}
				n++
				deadline = r.deadline() // an asked-for event: the relay is answering
				pr.say("sync: downloaded %d of %d", n, len(need))
			case "EOSE":
				done = true
				_ = r.send("CLOSE", sub)
			case "CLOSED":
				reason := ""
				if len(m) >= 3 {
					reason = str(m[2])
				}
				return n, fmt.Errorf("relay closed the download: %s", reason)
			}
		}
	}
	return n, nil
}

// upload sends evs and waits for every OK; it returns how many were accepted
// (duplicates included: the remote has them) and counts refusals by reason.
func (r *remote) upload(ctx context.Context, evs []*nostr.Event, refused map[string]int) (int, error) {
	pending := map[string]bool{}
	for _, ev := range evs {
		if err := r.send("EVENT", ev); err != nil {
			return 0, err
		}
		pending[ev.ID] = true
	}
	ok := 0
	deadline := r.deadline()
	for len(pending) > 0 {
		m, typ, err := r.next(ctx, deadline, "OK")
		if err != nil {
			return ok, err
		}
		if typ != "OK" || len(m) < 4 || !pending[str(m[1])] {
			continue
		}
		delete(pending, str(m[1]))
		deadline = r.deadline() // an awaited OK: the relay is answering
		var accepted bool
		_ = json.Unmarshal(m[2], &accepted)
		if accepted {
			ok++
			continue
		}
		refused[reasonKey(str(m[3]))]++
	}
	return ok, nil
}
