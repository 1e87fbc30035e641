package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/admission"
	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/platform/httpserver"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// Deps are the relay's collaborators.
type Deps struct {
	// Store is the primary database with every part the relay's features
	// read (package store implements them all). Which parts are used is
	// Config's to say, and Config's alone: NIP-77 (SyncStore) while
	// Config.Negentropy, its tree (SyncTreeStore) while Config.NegTree, the
	// event cache's fill (RecentStore) while Config.CacheBytes > 0 (see
	// WithEventCache), the withheld NIP-29 events (WithheldStore) while
	// Config.Groups; the groups' read rule (GroupAccessStore) always, and
	// the handoff of a stored part read on a replica (Primary) whenever
	// Reads answers from one. Required.
	Store Store
	Feed  Feed // required: the outbox the live fan-out follows
	// Reads, if set, reads REQs' stored parts and COUNTs instead of Store
	// (package replica: read replicas in front of the primary). A stored
	// part it reads on a replica is handed off to Store (Relay.handoff).
	Reads Reader
	// Cache, if set, is the event cache (package eventcache), which the
	// follower fills from Store (RecentStore) and keeps with the outbox
	// rows, and files database answers into (learn.go). Its reads are the
	// composition root's: WithEventCache puts the cache's Reader
	// (eventcache.Reader) in front of Reads, built with Config.CacheBytes
	// (0: no cache), and sets Cache.
	Cache EventCache
	// Sole, if set, says whether this relay is the only process
	// acknowledging clients' writes, and from which outbox seq on
	// (writerlease.Lease.Sole); WithEventCache hands it to the cache's
	// Reader (eventcache.Reader.Sole), which then answers without reading
	// the outbox head. Nil: every cached answer reads the head.
	Sole func() (floor int64, ok bool)
	// Logger may be nil (discard).
	Logger *slog.Logger
	// Registerer receives the relay's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Gatherer is served on /metrics by MetricsHandler (Config.MetricsListen);
	// nil answers /metrics with 404.
	Gatherer prometheus.Gatherer
	// Now is the clock for event validation, AUTH and rate limits; nil means time.Now.
	Now func() time.Time
	// Policy, if set, is the management state the relay enforces (package
	// relayadmin): banned pubkeys and events, accepted kinds, blocked addresses,
	// NIP-11 overrides. Nil enforces nothing.
	Policy Policy
	// Management, if set, serves NIP-86 requests (POST with Content-Type
	// application/nostr+json+rpc) on the relay's URL, and NIP-11 lists 86.
	Management http.Handler
	// Ranks, if set, is the spam gate (relay --min-rank, package trust) and
	// names the node's NIP-85 provider in NIP-11. Nil admits every author.
	Ranks RankGate
	// Ephemeral, if set, carries ephemeral events to every relay process that
	// shares the database (package ephemeral), this one included. Nil delivers
	// them to this process's subscribers only.
	Ephemeral EphemeralBus
	// Serving, if set, is called once Serve accepts connections (after its
	// "relay serving" line): cmd/relay tells systemd it is ready
	// (daemon.NotifyReady).
	Serving func()
	// Members, if set, answers NIP-43 requests (package membership): join
	// (28934) and leave (28936) events, and REQs for invites (28935). Nil
	// refuses them (membership.ReasonNoNIP43).
	Members Members
	// Media, if set, serves every request to a path other than / and
	// /healthz (package blossom: Blossom media on the relay's address);
	// Config.Media describes it in NIP-11. Nil: such paths are 404.
	Media http.Handler
}

// Members answers NIP-43 requests (membership.Service).
type Members interface {
	// Join and Leave answer a verified 28934 / 28936 that passed admission:
	// the OK flag and message. byAuthor tells Leave that the connection is
	// authenticated as the leave's author (NIP-42).
	Join(ctx context.Context, ev *nostr.Event) (bool, string)
	Leave(ctx context.Context, ev *nostr.Event, byAuthor bool) (bool, string)
	// Invite makes a claim for the first member among authed and returns the
	// node's signed 28935, or the CLOSED reason.
	Invite(ctx context.Context, authed []string) (*nostr.Event, string)
}

// EphemeralBus carries ephemeral events between relay processes (ephemeral.Bus).
type EphemeralBus interface {
	// Publish hands ev to every listener; nil means it was sent.
	Publish(ctx context.Context, ev *nostr.Event) error
	// Listen calls deliver for every event published by any process until ctx
	// is done; deliver does not block.
	Listen(ctx context.Context, deliver func(*nostr.Event))
}

