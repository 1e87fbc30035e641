package relay

import (
	"errors"
	"fmt"
	"net"

	"runtime"
	"time"

	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/protocol"
)

// Rate is a token bucket: PerSecond tokens are added per second up to Burst.
// A zero PerSecond disables the limit. (The relay's per-IP and per-pubkey
// limits, and Blossom's, are the same limiter: package ratelimit.)
type Rate = ratelimit.Rate

func validateRate(name string, r Rate) error {
	switch {
	case r.PerSecond < 0:
		return fmt.Errorf("%s: rate must not be negative, got %v", name, r.PerSecond)
	case r.Enabled() && r.Burst < 1:
		return fmt.Errorf("%s: burst must be at least 1, got %d", name, r.Burst)
	}
	return nil
}

// DefaultAuthGrace is AuthConfig.Grace's default: long enough for an app's
// signer to answer a challenge (a browser extension's prompt excepted), short
// enough that an app that never signs in waits little for its CLOSED.
const DefaultAuthGrace = 2 * time.Second

// AuthConfig configures NIP-42 authentication.
type AuthConfig struct {
	// Enabled accepts AUTH messages (default true). It is the only way
	// protected (NIP-70) events can be published and direct messages (kinds 4
	// and 1059) read. A connection is sent its challenge once: on connect when
	// ChallengeOnConnect or either Required* is set, else with its first
	// auth-required answer.
	Enabled bool
	// ChallengeOnConnect sends the challenge as soon as a client connects
	// (default true), as most relays do. Apps sign in when they see a
	// challenge (nostr-tools' Relay.onauth and SimplePool's automaticallyAuth,
	// NDK's signIn policy), so an app is signed in by the time it asks for its
	// direct messages, and that first inbox REQ is answered in full. (A REQ sent
	// at the very instant of connecting can cross the challenge on the wire; it
	// is refused auth-required, and answered in full when sent again after
	// AUTH.) It costs one message per connection (["AUTH","<32 hex>"], 45 bytes
	// on the wire).
	// When false (lazy), the challenge comes only with the first auth-required
	// answer: a client that reads only public events is never asked, and an
	// app's first inbox REQ is refused (it reads its inbox once it has signed
	// in and asks again). Nothing is sent when Enabled is false.
	ChallengeOnConnect bool
	// RequiredForWrites answers EVENTs from unauthenticated connections with
	// OK false "auth-required: ...".
	RequiredForWrites bool
	// RequiredForReads answers REQ and COUNT from unauthenticated connections with
	// CLOSED "auth-required: ...".
	RequiredForReads bool
	// Grace is how long after connecting a REQ that needs authentication is
	// held, instead of closed auth-required, while the connection has sent no
	// AUTH yet (default 2 s; 0: never held): the REQ of an app that asks at
	// the instant it connects, before its signer answered the challenge, is
	// then answered in full (signin.go).
	Grace time.Duration
}

