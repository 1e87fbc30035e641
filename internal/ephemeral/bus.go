// Package ephemeral carries ephemeral events (NIP-01 kinds 20000-29999: NIP-46
// remote signing first) between the relay processes that share one database,
// through Postgres NOTIFY on the channel cn_relay_ephemeral. Nothing is written
// to any table: an ephemeral event exists only in the notification queue until
// every listener has read it.
//
// Promises:
//
//   - Publish returns nil once the event is committed to the notification queue:
//     every relay process listening then receives it, within the notification
//     latency (well under a millisecond on one machine), including the publishing
//     process itself (so one path delivers to every subscriber).
//   - An event larger than one notification payload (Postgres: under 8000
//     bytes) is sent as several chunks in one transaction and reassembled by
//     each listener; a listener delivers only whole, well-formed events.
//   - A listener delivers each event id at most once per recentIDs events, so an
//     app that sends the same request to two relays of the node is not answered
//     twice. Delivery is at most once: a relay whose listening connection is down
//     misses what is published meanwhile (ephemeral events are not kept).
//   - Memory is bounded: at most maxPartial incomplete events are held (the
//     oldest is dropped to make room), each up to maxEventBytes.
package ephemeral

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// Channel is the NOTIFY channel of ephemeral events.
const Channel = "cn_relay_ephemeral"

const (
	// chunkBytes is the most event JSON one notification carries (the payload
	// limit is 8000 bytes including the header).
	chunkBytes = 7800
	// maxEventBytes bounds one reassembled event (a relay's messages are smaller).
	maxEventBytes = 1 << 20
	// maxPartial bounds the events being reassembled at once.
	maxPartial = 64
	// recentIDs is how many recently delivered ids a listener remembers.
	recentIDs = 4096
)

// Bus publishes and receives ephemeral events on a Postgres database.
type Bus struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

// New returns a Bus on pool; logger may be nil.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Bus {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Bus{pool: pool, log: logger}
}

// Publish sends ev to every listener (see the package promises).
func (b *Bus) Publish(ctx context.Context, ev *nostr.Event) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode ephemeral event: %w", err)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	chunks := split(string(raw), chunkBytes)
	payloads := make([]string, len(chunks))
	for i, c := range chunks {
		payloads[i] = hex.EncodeToString(nonce[:]) + " " + strconv.Itoa(i) + " " + strconv.Itoa(len(chunks)) + " " + c
	}
	// One statement, one transaction: the chunks are queued together, in order.
	if _, err := b.pool.Exec(ctx, "SELECT pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS u(p, i) ORDER BY i",
		Channel, payloads); err != nil {
		return fmt.Errorf("publish ephemeral event: %w", err)
	}
	return nil
}

// split cuts s into pieces of at most n bytes, never inside a UTF-8 sequence (a
// notification payload must be valid text).
func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

// Listen receives ephemeral events until ctx is done and calls deliver for each
// whole, well-formed one, on one goroutine, in arrival order. deliver must not
// block. It reconnects after failures (outbox.ListenChannel).
func (b *Bus) Listen(ctx context.Context, deliver func(*nostr.Event)) {
	a := newAssembler()
	outbox.ListenChannel(ctx, b.pool.Config().ConnConfig, Channel, a.reset, func(payload string) {
		if ev := a.add(payload); ev != nil {
			deliver(ev)
		}
	}, b.log)
}

// assembler puts chunked events back together and drops repeats.
type assembler struct {
	mu      sync.Mutex
	partial map[string]*partial
	order   []string // partial nonces, oldest first
	seen    map[string]struct{}
	ring    []string
	next    int
}

type partial struct {
	parts []string
	have  int
	bytes int
}

func newAssembler() *assembler {
	return &assembler{partial: map[string]*partial{}, seen: map[string]struct{}{}, ring: make([]string, recentIDs)}
}

// reset drops partial events (after a reconnect their missing chunks are gone).
func (a *assembler) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.partial)
	a.order = a.order[:0]
}

// add takes one notification payload and returns the event it completes, if any.
func (a *assembler) add(payload string) *nostr.Event {
	nonce, rest, ok1 := strings.Cut(payload, " ")
	idx, rest, ok2 := strings.Cut(rest, " ")
	total, data, ok3 := strings.Cut(rest, " ")
	i, err1 := strconv.Atoi(idx)
	n, err2 := strconv.Atoi(total)
	if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n || n > maxEventBytes/chunkBytes+1 {
		return nil
	}
	var raw string
	if n == 1 {
		raw = data
	} else {
		a.mu.Lock()
		p := a.partial[nonce]
		if p == nil {
			if len(a.order) >= maxPartial {
				delete(a.partial, a.order[0])
				a.order = a.order[1:]
			}
			p = &partial{parts: make([]string, n)}
			a.partial[nonce] = p
			a.order = append(a.order, nonce)
		}
		if len(p.parts) != n || p.parts[i] != "" || p.bytes+len(data) > maxEventBytes {
			a.mu.Unlock()
			return nil
		}
		p.parts[i] = data
		p.have++
		p.bytes += len(data)
		if p.have < n {
			a.mu.Unlock()
			return nil
		}
		delete(a.partial, nonce)
		for k, o := range a.order {
			if o == nonce {
				a.order = append(a.order[:k], a.order[k+1:]...)
				break
			}
		}
		a.mu.Unlock()
		raw = strings.Join(p.parts, "")
	}
	ev := &nostr.Event{}
	if err := json.Unmarshal([]byte(raw), ev); err != nil || ev.ID == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.seen[ev.ID]; dup {
		return nil
	}
	if old := a.ring[a.next]; old != "" {
		delete(a.seen, old)
	}
	a.ring[a.next] = ev.ID
	a.next = (a.next + 1) % len(a.ring)
	a.seen[ev.ID] = struct{}{}
	return ev
}
