package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/ephemeral"
	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/platform/httpserver"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/replica"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust/gate"
	"github.com/kukuri/communitynode/internal/writerlease"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// RelayOptions is what one relay process needs.
type RelayOptions struct {
	DatabaseURL string
	// ReadDatabaseURLs are streaming replicas of DatabaseURL that serve REQ,
	// COUNT and NIP-50 search (package replica); none: the primary serves.
	ReadDatabaseURLs []string
	// MaxReplicaLag is the most a replica may lag and still serve (zero:
	// DefaultMaxReplicaLag).
	MaxReplicaLag time.Duration
	// Relay is the relay's configuration; Relay.Info.Self is the node's pubkey,
	// exempt from MinRank with the admins.
	Relay relay.Config
	// SweepInterval is how often expired (NIP-40) events are swept; 0 turns it off.
	SweepInterval time.Duration
	// StatsInterval is how often the query tables' statistics are checked and,
	// when missing or stale, refreshed (store.AnalyzeStale); 0 turns it off.
	StatsInterval time.Duration
	// AdminPubkeys may manage the relay through NIP-86 (hex). None: every NIP-86
	// request is answered 401.
	AdminPubkeys []string
	// MinRank, when > 0, refuses posts from authors ranked below it by the trust
	// daemon (gate.Gate); the admins and the node (Relay.Info.Self) are exempt.
	MinRank int
	// Pending bounds newcomers' waiting identity events (zero: the defaults).
	Pending store.PendingLimits
	// NodeKey, when set, makes the relay host NIP-29 groups (package groups):
	// it signs the groups' state events and the node's own moderation events
	// (its pubkey becomes Relay.Info.Self). Zero: no groups, group events are
	// refused.
	NodeKey nodekey.Key
	// GroupCreators says who may create a group (zero: groups.CreatorsMembers).
	GroupCreators groups.Creators
	// GroupInviteTTL is how long an invite code is valid (zero:
	// groups.DefaultInviteTTL).
	GroupInviteTTL time.Duration
	// MembershipKey, when set, makes the relay keep NIP-43 membership
	// (package membership) in mode Membership (zero: open), signing the
	// member list with it. Zero: no NIP-43 (join and leave requests refused).
	MembershipKey nodekey.Key
	Membership    membership.Mode
	// AdmitMinRank > 0 admits claimless join requests from keys ranked at
	// least this (trust-v1) at once; InviteTTL is how long a claim lives
	// (zero: membership.DefaultInviteTTL).
	AdmitMinRank int
	InviteTTL    time.Duration
	// GroupAdmitMinRank, when > 0, honours a join request to an open group
	// at once only from a key the trust daemon ranks at least this (or a
	// seed, an admin, the node); others wait for the group's admins
	// (groups.Policy.AdmitMinRank). Read through a second gate.Gate.
	GroupAdmitMinRank int
	// GroupLateWindow and GroupMinPrevious are groups.Policy's LateWindow and
	// MinPrevious.
	GroupLateWindow  time.Duration
	GroupMinPrevious int
	// GroupLimits are groups.Policy's Limits (zero fields: their defaults);
	// ClaimsPerMember and OpenClaims the membership.Service's claim caps
	// (zero: their defaults).
	GroupLimits groups.Limits
	// GroupLists spaces large groups' member lists (groups.MemberLists; zero:
	// a list per change); the relay signs the deferred ones (renderLists).
	GroupLists                  groups.MemberLists
	ClaimsPerMember, OpenClaims int
	// AlwaysReadHead makes the event cache read the outbox head for every
	// answer even while this relay is the only one acknowledging writes
	// (writerlease.Lease.Sole): for a rolling upgrade from a build without
	// the writer lease, whose relays hold no row. The relay holds its row
	// either way.
	AlwaysReadHead bool
	// WriterLeaseTTL is how long a renewal of the writer lease holds (zero:
	// writerlease.DefaultTTL).
	WriterLeaseTTL time.Duration
	// Reload rebuilds these options on SIGHUP or the NIP-86 method
	// reloadconfig (daemon.Reloader); applyRelayReload says what a reload
	// changes in the running relay. Zero: no reloads (the metrics are
	// served all the same).
	Reload daemon.Source[RelayOptions]
	// Blossom, if set, serves Blossom media (package blossom) on the relay's
	// address or its own (BlossomOptions.Listen).
	Blossom *BlossomOptions
	Logger  *slog.Logger
	// Serving, if set, is called once the relay accepts connections (its
	// store, cache and Blossom directory ready): `cnctl dev` says "node is
	// up" only then.
	Serving func()
}