// RankGate admits authors by web-of-trust rank (gate.Gate).
type RankGate = admission.RankGate

// Policy is the relay management state, as the relay asks it (relayadmin.Watcher):
// what the admission chain asks of every event, and the relay's own questions.
type Policy interface {
	admission.Policy
	IPBlocked(ip string) bool
	InfoOverride() (name, description, icon string)
}

// Relay is a Nostr relay: a WebSocket server in front of a Store, fanning stored
// events out by following the outbox. Create it with New, serve it with Run or
// Serve (once).
type Relay struct {
	cfg        Config               // fixed at New; its live part is read from live
	live       atomic.Pointer[Live] // the settings a reload changes (live.go), read at each use
	store      Store
	reads      Reader         // REQs' stored parts and COUNTs: Deps.Reads, else store
	primary    Primary        // nil: a replica's answer cannot be handed off
	sync       SyncStore      // nil: NIP-77 is not served
	negSlots   chan struct{}  // bounds the NIP-77 rounds computed at once (NegConcurrency)
	cache      EventCache     // nil: no event cache (Deps.Cache)
	learns     chan learnItem // database answers for the cache's author ranges (learn.go); nil without a cache
	learnBytes atomic.Int64   // the bytes of the answers in learns
	negLoads   *negQueue      // the NIP-77 sessions reading items, at most MaxSyncLoads at once, and those waiting
	negTree    *negTree       // nil: every NIP-77 session reads its items (negentropy_tree.go)
	policy     Policy
	ranks      RankGate
	admission  admission.Chain // every EVENT's checks after the connection's own
	ephemeral  EphemeralBus
	members    Members
	management http.Handler
	serving    func()
	media      http.Handler
	log        *slog.Logger
	m          *metrics
	gatherer   prometheus.Gatherer
	now        func() time.Time

	mem      *wsconn.Budget // what every connection holds together; see wsconn.Budget
	index    *subIndex
	batcher  *batcher
	follower *follower
	health   *healthCheck
	groups   *groupGate    // the private and hidden groups' rule (groupgate.go)
	withheld WithheldStore // nil: withheld group events are read by nobody (withheld.go)

	eventsPerIP     *ratelimit.Limiter
	eventsPerPubkey *ratelimit.Limiter
	reqsPerIP       *ratelimit.Limiter
	connsPerIP      *connCounter

	wsUpgrader  wsconn.Upgrader              // the handshake of every client connection
	upgrader    websocket.Upgrader           // gorilla's, for tests that upgrade a connection themselves (newConn)
	headTimeout time.Duration                // see acceptor
	acc         atomic.Pointer[acceptor]     // set by Serve
	aud         atomic.Pointer[audience.Set] // set by Serve (bindAudience)
	served      atomic.Bool
	closing     atomic.Bool

	connsMu sync.Mutex
	conns   map[*conn]struct{}
	connsWG sync.WaitGroup
}

