// Package writerlease tells a relay process whether it is the only process
// acknowledging clients' writes, so that its event cache may answer a REQ
// without reading the outbox head (package eventcache, Reader.Sole; see
// docs/decisions/0007-sole-writer.md).
//
// # The protocol
//
// Every relay process holds a row of cn_relay.writer_lease (schema 0037)
// while it runs. A renewal writes its row and reads the others' in one
// transaction under schema.WriterLeaseLock, so renewals are ordered; the
// relay renews at start (Register) and then every TTL/4 (Run). With send the
// local (monotonic) time at which a renewal was sent, which is before the
// transaction's now():
//
//   - expires_at = now() + TTL. The relay acknowledges writes only before
//     send + TTL of its last renewal that succeeded (Holds), so never after
//     its row's expires_at: a row that is not live (expires_at <= now() as
//     another renewal reads it) belongs to a relay that acknowledges nothing
//     more until it renews again.
//   - When no other row is live, the relay is sole: sole_until = now() + TTL,
//     and it trusts its memory until send + TTL (Sole), from the outbox head
//     read in the same transaction on (Sole's floor).
//   - Otherwise the renewal keeps the row's sole_until (the bound of its
//     last sole renewal's trust; a sole renewal's sole_until is later than
//     the row's previous one, so each sole renewal is told apart by
//     (holder, sole_until)). For every other row whose sole_until is less
//     than a TTL in the past, that relay may trust its memory until at most
//     TTL after it sent that sole renewal, which was before this renewal
//     read it: this relay acknowledges nothing for a TTL from when the
//     answer arrived, by its own clock (Await holds the relay's
//     acknowledgements meanwhile; it serves reads, with the head read, as
//     a relay that is not sole). It waits so once per (holder, sole_until): a later
//     renewal reading the same pair has nothing more to wait for (the wait
//     started at its first reading, already after that renewal), and a new
//     sole renewal of that relay is a new pair. Pairs no longer read are
//     forgotten; they do not come back (sole_until only grows), unless the
//     database's clock steps back, and then the relay waits again.
//
// A row counts as live until TTL past its expires_at, and a sole renewal is
// waited for until TTL past its sole_until: the database's clock (now())
// decides, and the margin keeps the protocol safe if it steps forward by up
// to a TTL. The waits themselves use only each process's monotonic clock.
// So a relay restarted after a crash of a sole relay waits one TTL from its
// first renewal, however long the dead row stays live; and not at all when
// the crashed process's end is certain: row keys name their process
// (holderKey), and each renewal removes, under the lock, the rows of
// processes that have ended on this machine and in this PID namespace
// (removeEnded, process.ended). An ended process answers no REQ more.
//
// The relay serves during the wait (reads with the head read: it is not
// sole while the other's row is live); only what tells a client its write
// happened waits, after the write's commit, in Await.
//
// Why a REQ answered from memory by a sole relay S at time t, within the
// trust of S's renewal R (no other row live at R), sees every write
// acknowledged before it arrived:
//
//   - S's own writes: the cache waits for what S committed (the store's
//     writer, and Note for the writes that bypass it) anyway.
//   - A write another relay W acknowledged before R: W's row was not live at
//     R, so W acknowledged it before its expires_at, before R's now(), after
//     its commit: the head R read holds it, and S's cache waits for that
//     head.
//   - A write W acknowledged after R and before t: W's row was not live at R,
//     so W renewed after R, ordered after it by the lock; that renewal read
//     S's row with R's sole_until or a later sole renewal's (a renewal of S
//     that is not sole keeps it; S's row is removed only after S stopped
//     trusting, or a minute after it expired), less than a TTL in the past
//     (R's trust lasts at most a TTL past it). W first read that pair after
//     R committed, and acknowledged nothing for a TTL after that answer
//     arrived, by when S's trust (TTL from R's sending) had ended, before t.
//     So there is none.
//     Or that renewal of W found S's process ended and removed its row: S
//     answers no REQ arriving after that, so none after W's acknowledgement.
//   - A renewal counts only if its commit returned without error before its
//     context ended: with synchronous replication, a commit whose wait for
//     the standby is cut short may be on the primary alone, and a promoted
//     standby would then lack the row another relay's renewal must read.
//
// Clocks are trusted to run at the same rate (a 1% margin); they need not
// agree on the time of day.
//
// Writes of processes that acknowledge no client (consumers, the moderator,
// cnctl) do not take part: a sole relay sees them when their notifications
// arrive, as a subscription does.
package writerlease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/schema"
)