// Relay runs one relay process: it opens the database pool and wires the outbox
// writer, the store, the management state, the rank gate and the relay
// together, with the store's maintenance loops, until ctx is done or one of
// them fails. The writer outlives the relay, whose final flush commits through
// it.
func Relay(ctx context.Context, s RelayOptions) error {
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pool, err := dbpool.Open(ctx, s.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := daemon.Registry()
	writer := outbox.NewWriter(pool, outbox.WriterConfig{Logger: logger, Registerer: reg})
	st := store.New(pool, writer, s.Relay.Limits.TopicRules)
	if s.Pending != (store.PendingLimits{}) {
		st.SetPendingLimits(s.Pending)
	}
	policy, err := relayadmin.Open(ctx, pool, logger)
	if err != nil {
		return err
	}
	admins := map[string]bool{}
	for _, pk := range s.AdminPubkeys {
		admins[pk] = true
	}
	var joinRanks *gate.Gate
	var hosted store.Groups // the groups' policy as set; a reload sets a copy
	if key := s.NodeKey; key.PubKey != "" {
		g := store.Groups{Sign: key.Sign, Policy: groups.Policy{Node: key.PubKey, Admins: admins,
			Creators: cmp.Or(s.GroupCreators, groups.CreatorsMembers), InviteTTL: s.GroupInviteTTL,
			AdmitMinRank: s.GroupAdmitMinRank, LateWindow: s.GroupLateWindow, MinPrevious: s.GroupMinPrevious,
			Limits: s.GroupLimits, Lists: s.GroupLists}}
		// The gate runs even at --group-admit-min-rank 0 (the policy does not
		// ask it then), so that a reload can set it.
		joinRanks = &gate.Gate{Pool: pool, MinRank: s.GroupAdmitMinRank, Exempt: append(slices.Clone(s.AdminPubkeys), key.PubKey), Logger: logger}
		if err := joinRanks.Load(ctx); err != nil {
			return err
		}
		g.Admission = JoinAdmission(joinRanks)
		hosted = g
		if err := st.SetGroups(g); err != nil {
			return err
		}
		s.Relay.Info.Self, s.Relay.Groups = key.PubKey, true
		reg.MustRegister(&groups.Collector{Q: pool, Logger: logger})
		s.Relay.GroupAdmins = slices.Clone(s.AdminPubkeys)
	}
	api := &relayadmin.API{Admin: &relayadmin.Admin{Pool: pool, Store: st.Publisher(), Rules: st.Rules}, Admins: admins,
		Logger: logger}
	exempt := slices.Clone(s.AdminPubkeys)
	if self := s.Relay.Info.Self; self != "" {
		exempt = append(exempt, self)
	}
	ranks := &gate.Gate{Pool: pool, MinRank: s.MinRank, Exempt: exempt, Logger: logger}
	if err := ranks.Load(ctx); err != nil {
		return err
	}
	st.SetMemberGate(ranks.Ranked)
	var members *membership.Service
	var admitRanks *gate.Gate
	if key := s.MembershipKey; key.PubKey != "" {
		if members, admitRanks, err = openMembership(ctx, st, pool, s, admins, logger); err != nil {
			return err
		}
		reg.MustRegister(members.Collectors()...)
		api.Admin.Extensions = append(api.Admin.Extensions, members)
		s.Relay.Info.Self, s.Relay.Membership = key.PubKey, string(cmp.Or(s.Membership, membership.Open))
	}
	reg.MustRegister(pendingGauges(st)...)
	// The relay's reads: the primary's store, or the read replicas in front
	// of it, whose answers the relay hands off to the primary (Primary).
	var reads relay.Reader = st
	var replicas *replica.Set
	if len(s.ReadDatabaseURLs) > 0 {
		if replicas, err = openReplicas(st, pool, s, logger, reg); err != nil {
			return err
		}
		defer replicas.Close()
		reads = replicas
	}
	// The writer lease: this relay acknowledges no client write without it
	// (leasedStore), and answers from memory without the outbox head read
	// while it is the only relay that does (writerlease).
	lease := writerlease.New(pool, s.WriterLeaseTTL, logger)
	reg.MustRegister(lease.Collectors()...)
	api.Admin.Committed, api.Admin.Acknowledge = lease.Note, lease.Await
	if members != nil {
		members.Committed, members.Acknowledge = lease.Note, lease.Await
	}
	feed := relay.NewPGFeed(pool, logger)
	deps := relay.Deps{
		Ranks:      ranks,
		Store:      leasedStore{Store: st, lease: lease},
		Reads:      reads,
		Feed:       feed,
		Logger:     logger,
		Registerer: reg,
		Gatherer:   reg,
		Policy:     policy,
		Management: api,
		Ephemeral:  ephemeral.New(pool, logger),
		// systemd (Type=notify) learns the relay serves: a restart starts
		// the new process and stops the old one only then.
		Serving: func() {
			if err := daemon.NotifyReady(); err != nil {
				logger.Warn("systemd notify", "err", err)
			}
			if s.Serving != nil {
				s.Serving()
			}
		},
	}
	if members != nil {
		deps.Members = members
	}
	if !s.AlwaysReadHead {
		deps.Sole = lease.Sole
	}
	var media *blossom.Server
	if b := s.Blossom; b != nil {
		if media, err = openBlossom(*b, pool, s.Relay.Info.Self, admins, policy, s.Relay.RealIPHeader, logger, reg); err != nil {
			return err
		}
		s.Relay.Media = blossomInfo(*b, s.Relay)
		if b.Listen == "" {
			deps.Media = media
		}
	}
	var mediaLn net.Listener
	if media != nil && s.Blossom.Listen != "" {
		if mediaLn, err = listenBlossom(s.Blossom.Listen); err != nil {
			return err
		}
	}
	r, err := relay.New(s.Relay, relay.WithEventCache(s.Relay, deps))
	if err != nil {
		return err
	}
	policy.OnChange(func(*relayadmin.State) { r.DisconnectBlocked() })
	reloader := daemon.NewReloader("relay", s.Reload, func(next RelayOptions) error {
		return applyRelayReload(ctx, s, next, relayLive{relay: r, store: st, api: api, ranks: ranks, self: s.Relay.Info.Self,
			joinRanks: joinRanks, admitRanks: admitRanks, members: members, groups: hosted})
	}, reg, logger)
	api.Admin.Extensions = append(api.Admin.Extensions, reloadMethod(reloader.Reload))
	if media != nil {
		api.Admin.Extensions = append(api.Admin.Extensions, media.DB()) // hideblob, unhideblob
	}
	api.Audience = r.Audience // NIP-98 `u` names the relay's own URLs, as AUTH does

	// The writer outlives the relay: the relay's final flush commits through it.
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.Run(writerCtx) }()

	// So does the lease, which its final flush's acknowledgements need; it
	// is released once the relay has stopped. Register takes the row and
	// returns at once: the relay serves reads at once (with the head read,
	// not being sole), and holds acknowledgements of writes (Await) while
	// another relay may still trust its memory (up to a TTL after another
	// relay's sole renewal, a crashed one's included).
	if err := lease.Register(ctx); err != nil {
		return err
	}
	leaseCtx, stopLease := context.WithCancel(context.WithoutCancel(ctx))
	leaseDone := make(chan error, 1)
	go func() { leaseDone <- lease.Run(leaseCtx) }()
	defer func() {
		stopLease()
		<-leaseDone
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil {
			logger.Warn("writer lease not released: another relay waits for it to expire", "err", err)
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.Run(gctx) })
	g.Go(func() error { return policy.Run(gctx) })
	g.Go(func() error { return reloader.Run(gctx) })
	if mediaLn != nil {
		g.Go(func() error { return httpserver.Serve(gctx, mediaLn, media) })
	}
	g.Go(func() error { return ranks.Run(gctx) })
	if admitRanks != nil {
		g.Go(func() error { return admitRanks.Run(gctx) })
	}
	if joinRanks != nil {
		g.Go(func() error { return joinRanks.Run(gctx) })
	}
	if replicas != nil {
		g.Go(func() error { return replicas.Run(gctx) })
	}
	if s.SweepInterval > 0 {
		g.Go(func() error { sweepExpired(gctx, st, s.SweepInterval, logger); return nil })
		g.Go(func() error { sweepPending(gctx, st, s.SweepInterval, logger); return nil })
	}
	if s.StatsInterval > 0 {
		g.Go(func() error { keepStatistics(gctx, st, s.StatsInterval, logger); return nil })
	}
	if s.NodeKey.PubKey != "" && s.GroupLists.Every > 0 {
		g.Go(func() error { renderLists(gctx, st, s.GroupLists.Every/2, logger); return nil })
	}
	err = g.Wait()
	stopWriter()
	if werr := <-writerDone; werr != nil && err == nil {
		err = fmt.Errorf("outbox writer: %w", werr)
	}
	return err
}

