package store

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Store is the relay's event store: it answers queries (Reader), ingests
// batches through the outbox writer's group commit (Ingest), sweeps expired
// and pending events, and shares its member cache, member gate and pending
// limits with its in-transaction publish path (Publisher). It is safe for
// concurrent use.
type Store struct {
	*Reader
	pub    *Publisher
	writer *outbox.Writer
	rules  atomic.Pointer[protocol.TopicRules] // live: SetRules (a relay configuration reload)
}

// New returns a Store that writes through writer (whose Run the caller runs)
// and applies rules, the relay's topic rules (see Ingest). writer must not be
// nil (New panics): processes that do not ingest use a Reader (NewReader) or a
// Publisher (NewPublisher), which need none.
func New(pool *pgxpool.Pool, writer *outbox.Writer, rules protocol.TopicRules) *Store {
	if writer == nil {
		panic("store.New: nil outbox writer (use NewReader or NewPublisher)")
	}
	r := NewReader(pool)
	pub := NewPublisher()
	pub.now = func() time.Time { return r.now() } // one clock
	st := &Store{Reader: r, pub: pub, writer: writer}
	st.SetRules(rules)
	return st
}

// SetRules makes rules the topic rules of the batches ingested from now on
// (a batch keeps the rules it started with).
func (s *Store) SetRules(rules protocol.TopicRules) { s.rules.Store(&rules) }

// Committed returns the highest outbox seq announced through the store's
// writer (outbox.Writer.Announced): every write this process made through it
// up to that seq is committed. The relay's event cache waits for it (read your
// writes).
func (s *Store) Committed() int64 { return s.writer.Announced() }

// Rules returns the topic rules the store ingests under.
func (s *Store) Rules() protocol.TopicRules { return *s.rules.Load() }

// Publisher returns the store's in-transaction publish path; it shares the
// store's member cache, member gate and pending limits.
func (s *Store) Publisher() *Publisher { return s.pub }

// Reader answers queries over the stored events (REQ, COUNT, search, export)
// and keeps their statistics. It needs only a pool and is safe for concurrent
// use.
type Reader struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewReader returns a Reader over pool.
func NewReader(pool *pgxpool.Pool) *Reader { return &Reader{pool: pool, now: time.Now} }

// Publisher stores the node's own events and moderation decisions inside a
// caller's transaction (PublishTx, ModerateTx, AdmitTx): how consumers,
// operators and the relay's admin API act, so that what they publish commits
// with their other effects. It has no outbox writer and no topic rules of its
// own: the rules come with each call. It is safe for concurrent use.
type Publisher struct {
	now     func() time.Time
	members memberCache
	pending PendingLimits
	// gate, when set, admits non-members as members (the relay's trust gate).
	gate func(pubkey string) bool
	// groups, when set, hosts NIP-29 groups (Store.SetGroups); a plan
	// takes the one in force when it starts (a reload may replace it).
	groups atomic.Pointer[Groups]
	// membership, when set, keeps NIP-43 membership (SetMembership).
	membership *Membership
	// own are further keys whose replaceable and addressable events are the
	// node's own state (SetOwnState).
	own map[string]bool
	// pendingRows is the number of pending identity events as last counted
	// (SweepPending) plus those kept since; the global cap reads it.
	pendingRows atomic.Int64
}

// NewPublisher returns a Publisher with DefaultPendingLimits, no member gate
// and an empty member cache.
func NewPublisher() *Publisher {
	return &Publisher{now: time.Now, pending: DefaultPendingLimits()}
}

// SetOwnState names further keys (besides Groups.Policy.Node and
// Membership.Self) whose replaceable and addressable events are the node's own
// state, rebuilt by the node rather than kept: a superseded version of them is
// not kept (see the package doc). Trust's provider key (its NIP-85 30382
// assertions and kind 0, recomputed from the graph) is one. Call it before the
// publisher is used.
func (pub *Publisher) SetOwnState(pubkeys ...string) {
	if pub.own == nil {
		pub.own = map[string]bool{}
	}
	for _, pk := range pubkeys {
		pub.own[pk] = true
	}
}

// PendingLimits bound the identity events kept for keys that are not members
// yet (see Ingest).
type PendingLimits struct {
	// PerKey is how many effective keys (a profile, a follow list, each NIP-51
	// set) one pubkey may have waiting; a newer version of a waiting key
	// replaces it and does not count again.
	PerKey int
	// Max is how many may wait in all; beyond it newcomers' identity events are
	// refused with protocol.ReasonPendingFull until some are published or expire.
	Max int64
	// MaxAge is how long one waits for its key to become a member (SweepPending
	// deletes older ones).
	MaxAge time.Duration
}

// DefaultPendingLimits: 32 keys per pubkey (profile, follow list, relay and DM
// relay lists and a few NIP-51 sets fit well within), 100,000 in all (at the
// 128 KiB message limit at most ~12 GiB, typically ~1 KiB each), 14 days.
func DefaultPendingLimits() PendingLimits {
	return PendingLimits{PerKey: 32, Max: 100_000, MaxAge: 14 * 24 * time.Hour}
}

// Validate reports limits that cannot work.
func (l PendingLimits) Validate() error {
	if l.PerKey < 1 || l.Max < 1 || l.MaxAge <= 0 {
		return fmt.Errorf("pending limits: per key, max and max age must be positive (got %d, %d, %s)", l.PerKey, l.Max, l.MaxAge)
	}
	return nil
}

// SetPendingLimits replaces DefaultPendingLimits; call it before the store is used.
func (s *Store) SetPendingLimits(l PendingLimits) { s.pub.pending = l }

// SetMemberGate makes every key that admit accepts a community member
// (cn_relay.members; not a NIP-43 relay member nor a NIP-29 group member:
// docs/architecture.md "Words"): the relay's trust gate, a rank at or above
// --min-rank. Call it before the store is used.
func (s *Store) SetMemberGate(admit func(pubkey string) bool) { s.pub.gate = admit }

// memberCache remembers authors known to be community members
// (cn_relay.members), so that a batch of
// regulars does not look them up again. Membership is never revoked, so a
// cached entry never goes stale; the cache is cleared when it reaches
// maxCachedMembers entries (about 15 MB).
type memberCache struct {
	mu    sync.Mutex
	known map[string]struct{}
}

const maxCachedMembers = 100_000

// unknown returns the authors not known to be members.
func (c *memberCache) unknown(authors map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for a := range authors {
		if _, ok := c.known[a]; !ok {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// add remembers members (call after the commit that made them members).
func (c *memberCache) add(members map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil || len(c.known)+len(members) > maxCachedMembers {
		c.known = make(map[string]struct{}, len(members))
	}
	for m := range members {
		c.known[m] = struct{}{}
	}
}

const (
	// MsgPending is the OK true message of an identity event kept until its key
	// becomes a member.
	MsgPending       = "pending: kept; published here once this key is a member (its first post in a topic)"
	msgDuplicate     = "duplicate: already have this event"
	msgDeleted       = "blocked: this event was deleted"
	msgDeletedByAuth = "blocked: this event was deleted by its author"
)