// DefaultTTL is how long a renewal holds: a relay that stops renewing is
// sole, or blocks a newcomer's first acknowledgement, for at most this long.
const DefaultTTL = 4 * time.Second

// Lease is one relay process's row of the writer lease. Its methods are safe
// for concurrent use.
type Lease struct {
	pool   *pgxpool.Pool
	ttl    time.Duration
	holder string
	log    *slog.Logger
	now    func() time.Time
	me     process // this process, as its row key names it (ended)

	mu       sync.Mutex
	deadline time.Time // acknowledges nothing from then on (send + TTL)
	blocked  time.Time // acknowledges nothing before (another's sole_until)
	sole     time.Time // trusts its memory until then; zero: not sole
	floor    int64     // the outbox head read when it became sole, and Note's
	released bool
	// the others' sole renewals read by the last renewal, each waited for
	// (blocked) from when a renewal first read it
	waited map[soleRenewal]bool
}

// New returns the lease of one relay process's run, renewed every ttl/4
// (ttl 0: DefaultTTL). It holds nothing before Register.
func New(pool *pgxpool.Pool, ttl time.Duration, logger *slog.Logger) *Lease {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	me := self()
	return &Lease{pool: pool, ttl: ttl, log: logger, now: time.Now, me: me,
		holder: holderKey(host, os.Getpid(), hex.EncodeToString(b[:]), me)}
}

// Holder is this run's row key.
func (l *Lease) Holder() string { return l.holder }

// Register takes this run's row (one renewal; an error if the database
// cannot be reached) and returns at once: the relay serves from then on,
// answering reads with the outbox head read while it is not sole. It may
// acknowledge a client's write only once Await has returned nil, which waits
// until every other relay that may trust its memory has stopped doing so
// (up to a TTL after another relay's sole renewal, such as a crashed one's).
// Run must renew the row meanwhile.
func (l *Lease) Register(ctx context.Context) error {
	if err := l.renew(ctx); err != nil {
		return err
	}
	return nil
}

// ErrLost is Await's answer when the lease is not held for a reason other
// than another relay's trust: no renewal succeeded for a TTL (the database
// is unreachable), or the lease was released.
var ErrLost = errors.New("writer lease: not held (no renewal succeeded for a TTL)")

// Await returns nil once the relay may acknowledge a client's write (Holds),
// waiting while another relay may trust its memory (a newcomer's first TTL,
// see Register): an acknowledgement is held, never refused, for that. It
// returns ErrLost at once if the lease is lost (renewals failed for a TTL,
// or Release), and ctx's error if ctx ends first. Call it after the write's
// commit and before telling the client: the write is then acknowledged while
// the lease holds, which is what the protocol needs (the commit itself may
// come earlier).
func (l *Lease) Await(ctx context.Context) error {
	for {
		now := l.now()
		l.mu.Lock()
		deadline, blocked, released := l.deadline, l.blocked, l.released
		l.mu.Unlock()
		switch {
		case released:
			return ErrLost
		case !now.Before(blocked) && now.Before(deadline):
			return nil
		case !now.Before(blocked):
			return ErrLost
		}
		// Blocked: wait it out (the renewals meanwhile keep the deadline;
		// a later renewal may block for longer, so look again).
		t := time.NewTimer(blocked.Sub(now))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// Run renews the row every TTL/4 until ctx is done. A renewal that fails is
// logged; once none has succeeded for a TTL, Holds and Sole are false until
// one does. Run does not release the row: Release does, once the relay has
// stopped acknowledging.
func (l *Lease) Run(ctx context.Context) error {
	t := time.NewTicker(l.ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, l.ttl/4)
		err := l.renew(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.log.Warn("writer lease: renewal failed", "err", err)
		}
	}
}

// Release ends the lease: Holds and Sole are false from then on, and the
// row is removed, so that another relay may be sole at once. Call it after
// the relay's last acknowledgement.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	l.released, l.deadline, l.sole = true, time.Time{}, time.Time{}
	l.mu.Unlock()
	if _, err := l.pool.Exec(ctx, "DELETE FROM cn_relay.writer_lease WHERE holder = $1", l.holder); err != nil {
		return fmt.Errorf("writer lease: release: %w", err)
	}
	return nil
}