// openReplicas opens a pool per read replica (without waiting: a replica
// that is down is skipped until its health check passes) and the Set that
// spreads reads over them.
func openReplicas(st *store.Store, primary *pgxpool.Pool, s RelayOptions, logger *slog.Logger, reg prometheus.Registerer) (*replica.Set, error) {
	maxLag := s.MaxReplicaLag
	if maxLag == 0 {
		maxLag = DefaultMaxReplicaLag
	}
	var rs []replica.Replica
	names := map[string]int{}
	for _, u := range s.ReadDatabaseURLs {
		p, err := dbpool.OpenLazy(u)
		if err != nil {
			for _, r := range rs {
				r.Pool.Close()
			}
			return nil, fmt.Errorf("read database url: %w", err)
		}
		name := replica.Name(u)
		if names[name]++; names[name] > 1 {
			name = fmt.Sprintf("%s#%d", name, names[name])
		}
		rs = append(rs, replica.Replica{Name: name, Pool: p})
	}
	return replica.New(st.Reader, primary, rs, replica.Config{MaxLag: maxLag, CheckInterval: DefaultReplicaCheckInterval,
		Logger: logger, Registerer: reg}), nil
}

// sweepBatch is how many expired events one sweep transaction marks.
const sweepBatch = 1000

// sweepExpired marks expired (NIP-40) events deleted every interval until ctx is
// done; a full batch is followed at once by the next. The store lets one relay at
// a time sweep.
func sweepExpired(ctx context.Context, st *store.Store, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			n, err := st.Sweep(ctx, sweepBatch)
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("expiry sweep failed", "err", err)
				}
				break
			}
			if n > 0 {
				logger.Info("expired events swept", "events", n)
			}
			if n < sweepBatch {
				break
			}
		}
	}
}