// New returns a Relay; it validates cfg and registers the metrics.
func New(cfg Config, deps Deps) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.Feed == nil {
		return nil, errors.New("relay: Store and Feed are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	r := &Relay{
		cfg:             cfg,
		store:           deps.Store,
		reads:           deps.Reads,
		primary:         deps.Store,
		policy:          deps.Policy,
		ranks:           deps.Ranks,
		ephemeral:       deps.Ephemeral,
		members:         deps.Members,
		withheld:        deps.Store,
		management:      deps.Management,
		serving:         deps.Serving,
		media:           deps.Media,
		log:             deps.Logger,
		m:               newMetrics(deps.Registerer),
		gatherer:        deps.Gatherer,
		now:             deps.Now,
		mem:             wsconn.NewBudget(cfg.TotalQueueBytes, nil),
		index:           newSubIndex(),
		eventsPerIP:     ratelimit.New(cfg.EventRatePerIP, deps.Now),
		eventsPerPubkey: ratelimit.New(cfg.EventRatePerPubkey, deps.Now),
		reqsPerIP:       ratelimit.New(cfg.ReqRatePerIP, deps.Now),
		connsPerIP:      newConnCounter(cfg.MaxConnsPerIP),
		conns:           make(map[*conn]struct{}),
		headTimeout:     defaultHeadTimeout,
		wsUpgrader: wsconn.Upgrader{HandshakeTimeout: defaultHeadTimeout,
			Deflate: wsconn.DeflateOptions{Enabled: cfg.Deflate}},
		upgrader: websocket.Upgrader{
			HandshakeTimeout: defaultHeadTimeout,
			// A held connection keeps its read buffer (a message longer than
			// it is read in several reads), and takes a write buffer from the
			// pool only while gorilla writes a data frame (the goodbye's;
			// the connections' wsconn.Writer writes the others from
			// buffers of its own).
			ReadBufferSize:  readBufferSize,
			WriteBufferPool: &sync.Pool{},
			// Nostr clients run in browsers on any origin.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
	if r.reads == nil {
		r.reads = deps.Store
	}
	if cfg.Negentropy {
		r.sync = deps.Store
		r.negSlots = make(chan struct{}, cfg.NegConcurrency)
		r.negLoads = newNegQueue(cfg, r.m)
	}
	live := cfg.LiveOf()
	r.live.Store(&live)
	r.admission = admission.Chain{Policy: deps.Policy, Ranks: deps.Ranks} // Limits: the live ones, per event
	r.m.registerHeld(deps.Registerer, r.mem)
	r.health = newHealthCheck(deps.Store.Ping, r.log)
	r.follower = newFollower(deps.Feed, deps.Store, r.fanoutJSON, r.m, r.log)
	r.groups = newGroupGate()
	r.follower.gate = r.groups
	r.follower.access = deps.Store
	if deps.Cache != nil {
		r.cache = deps.Cache
		r.follower.cache, r.follower.recent = r.cache, deps.Store
		r.m.registerCache(deps.Registerer, r.cache)
		r.learns = make(chan learnItem, learnQueue)
	}
	// The NIP-77 tree follows the outbox: it can hold only what has outbox
	// rows (events with a topic: RequireTopic; the exempt kinds take the
	// person scope), and needs the groups' rule.
	if r.sync != nil && cfg.NegTree && cfg.Limits.TopicRules.RequireTopic {
		r.negTree = newNegTree(r.groups, r.now)
		r.follower.tree, r.follower.treeStore = r.negTree, deps.Store
	}
	r.follower.listening = func() bool { return r.index.size() > 0 }
	r.batcher = newBatcher(cfg, deps.Store, r.m, r.log, r.follower.committed)
	return r, nil
}

// Run listens on cfg.Listen and serves until ctx is done (see Serve), and serves
// MetricsHandler on cfg.MetricsListen, if set, as long. An address it cannot
// listen on (taken by another process, such as a second relay on the host) is
// returned as a *ListenError before anything is served. With
// Config.ReusePort both are bound with SO_REUSEPORT, so that a new process can
// listen beside this one before this one stops (see Serve for the drain).
func (r *Relay) Run(ctx context.Context) error {
	if r.cfg.Listen == "" {
		return errors.New("relay: no listen address")
	}
	ln, err := httpserver.Listen(ctx, r.cfg.Listen, r.cfg.ReusePort)
	if err != nil {
		return &ListenError{Metrics: false, Addr: r.cfg.Listen, Err: err}
	}
	if r.cfg.MetricsListen == "" {
		return r.Serve(ctx, ln)
	}
	// With ReusePort the metrics address is shared too (a new process must
	// start with the same configuration): while two processes run, a scrape
	// reaches either.
	mln, err := httpserver.Listen(ctx, r.cfg.MetricsListen, r.cfg.ReusePort)
	if err != nil {
		_ = ln.Close()
		return &ListenError{Metrics: true, Addr: r.cfg.MetricsListen, Err: err}
	}
	r.log.Info("relay metrics", "url", "http://"+mln.Addr().String()+"/metrics")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.Serve(gctx, ln) })
	g.Go(func() error {
		if err := httpserver.Serve(gctx, mln, r.MetricsHandler()); err != nil {
			return fmt.Errorf("relay metrics: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// Serve serves Handler on ln (WebSocket upgrades through the acceptor, without
// net/http's per-connection server state; see acceptor) and runs the batcher and the outbox follower until
// ctx is done, then shuts down gracefully, all within ShutdownTimeout
// (connections still open then are cut):
//
//   - it stops accepting: the connections already in ln's accept queue are
//     taken and served first (closing a listener resets the ones it leaves
//     there; see docs/operations.md), then ln is closed, so that with
//     SO_REUSEPORT (Config.ReusePort) the kernel sends every new connection
//     to the other processes on the address;
//   - with DrainSpread set (a restart's drain), the requests and handshakes
//     under way are finished and the open connections are then closed one by
//     one, in random order, evenly over DrainSpread, each with 1012 (service
//     restart): an EVENT read before its connection's close began gets its OK
//     (the batcher runs until the last connection closed), one read after it
//     is not handled (the client gets no OK and sends it again elsewhere), and
//     its subscriptions get live events until then. Without DrainSpread the
//     pending batch is flushed (its clients get their OKs) and every
//     connection is closed at once with 1001 (going away);
//   - each connection's send queue is drained before its close frame.
//
// It logs one line, "relay stopped", with the counts. It returns nil after a
// shutdown asked for by ctx, or the error that ended serving. Serve closes ln.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	if !r.served.CompareAndSwap(false, true) {
		_ = ln.Close()
		return errors.New("relay: Serve called twice")
	}
	if err := r.bindAudience(ln); err != nil {
		_ = ln.Close()
		return err
	}
	// WebSocket upgrades are served by the acceptor, everything else by srv
	// (see acceptor).
	acc := newAcceptor(r, ln)
	r.acc.Store(acc)
	srv := &http.Server{
		Handler:           r.Handler(),
		ReadHeaderTimeout: r.headTimeout,
		ErrorLog:          slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
	}
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var g errgroup.Group
	g.Go(func() error { r.batcher.run(); return nil })
	g.Go(func() error { r.follower.run(loops); return nil })
	g.Go(func() error { r.forgetIdleBuckets(loops); return nil })
	g.Go(func() error { r.pinger(loops); return nil })
	if r.learns != nil {
		g.Go(func() error { r.learner(loops); return nil })
	}
	if r.ephemeral != nil {
		g.Go(func() error { r.ephemeral.Listen(loops, func(ev *nostr.Event) { r.fanout(ev, 0) }); return nil })
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- acc.run() }()
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.Serve(acc.rest) }()
	r.log.Info("relay serving", "addr", ln.Addr().String())
	if r.serving != nil {
		r.serving()
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		if err == nil {
			err = errors.New("relay serve: acceptor stopped")
		} else {
			err = fmt.Errorf("relay serve: %w", err)
		}
	case err = <-httpErr:
		err = fmt.Errorf("relay serve: %w", err)
	}
	r.shutdown(acc, srv)
	stopLoops()
	_ = g.Wait()
	if err == nil {
		if serr := <-serveErr; serr != nil {
			err = fmt.Errorf("relay serve: %w", serr)
		}
		if herr := <-httpErr; herr != nil && !errors.Is(herr, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("relay serve: %w", herr)
		}
	}
	return err
}

// shutdown runs the graceful shutdown described at Serve.
func (r *Relay) shutdown(acc *acceptor, srv *http.Server) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ShutdownTimeout)
	defer cancel()
	spread := r.cfg.DrainSpread
	drained := acc.stop()
	if spread > 0 {
		// What was accepted is served: a handshake under way completes (its
		// connection is then closed in turn below) within half the time the
		// spread leaves (a client sends its head as it connects; one that
		// does not is cut).
		hctx, hcancel := context.WithTimeout(ctx, (r.cfg.ShutdownTimeout-spread)/2)
		acc.waitUntil(hctx)
		hcancel()
	}
	r.closing.Store(true)
	acc.close()
	if err := srv.Shutdown(ctx); err != nil {
		r.log.Warn("http shutdown incomplete", "err", err)
	}
	// Every connection accepted is now upgraded (and tracked), refused or
	// closed: a handshake under way ends at once (the relay is closing).
	acc.wait()
	if spread == 0 {
		r.batcher.close()
	}

	r.connsMu.Lock()
	conns := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.connsMu.Unlock()
	open := len(conns)
	mode := closeShutdown
	if spread > 0 {
		mode = closeRestart
	}
	// The n connections are closed at start+spread*i/n, in random order: a
	// client's reconnect lands on the new process at a time of its own.
	rand.Shuffle(len(conns), func(i, j int) { conns[i], conns[j] = conns[j], conns[i] })
	spreadStart := time.Now()
	var t *time.Timer
	for i, c := range conns {
		if spread > 0 {
			if wait := time.Until(spreadStart.Add(spread * time.Duration(i) / time.Duration(len(conns)))); wait > 0 {
				if t == nil {
					t = time.NewTimer(wait)
				} else {
					t.Reset(wait)
				}
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
		}
		c.closeWith(mode)
	}
	if t != nil {
		t.Stop()
	}

	done := make(chan struct{})
	go func() { r.connsWG.Wait(); close(done) }()
	cut := 0
	select {
	case <-done:
	case <-ctx.Done():
		r.connsMu.Lock()
		for c := range r.conns {
			_ = c.w.Conn().Close()
			cut++
		}
		r.connsMu.Unlock()
		<-done
	}
	// (After a drain: every connection has ended, so nothing more is
	// submitted; what was is answered.)
	r.batcher.close()
	r.log.Info("relay stopped", "connections_closed", open, "connections_cut", cut,
		"accept_queue_taken", drained, "drain_spread", spread.String(), "took", time.Since(start).String())
}

// DefaultGCPercent is the relay process's garbage-collection target (GOGC;
// cmd/relay --gc-percent): the heap may grow by half its live size, heap and
// goroutine stacks counted, before a collection, not by all of it as with Go's
// default of 100. Most of a relay's memory is long-lived: the held
// connections (~5 KiB each, mostly idle) and what the budgets hold
// (TotalQueueBytes, CacheBytes); the headroom over it is memory the process
// keeps but never uses while the connections sit idle. Measured with
// BenchmarkHeldConnections (2,000 to 18,000 held connections, medians of four
// runs): RSS 6.8-7.2 KiB per connection against 7.8-8.8 at 100, for ~15% more
// CPU while connections open (more collections, each scanning every
// goroutine's stack) and none measurable while events fan out. The heap can then reach about 1.5 times the
// held bytes of TotalQueueBytes before a collection, not twice.
const DefaultGCPercent = 50

// readBufferSize is a connection's read buffer (gorilla's); see Relay.upgrader.
const readBufferSize = 256

// track registers a new connection; false means the relay is shutting down.
func (r *Relay) track(c *conn) bool {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	if r.closing.Load() {
		return false
	}
	c.lastPing = time.Now().UnixNano()
	r.conns[c] = struct{}{}
	r.connsWG.Add(1)
	return true
}

func (r *Relay) untrack(c *conn) {
	r.connsMu.Lock()
	delete(r.conns, c)
	r.connsMu.Unlock()
	r.connsWG.Done()
}

// fanout delivers ev to every matching live subscription of this process whose
// reader may see it (protocol.Viewer.MayRead). seq is the outbox seq of the
// upsert that made ev visible (0: an ephemeral event, never stored); a
// subscription whose stored part covers seq skips it. It never blocks on a
// connection.
func (r *Relay) fanout(ev *nostr.Event, seq int64) { r.fanoutJSON(ev, nil, seq) }

// fanoutJSON is fanout with ev's JSON, if the caller has it (nil: made here
// when a subscription matches).
func (r *Relay) fanoutJSON(ev *nostr.Event, js []byte, seq int64) {
	subs := r.index.matching(ev, nil)
	if len(subs) == 0 {
		return
	}
	if js == nil {
		js = eventJSON(ev)
	}
	// A large fan-out is split among GOMAXPROCS goroutines, each writing to
	// its share of the sockets (kickInline); it returns once every share is
	// delivered, so a connection still gets the notes in the order fanout is
	// called.
	parts := min(runtime.GOMAXPROCS(0), len(subs)/fanoutShare)
	if parts <= 1 {
		r.m.liveDeliveries.Add(float64(deliverAll(subs, ev, seq, js)))
		return
	}
	per := (len(subs) + parts - 1) / parts
	var wg sync.WaitGroup
	var n atomic.Int64
	for i := per; i < len(subs); i += per {
		share := subs[i:min(i+per, len(subs))]
		wg.Go(func() { n.Add(int64(deliverAll(share, ev, seq, js))) })
	}
	n.Add(int64(deliverAll(subs[:per], ev, seq, js)))
	wg.Wait()
	r.m.liveDeliveries.Add(float64(n.Load()))
}

// fanoutShare is the fewest subscriptions a fan-out gives a goroutine of its
// own.
const fanoutShare = 256

// deliverAll delivers ev to each of subs whose reader may read it and returns
// how many took it.
func deliverAll(subs []*subscription, ev *nostr.Event, seq int64, js []byte) int {
	n := 0
	for _, s := range subs {
		if s.viewer().MayRead(ev) && s.deliver(ev, seq, js) {
			n++
		}
	}
	return n
}

// shed makes room in the relay's memory budget when it is full: it disconnects
// as too slow the open connection (other than c, and not already closing) that
// holds the most, so that clients that do not read give way to those that do.
// It reports whether it did; false means c holds the most, or nobody else holds
// anything.
func (r *Relay) shed(c *conn) bool {
	r.connsMu.Lock()
	var worst *conn
	var most int64
	for o := range r.conns {
		if o == c || o.closing() {
			continue
		}
		if h := o.held(); h > most {
			worst, most = o, h
		}
	}
	r.connsMu.Unlock()
	if worst == nil || most <= c.held() {
		return false
	}
	worst.tooSlow("relay memory budget full and this connection holds the most")
	return true
}

// DisconnectBlocked closes the connections whose address the policy now
// blocks, telling them why. Call it when the policy changes.
func (r *Relay) DisconnectBlocked() {
	if r.policy == nil {
		return
	}
	r.connsMu.Lock()
	var blocked []*conn
	for c := range r.conns {
		if r.policy.IPBlocked(c.ip) {
			blocked = append(blocked, c)
		}
	}
	r.connsMu.Unlock()
	for _, c := range blocked {
		if c.closeWith(closeBlocked) {
			r.m.refusedConns.WithLabelValues("blocked").Inc()
			c.logger().Info("address blocked; disconnecting")
		}
	}
}

// dropSub unfiles s from the fan-out index (once).
func (r *Relay) dropSub(s *subscription) {
	if r.index.remove(s) {
		r.m.subscriptions.Dec()
	}
}

// Audience is the URLs this relay answers to, which AUTH events (NIP-42
// `relay`) and NIP-86 requests (NIP-98 `u`) must name: Config.PublicURLs, else
// the loopback address it listens on (see package audience). It is the zero
// Set, which names nothing, until Serve has its listener; it never changes
// after that.
func (r *Relay) Audience() audience.Set {
	if a := r.aud.Load(); a != nil {
		return *a
	}
	return audience.Set{}
}

// bindAudience sets the Audience from the configuration or, with no public
// URL, from ln's address, which must then be loopback: the URL that clients
// elsewhere use cannot be known from an address, and taking it from their
// Host header would let a hostile relay pass on this relay's challenge to its
// own users (issue 47).
func (r *Relay) bindAudience(ln net.Listener) error {
	var (
		a   audience.Set
		err error
	)
	if len(r.cfg.PublicURLs) > 0 {
		a, err = audience.Parse(r.cfg.PublicURLs)
	} else if a, err = audience.Loopback(ln.Addr().String()); errors.Is(err, audience.ErrNotLoopback) {
		err = fmt.Errorf("relay: %s is not a loopback address and no public URL is set: sign-ins (NIP-42) and NIP-86 requests must name the URL clients use, which an address cannot tell; set --public-url wss://your.host (repeatable)", ln.Addr())
	}
	if err != nil {
		return err
	}
	r.aud.Store(&a)
	r.log.Info("relay URLs: AUTH and NIP-98 events must name one", "urls", a.String())
	return nil
}

// forgetIdleBuckets forgets idle rate-limit buckets every minute.
func (r *Relay) forgetIdleBuckets(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.eventsPerIP.ForgetIdle()
			r.eventsPerPubkey.ForgetIdle()
			r.reqsPerIP.ForgetIdle()
		}
	}
}

// pinger pings every open connection every PingInterval, so that a client that
// only listens keeps answering (its pongs extend the read deadline) and a dead
// peer is found: one goroutine for the relay instead of a timer per
// connection. It looks for connections due every tick, an eighth of
// PingInterval or of what ReadTimeout leaves after it (the smaller), so a
// connection is pinged between PingInterval and PingInterval plus a tick
// after the last ping, well before its read deadline. The ping itself is the
// connection's writer's (conn.pingSoon).
func (r *Relay) pinger(ctx context.Context) {
	every := r.cfg.PingInterval
	tick := every
	if slack := r.cfg.ReadTimeout - every; slack > 0 {
		tick = min(tick, slack)
	}
	t := time.NewTicker(max(tick/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.connsMu.Lock()
			for c := range r.conns {
				if rt := r.cfg.ReadTimeout; rt > 0 && c.w.Conn().Idle(now) > rt {
					_ = c.w.Conn().Close() // (the read deadline: the connection ends)
					continue
				}
				if now.UnixNano()-c.lastPing >= int64(every) && !c.closing() {
					c.lastPing = now.UnixNano()
					c.pingSoon()
				}
			}
			r.connsMu.Unlock()
		}
	}
}