// Holds reports whether the relay may acknowledge a client's write now: its
// row is live, and no other relay may trust its memory. A write committed
// while it holds is committed before the row expires.
func (l *Lease) Holds() bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.deadline) && !now.Before(l.blocked)
}

// Sole reports whether the relay is the only one acknowledging writes now;
// while it is, a REQ that arrived before the call sees every acknowledged
// write once the cache has applied floor, this process's commits and the
// notifications received (eventcache.Reader.Sole).
func (l *Lease) Sole() (floor int64, ok bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.floor, now.Before(l.sole)
}

// Note records seq as committed by this process outside the store's writer
// (NIP-86 management): a REQ answered while sole waits for it.
func (l *Lease) Note(seq int64) {
	l.mu.Lock()
	l.floor = max(l.floor, seq)
	l.mu.Unlock()
}

// renewSQL writes the holder's row ($1) for $2 seconds and returns whether
// it is sole, the outbox head, and the others' sole renewals that may still
// be trusted: (holder, sole_until) for every other row whose sole_until is
// less than TTL in the past (a row is live until TTL past its expires_at,
// and a sole renewal's sole_until is its expires_at; the margin is against
// the database's clock stepping forward). A renewal that is not sole keeps
// the row's sole_until: it is still the bound of the trust of the holder's
// last sole renewal, which a newcomer reading the row after this renewal
// must wait out. A sole renewal's sole_until is later than the row's
// previous one, so that each sole renewal of a holder has its own pair.
// Run under schema.WriterLeaseLock.
const renewSQL = `
WITH others AS (
    SELECT count(*) FILTER (WHERE expires_at + make_interval(secs => $2) > now()) AS live,
           coalesce(array_agg(holder ORDER BY holder) FILTER (WHERE sole_until + make_interval(secs => $2) > now()), '{}') AS trusting,
           coalesce(array_agg(sole_until ORDER BY holder) FILTER (WHERE sole_until + make_interval(secs => $2) > now()), '{}') AS trusting_until
      FROM cn_relay.writer_lease WHERE holder <> $1),
mine AS (
    INSERT INTO cn_relay.writer_lease AS l (holder, expires_at, sole_until)
    SELECT $1, now() + make_interval(secs => $2), CASE WHEN live = 0 THEN now() + make_interval(secs => $2) END FROM others
    ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at,
        sole_until = CASE WHEN excluded.sole_until IS NULL THEN l.sole_until
                          ELSE greatest(excluded.sole_until, l.sole_until + interval '1 microsecond') END
    RETURNING holder)
SELECT others.live = 0, others.trusting, others.trusting_until, (SELECT seq FROM cn_relay.outbox_head) FROM mine, others`

// leaseApplication is the application_name of a renewal's transaction, so
// that pg_stat_activity tells it apart from the relay's other commits (an
// operator looking at commits waiting for a synchronous standby sees which
// one is the lease's).
const leaseApplication = "cn_writer_lease"