// Info is what the NIP-11 document says about the relay and its operator
// (NIP-86 changerelayname/description/icon override the first three at run time).
type Info struct {
	Name          string   `json:"name,omitempty"`
	Description   string   `json:"description,omitempty"`
	Icon          string   `json:"icon,omitempty"`
	Banner        string   `json:"banner,omitempty"`
	PubKey        string   `json:"pubkey,omitempty"` // the operator's (hex)
	Self          string   `json:"self,omitempty"`   // the node's own key (hex): it signs labels, assertions and NIP-29 group state
	Contact       string   `json:"contact,omitempty"`
	PostingPolicy string   `json:"posting_policy,omitempty"`
	TermsOfServ   string   `json:"terms_of_service,omitempty"`
	PrivacyPolicy string   `json:"privacy_policy,omitempty"`
	Countries     []string `json:"relay_countries,omitempty"`
	Languages     []string `json:"language_tags,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	// Retention is NIP-11's `retention` (what the operator promises to keep).
	Retention []Retention `json:"retention,omitempty"`
	Version   string      `json:"-"`
}

// Retention is one NIP-11 `retention` entry: for these kinds (all when empty),
// events are kept Time seconds (nil: forever) and at most Count of them.
type Retention struct {
	Kinds []any  `json:"kinds,omitempty"` // numbers, or [from, to] ranges
	Time  *int64 `json:"time,omitempty"`
	Count *int64 `json:"count,omitempty"`
}

// Config is everything the relay is told; cmd/relay fills it from flags.
type Config struct {
	// Listen is the TCP address Run serves on: WebSocket, NIP-11, NIP-86 and
	// /healthz (see Handler). The node's default is node.DefaultRelayListen.
	Listen string
	// MetricsListen is the TCP address Run serves /metrics on (MetricsHandler),
	// apart from the public Listen; keep it private (the node's default is
	// node.DefaultRelayMetricsListen). Empty serves no metrics.
	MetricsListen string
	// PublicURLs are the relay's URLs as clients see them (wss://host/path; more
	// than one for a relay reached under several names). AUTH events (NIP-42
	// `relay`) and NIP-86 requests (NIP-98 `u`) must name one of them. Empty
	// means the address Serve listens on, which must then be loopback (Serve
	// refuses any other): never the client's Host header. See package audience.
	PublicURLs []string
	// Media, if set, is the node's Blossom server as NIP-11 names it (its
	// own field `blossom`); the server itself is Deps.Media or elsewhere.
	Media *MediaInfo
	// RealIPHeader names a header set by a trusted reverse proxy that carries the
	// client's address (X-Real-IP, or X-Forwarded-For: its last entry, the one the
	// proxy added, is used). A value that is not an IP address is ignored (the TCP
	// peer address counts, see Relay.clientIP). Empty means the TCP peer address. Never set it without
	// such a proxy: clients could pick their own address and dodge the per-IP
	// limits.
	RealIPHeader string

	Limits protocol.Limits

	// BatchMaxEvents and BatchMaxDelay bound a group commit: a batch is handed to
	// Store.Ingest when it holds BatchMaxEvents events or its first event has
	// waited BatchMaxDelay, whichever comes first.
	BatchMaxEvents int
	BatchMaxDelay  time.Duration
	// IngestConcurrency is how many Ingest calls may run at once; further events
	// wait (and the clients sending them are read no further) meanwhile. The
	// default, 1, makes the batches as large as the load: every batch pays a
	// fixed cost (round trips, statement setup, two commits, the outbox lock),
	// and the appends are serialised by the outbox lock anyway. Measured on
	// 2 vCPUs (scripts/ingest-cost.sh, 16 connections): 1 against 2 gave more
	// events/s, a lower OK p99 and ~30% less Postgres CPU per event. Raise it
	// when the database is far away (round trips dominate) or has many cores.
	IngestConcurrency int
	// IngestTimeout bounds one Store.Ingest call.
	IngestTimeout time.Duration

	// SendQueueSize bounds a connection's queue of outgoing messages.
	// SendQueueBytes is the connection's memory budget: the bytes of everything
	// held for it, its send queue, the live events its subscriptions hold while
	// their queries run, and the stored events its queries have read and not yet
	// queued (a query stops reading rows at three quarters of it: the client gets
	// what fit, then EOSE). A client that lets the budget or the queue fill up is
	// disconnected as too slow. Nothing is held for an idle connection, so only
	// busy connections pay for large limits. SendQueueBytes must be at least
	// Limits.MaxMessageBytes.
	SendQueueSize  int
	SendQueueBytes int
	// TotalQueueBytes is the relay's memory budget: what all connections'
	// budgets hold together, at most. When it is full, the connection holding
	// the most is disconnected as too slow to make room, and queries stop
	// reading. It must be at least SendQueueBytes.
	TotalQueueBytes int
	// MaxSubscriptions is the number of open subscriptions per connection.
	MaxSubscriptions int
	// MaxQueriesPerConn is the number of REQ/COUNT queries a connection may have
	// running at once; its further messages are read when one ends.
	MaxQueriesPerConn int
	// MaxConnsPerIP is the number of simultaneous connections per client address.
	// This and the per-IP rates count an IPv6 client by its /64 (see ratelimit.AddrKey).
	MaxConnsPerIP int
	// Deflate offers permessage-deflate (RFC 7692) to clients that ask for it,
	// in its no-context-takeover form only: nothing is kept per connection,
	// a compressor (about 1.2 MB) or decompressor (about 45 KB) is taken from
	// a pool per message written or read (see wsconn.DeflateOptions).
	Deflate bool

	EventRatePerIP     Rate // EVENT and AUTH messages per client address
	EventRatePerPubkey Rate // EVENT messages per event author
	ReqRatePerIP       Rate // REQ and COUNT messages per client address

	Auth AuthConfig
	Info Info

	// Negentropy serves NIP-77 (NEG-OPEN, NEG-MSG, NEG-CLOSE) from the
	// store's SyncStore part; NIP-11 lists 77 only then. Default true.
	Negentropy bool
	// NegTree keeps the NIP-77 fingerprint tree (negentropy_tree.go) of the
	// events an anonymous reader may read, so that sessions of {} or a time
	// window of such readers are served without reading their items (96
	// bytes of memory per event, more for events that expire, are replaceable
	// or are in a group). Off, or while the tree is not ready, or when events
	// may be stored without a topic (TopicRules.RequireTopic off, or such
	// events found stored at start: they have no outbox rows to follow),
	// every session reads its items. Default true.
	NegTree bool
	// MaxSyncEvents bounds the events one NIP-77 session covers: over it,
	// NEG-OPEN is answered NEG-ERR "blocked: ..." with the limit as the 4th
	// element. It also bounds what a connection's sessions hold together:
	// each item is charged 160 bytes (negItemBytes) to the connection's sync
	// budget, MaxSyncEvents items' worth, until its session ends (NEG-ERR
	// "blocked: ..." beyond); a session served from the tree (NegTree) holds
	// no items, and is charged negTreeSessionBytes, but its items count
	// towards the connection's MaxSyncEvents all the same. A round costs
	// O(log n) per range either way (prefix sums, or the tree): a session
	// over 1,000,000 items with 1% differences takes a few seconds of relay
	// CPU (docs/negentropy.md).
	MaxSyncEvents int
	// NegConcurrency is how many NIP-77 rounds the whole relay computes at
	// once; the others wait their turn (their connection's further messages
	// too), so that a burst of sessions cannot take every CPU from REQs.
	NegConcurrency int
	// MaxSyncLoads is how many NIP-77 sessions the whole relay reads items
	// for at once (the database work of a NEG-OPEN), so that a burst of
	// sessions cannot take the database from REQs. A session beyond it waits
	// its turn (negentropy_queue.go: a FIFO per connection, the connections
	// served round-robin), holding no items and no query slot; with
	// MaxQueuedSyncsPerConn or MaxQueuedSyncs 0, none waits (it is refused). The items a
	// session holds are charged to its connection's sync budget
	// (MaxSyncEvents items' worth per connection, drawn from TotalQueueBytes)
	// until it ends.
	MaxSyncLoads int
	// MaxQueuedSyncsPerConn bounds the NIP-77 sessions of one connection
	// waiting for a load (MaxSyncLoads); a NEG-OPEN beyond it is answered
	// NEG-ERR "rate-limited: ...". Apps open one session per filter (about
	// a dozen at once); sessions also count against MaxSubscriptions, so at
	// the defaults (20 and 20) it is never reached: it matters when
	// MaxSubscriptions is raised.
	MaxQueuedSyncsPerConn int
	// MaxQueuedSyncs bounds the NIP-77 sessions waiting for a load on the
	// whole relay; a NEG-OPEN beyond it is answered NEG-ERR "rate-limited:
	// ...". A waiting session is charged about 1 KiB plus its initial
	// message to its connection's sync budget (so to TotalQueueBytes): the
	// default, 100,000, is 10,000 members' apps each opening 10 sessions at
	// the same instant.
	MaxQueuedSyncs int
	// NegFrameLimit bounds each NEG-MSG answer, in bytes of binary message
	// (the hex on the wire is twice that); at least 4096.
	NegFrameLimit int
	// NegIdleTimeout ends a NIP-77 session that has had no NEG-MSG for this
	// long after its last answer, with NEG-ERR "closed: ...". A session
	// waiting for its load (MaxSyncLoads) has had no answer yet: waiting
	// never times it out.
	NegIdleTimeout time.Duration

	// Groups says that the store hosts NIP-29 groups (store.Store.SetGroups,
	// with the node key named by Info.Self): NIP-11 lists 29. The relay itself
	// treats group events like any other; the store decides them.
	Groups bool
	// GroupAdmins read every NIP-29 group, private and hidden ones included,
	// once authenticated (NIP-42): the relay's admins (--admin-pubkeys).
	// The node key (Info.Self) always does.
	GroupAdmins []string

	// Membership is the NIP-43 mode ("open" or "invite"; "" when the relay
	// has no node key and offers no NIP-43): NIP-11 lists 43 when set, and
	// "invite" sets restricted_writes. The store refuses non-members' events
	// in invite mode; the relay routes 28934/28936 and invite REQs to
	// Deps.Members.
	Membership string

	// CacheBytes bounds the event cache (package eventcache): the newest
	// visible public events, kept in memory by the outbox follower, from which
	// a REQ whose whole answer it provably holds is answered without the
	// database. 0 turns it off (every REQ reads the database). The
	// composition root (node.Relay) builds the cache with it and puts its
	// Reader in front of Deps.Reads (Deps.Cache); the relay fills it from its
	// store's RecentStore part (Deps.Store).
	CacheBytes int

	// QueryTimeout bounds one read of a REQ's stored part (Reader.Read, and
	// its handoff) or one Reader.Count call.
	QueryTimeout time.Duration
	// PingInterval is how often a ping is sent; ReadTimeout is how long a
	// connection may stay silent (no message, no pong) before it is dropped.
	PingInterval time.Duration
	ReadTimeout  time.Duration
	// WriteTimeout bounds one write to a socket.
	WriteTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown: the final flush, the delivery
	// of the last answers and the close handshakes. Connections still open
	// when it ends are cut.
	ShutdownTimeout time.Duration
	// DrainSpread, when positive, makes the shutdown a restart's drain (see
	// Relay.Serve): the open connections are closed with 1012 (service
	// restart) one by one, in random order, evenly spread over DrainSpread,
	// so that their clients do not all reconnect at the same instant. Zero
	// closes every connection at once with 1001 (going away). It must be
	// shorter than ShutdownTimeout.
	DrainSpread time.Duration
	// ReusePort binds Listen and MetricsListen with SO_REUSEPORT, so that a
	// new relay process with the same configuration can listen beside this
	// one before this one is stopped (docs/operations.md, "Restarts without
	// downtime"). Off, a second process on the address fails to start.
	ReusePort bool
}

// DefaultConfig returns a Config with every default filled in except the
// addresses, which the process chooses (internal/node declares the node's).
func DefaultConfig() Config {
	return Config{
		Limits:                protocol.DefaultLimits(),
		BatchMaxEvents:        200,
		BatchMaxDelay:         5 * time.Millisecond,
		IngestConcurrency:     1,
		IngestTimeout:         10 * time.Second,
		SendQueueSize:         4096,
		SendQueueBytes:        4 << 20,
		TotalQueueBytes:       256 << 20,
		MaxSubscriptions:      20,
		MaxQueriesPerConn:     4,
		MaxConnsPerIP:         100,
		EventRatePerIP:        Rate{PerSecond: 50, Burst: 100},
		EventRatePerPubkey:    Rate{PerSecond: 50, Burst: 100},
		ReqRatePerIP:          Rate{PerSecond: 20, Burst: 50},
		Negentropy:            true,
		NegTree:               true,
		MaxSyncEvents:         1_000_000,
		NegFrameLimit:         60_000,
		NegConcurrency:        max(1, runtime.GOMAXPROCS(0)/2),
		MaxSyncLoads:          2,
		MaxQueuedSyncsPerConn: 20,
		MaxQueuedSyncs:        100_000,
		CacheBytes:            64 << 20,
		NegIdleTimeout:        60 * time.Second,
		QueryTimeout:          10 * time.Second,
		PingInterval:          30 * time.Second,
		ReadTimeout:           60 * time.Second,
		WriteTimeout:          10 * time.Second,
		ShutdownTimeout:       10 * time.Second,
		// AUTH is offered by default: direct messages (kinds 4, 1059) are served
		// to their authenticated recipients only, and NIP-70 needs it. The
		// challenge goes out on connect, so that apps sign in before their first
		// inbox REQ.
		Auth: AuthConfig{Enabled: true, ChallengeOnConnect: true, Grace: DefaultAuthGrace},
	}
}

// Validate reports every setting that is out of range, joined in one error.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			add("listen address %q: %w", c.Listen, err)
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			add("metrics listen address %q: %w", c.MetricsListen, err)
		}
	}
	if len(c.PublicURLs) > 0 {
		if _, err := audience.Parse(c.PublicURLs); err != nil {
			add("%w", err)
		}
	} else if c.Listen != "" {
		if _, err := audience.Loopback(c.Listen); errors.Is(err, audience.ErrNotLoopback) {
			add("listen address %q is not loopback and no public URL is set: sign-ins (NIP-42) and NIP-86 requests must name the URL clients use; set --public-url wss://your.host (repeatable)", c.Listen)
		}
	}
	if err := c.Limits.Validate(); err != nil {
		add("limits: %w", err)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"batch max events", c.BatchMaxEvents},
		{"ingest concurrency", c.IngestConcurrency},
		{"send queue size", c.SendQueueSize},
		{"send queue bytes", c.SendQueueBytes},
		{"total queue bytes", c.TotalQueueBytes},
		{"max subscriptions", c.MaxSubscriptions},
		{"max queries per connection", c.MaxQueriesPerConn},
		{"max connections per ip", c.MaxConnsPerIP},
	}
	for _, p := range positive {
		if p.v < 1 {
			add("%s must be at least 1, got %d", p.name, p.v)
		}
	}
	durations := []struct {
		name string
		v    time.Duration
	}{
		{"batch max delay", c.BatchMaxDelay},
		{"ingest timeout", c.IngestTimeout},
		{"query timeout", c.QueryTimeout},
		{"ping interval", c.PingInterval},
		{"read timeout", c.ReadTimeout},
		{"write timeout", c.WriteTimeout},
		{"shutdown timeout", c.ShutdownTimeout},
	}
	for _, d := range durations {
		if d.v <= 0 {
			add("%s must be positive, got %s", d.name, d.v)
		}
	}
	if c.DrainSpread < 0 || c.DrainSpread >= c.ShutdownTimeout {
		add("drain spread must be 0 or more and shorter than the shutdown timeout (%s), got %s", c.ShutdownTimeout, c.DrainSpread)
	}
	if c.Negentropy {
		if c.MaxSyncEvents < 1 {
			add("max sync events must be at least 1, got %d", c.MaxSyncEvents)
		}
		if c.NegFrameLimit < negentropy.MinFrameLimit {
			add("negentropy frame limit must be at least %d, got %d", negentropy.MinFrameLimit, c.NegFrameLimit)
		}
		if c.NegConcurrency < 1 {
			add("negentropy concurrency must be at least 1, got %d", c.NegConcurrency)
		}
		if c.NegIdleTimeout <= 0 {
			add("negentropy idle timeout must be positive, got %s", c.NegIdleTimeout)
		}
		if c.MaxSyncLoads < 1 {
			add("max sync loads must be at least 1, got %d", c.MaxSyncLoads)
		}
		if c.MaxQueuedSyncsPerConn < 0 {
			add("max queued syncs per connection must not be negative, got %d", c.MaxQueuedSyncsPerConn)
		}
		if c.MaxQueuedSyncs < 0 {
			add("max queued syncs must not be negative, got %d", c.MaxQueuedSyncs)
		}
	}
	if c.CacheBytes < 0 {
		add("cache bytes must not be negative, got %d", c.CacheBytes)
	}
	if c.SendQueueBytes > 0 && c.SendQueueBytes < c.Limits.MaxMessageBytes {
		add("send queue bytes (%d) must be at least the max message bytes (%d)", c.SendQueueBytes, c.Limits.MaxMessageBytes)
	}
	if c.TotalQueueBytes > 0 && c.TotalQueueBytes < c.SendQueueBytes {
		add("total queue bytes (%d) must be at least the send queue bytes (%d)", c.TotalQueueBytes, c.SendQueueBytes)
	}
	if c.PingInterval > 0 && c.ReadTimeout > 0 && c.PingInterval >= c.ReadTimeout {
		add("ping interval (%s) must be shorter than the read timeout (%s)", c.PingInterval, c.ReadTimeout)
	}
	for _, r := range []struct {
		name string
		r    Rate
	}{{"event rate per ip", c.EventRatePerIP}, {"event rate per pubkey", c.EventRatePerPubkey}, {"req rate per ip", c.ReqRatePerIP}} {
		if err := validateRate(r.name, r.r); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.Auth.RequiredForReads || c.Auth.RequiredForWrites) && !c.Auth.Enabled {
		add("auth is required for reads or writes but not enabled")
	}
	if c.Auth.Grace < 0 || c.Auth.Grace > time.Minute {
		add("auth grace %s: want 0 to 1m", c.Auth.Grace)
	}
	if c.Info.PubKey != "" && !protocol.IsHex64(c.Info.PubKey) {
		add("info pubkey must be 64 hex characters")
	}
	if c.Info.Self != "" && !protocol.IsHex64(c.Info.Self) {
		add("info self must be 64 hex characters")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("relay config: %w", err)
	}
	return nil
}