// sweepPending maintains newcomers' pending identity events every interval
// until ctx is done (store.SweepPending): expiry, publication of the keys that
// became members in another way, and the count behind the global cap.
func sweepPending(ctx context.Context, st *store.Store, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ps, err := st.SweepPending(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("pending identity sweep failed", "err", err)
		case ps.Expired > 0 || ps.Published > 0:
			logger.Info("pending identity events swept", "expired", ps.Expired, "published", ps.Published, "left", ps.Events)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renderLists signs the member lists that groups.MemberLists deferred, as
// they fall due, checking every interval until ctx is done
// (store.RenderDueLists): a list is at most interval later than its due time,
// and one deferred before a restart is signed after it.
func renderLists(ctx context.Context, st *store.Store, interval time.Duration, logger *slog.Logger) {
	const perTx = 50 // groups per transaction: each list is up to --group-max-members tags
	t := time.NewTicker(max(interval, 100*time.Millisecond))
	defer t.Stop()
	for {
		for {
			n, err := st.RenderDueLists(ctx, time.Now(), perTx)
			if err != nil && ctx.Err() == nil {
				logger.Warn("signing deferred member lists failed", "err", err)
			}
			if err != nil || n < perTx {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pendingGauges are the metrics of newcomers' pending identity events.
func pendingGauges(st *store.Store) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cn_relay_pending_identity_events",
			Help: "Identity events of keys that are not members yet, waiting (as last counted by the pending sweep)."},
			func() float64 { return float64(st.PendingEvents()) }),
	}
}

// keepStatistics analyses the relay's query tables whenever their statistics
// are missing or stale (store.AnalyzeStale), checking every interval until ctx is
// done: REQ plans must not wait for autovacuum, which may be off or behind.
func keepStatistics(ctx context.Context, st *store.Store, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	warned := map[string]bool{}
	for {
		done, err := st.AnalyzeStale(ctx)
		for _, a := range done {
			if a.NotOwner {
				if !warned[a.Table] {
					warned[a.Table] = true
					logger.Warn("a query table's statistics are missing or stale, and the relay's role does not own it to analyze it: keep autovacuum on or run ANALYZE as its owner",
						"table", a.Table, "rows_changed", a.Changed, "never_analyzed", a.Never)
				}
				continue
			}
			logger.Info("analyzed a query table: its statistics were missing or stale", "table", a.Table,
				"rows_changed", a.Changed, "never_analyzed", a.Never, "took_ms", a.Took.Milliseconds())
		}
		if err != nil && ctx.Err() == nil {
			logger.Warn("analyzing the query tables failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// JoinAdmission is what a rank gate (gate.Gate at --group-admit-min-rank)
// says of a join request's author: AdmitOpen until a trust run exists (ranks
// cannot tell a newcomer from spam yet, as for --min-rank), then AdmitRanked
// or AdmitReview.
func JoinAdmission(g *gate.Gate) func(pubkey string) groups.Admission {
	return func(pubkey string) groups.Admission {
		switch {
		case !g.Ready():
			return groups.AdmitOpen
		case g.Ranked(pubkey):
			return groups.AdmitRanked
		}
		return groups.AdmitReview
	}
}

// leasedStore is the store as the relay ingests through it: a batch's
// answers wait, after its commit, until the writer lease holds
// (writerlease.Lease.Await), so that no relay acknowledges a write a sole
// relay's memory may lack. While another relay may still trust its memory
// (a newcomer's first TTL) they are held, not refused; a batch committed
// when the lease is lost (its renewals failed for a TTL) is answered as
// failed (OK false "error: ..."), never OK true. The events may be stored:
// a client's retry is answered "duplicate:".
type leasedStore struct {
	relay.Store
	lease *writerlease.Lease
}

// errLeaseLost is the answer to a batch committed without the writer lease.
var errLeaseLost = errors.New("this relay's writer lease is not held (database unreachable?); the event may be stored, retry")

func (s leasedStore) Ingest(ctx context.Context, evs []*nostr.Event) ([]relay.IngestResult, error) {
	res, err := s.Store.Ingest(ctx, evs)
	if err != nil {
		return res, err
	}
	// The hold is not bounded by the batch's context: the commit is done,
	// and its answers wait at most a TTL more.
	if err := s.lease.Await(context.WithoutCancel(ctx)); err != nil {
		return nil, errLeaseLost
	}
	return res, nil
}