// renew runs one renewal (see the package doc). It counts only once its
// commit has returned without error while ctx was not done: a commit whose
// wait for a synchronous standby is interrupted may be committed on the
// primary alone, and a renewal that is not on the standbys must not be
// trusted (a promoted standby would not have it).
func (l *Lease) renew(ctx context.Context) error {
	send := l.now()
	var sole bool
	var holders []string
	var until []time.Time
	var head int64
	var ended []string
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// Transaction-local: the connection goes back to the pool as it was.
		if _, err := tx.Exec(ctx, "SELECT set_config('application_name', $1, true)", leaseApplication); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.WriterLeaseLock); err != nil {
			return err
		}
		// Rows of runs that ended without Release (a crash): long past
		// acknowledging anything.
		if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.writer_lease WHERE expires_at < now() - interval '1 minute'"); err != nil {
			return err
		}
		// Rows of runs whose process has certainly ended (a crash on this
		// machine, in this PID namespace): an ended process trusts its
		// memory no more and acknowledges nothing, so neither its trust
		// nor its row need be waited out (see ended).
		var err error
		if ended, err = l.removeEnded(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRow(ctx, renewSQL, l.holder, l.ttl.Seconds()).Scan(&sole, &holders, &until, &head)
	})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("writer lease: renew: %w", err)
	}
	got := l.now()
	for _, h := range ended {
		l.log.Info("writer lease: removed the row of a relay process that has ended (not waiting out its trust)", "holder", h)
	}
	var wait time.Duration
	defer func() {
		if wait > 0 {
			l.log.Info(waitMessage, "wait_ms", wait.Milliseconds())
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	// Another relay may trust its memory after each sole renewal read here,
	// until at most TTL after it sent that renewal, which was before this one
	// read it: for a renewal not seen before, wait a TTL from now, by this
	// clock, with a margin for the clocks' rates. One seen before is waited
	// for already (from when it was first seen, which is earlier).
	seen := make(map[soleRenewal]bool, len(holders))
	for i, h := range holders {
		r := soleRenewal{holder: h, until: until[i].UnixMicro()}
		seen[r] = true
		if !l.waited[r] {
			l.blocked = later(l.blocked, got.Add(l.ttl+l.ttl/100+time.Millisecond))
			wait = l.blocked.Sub(got)
		}
	}
	// Forget the renewals not read any more: their holder renewed since,
	// or their trust is over by the database's clock.
	l.waited = seen
	l.deadline = later(l.deadline, send.Add(l.ttl))
	if sole {
		if !l.now().Before(l.sole) {
			l.log.Info("writer lease: this relay is the only one acknowledging writes; REQs answered from memory skip the outbox head read")
		}
		l.floor = max(l.floor, head)
		l.sole = send.Add(l.ttl)
	} else {
		if l.now().Before(l.sole) {
			l.log.Info("writer lease: another relay acknowledges writes; REQs answered from memory read the outbox head")
		}
		l.sole = time.Time{}
	}
	return nil
}

// removeEnded deletes the other rows whose process has certainly ended
// (process.ended: the same machine and PID namespace, and the PID names no
// process, a zombie, or one started at another time) and returns their
// holders. Run under schema.WriterLeaseLock.
func (l *Lease) removeEnded(ctx context.Context, tx pgx.Tx) ([]string, error) {
	if l.me.boot == "" {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT holder FROM cn_relay.writer_lease WHERE holder <> $1", l.holder)
	if err != nil {
		return nil, err
	}
	holders, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var ended []string
	for _, h := range holders {
		if l.me.ended(holderProcess(h)) {
			ended = append(ended, h)
		}
	}
	if len(ended) > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.writer_lease WHERE holder = ANY($1)", ended); err != nil {
			return nil, err
		}
	}
	return ended, nil
}

// waitMessage is logged when a renewal reads another relay's sole renewal
// for the first time: this relay holds its acknowledgements (Await) until
// that relay's trust has ended.
const waitMessage = "writer lease: another relay may trust its memory; reads are served, acknowledgements of writes held until it stops"

// soleRenewal is one sole renewal of another relay, as read from its row.
type soleRenewal struct {
	holder string
	until  int64 // sole_until, µs since the epoch
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Collectors are the lease's metrics: cn_relay_writer_lease_sole (1 while the
// relay is the only one acknowledging writes) and
// cn_relay_writer_lease_holds (1 while it may acknowledge writes).
func (l *Lease) Collectors() []prometheus.Collector {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cn_relay_writer_lease_sole",
			Help: "1 while this relay is the only process acknowledging client writes (its event cache answers without the outbox head read)."},
			func() float64 { _, ok := l.Sole(); return b(ok) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cn_relay_writer_lease_holds",
			Help: "1 while this relay's writer lease is live and it may acknowledge client writes."},
			func() float64 { return b(l.Holds()) }),
	}
}
