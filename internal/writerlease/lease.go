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
//   - Otherwise sole_until = NULL, and if another live row has a
//     sole_until, that relay may trust its memory until at most TTL after it
//     sent that renewal, which was before this renewal read it: this relay
//     acknowledges nothing for a TTL from when the answer arrived, by its own
//     clock (Register waits for it before the relay serves).
//
// A row counts as live until TTL past its expires_at: the database's clock
// (now()) decides liveness, and the margin keeps the protocol safe if it
// steps forward by up to a TTL. The waits themselves use only each
// process's monotonic clock.
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
//     S's sole_until, and W acknowledged nothing for a TTL after its answer
//     arrived, by when S's trust (TTL from R's sending) had ended, before t.
//     So there is none.
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

	mu       sync.Mutex
	deadline time.Time // acknowledges nothing from then on (send + TTL)
	blocked  time.Time // acknowledges nothing before (another's sole_until)
	sole     time.Time // trusts its memory until then; zero: not sole
	floor    int64     // the outbox head read when it became sole, and Note's
	released bool
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
	return &Lease{pool: pool, ttl: ttl, log: logger, now: time.Now,
		holder: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))}
}

// Holder is this run's row key.
func (l *Lease) Holder() string { return l.holder }

// Register takes this run's row and waits until the relay may acknowledge
// writes (Holds): until every other relay that may trust its memory has
// stopped doing so. The relay must not acknowledge a client's write before
// it returns nil.
func (l *Lease) Register(ctx context.Context) error {
	for {
		if err := l.renew(ctx); err != nil {
			return err
		}
		if l.Holds() {
			return nil
		}
		l.mu.Lock()
		wait := l.blocked.Sub(l.now())
		l.mu.Unlock()
		if wait > 0 {
			l.log.Info("writer lease: another relay trusts its memory; acknowledging no write until it stops", "wait_ms", wait.Milliseconds())
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		// (renewed again: the wait may have taken the row's time)
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
// it is sole and whether another relay may trust its memory, and the outbox
// head. A row counts as live until TTL past its expires_at (a margin against
// the database's clock stepping forward). Run under schema.WriterLeaseLock.
const renewSQL = `
WITH others AS (
    SELECT count(*) FILTER (WHERE expires_at + make_interval(secs => $2) > now()) AS live,
           coalesce(bool_or(sole_until IS NOT NULL AND expires_at + make_interval(secs => $2) > now()), false) AS trusting
      FROM cn_relay.writer_lease WHERE holder <> $1),
mine AS (
    INSERT INTO cn_relay.writer_lease (holder, expires_at, sole_until)
    SELECT $1, now() + make_interval(secs => $2), CASE WHEN live = 0 THEN now() + make_interval(secs => $2) END FROM others
    ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at, sole_until = excluded.sole_until
    RETURNING sole_until IS NOT NULL AS sole)
SELECT mine.sole, others.trusting, (SELECT seq FROM cn_relay.outbox_head) FROM mine, others`

// renew runs one renewal (see the package doc).
func (l *Lease) renew(ctx context.Context) error {
	send := l.now()
	var sole, trusting bool
	var head int64
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.WriterLeaseLock); err != nil {
			return err
		}
		// Rows of runs that ended without Release (a crash): long past
		// acknowledging anything.
		if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.writer_lease WHERE expires_at < now() - interval '1 minute'"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, renewSQL, l.holder, l.ttl.Seconds()).Scan(&sole, &trusting, &head)
	})
	if err != nil {
		return fmt.Errorf("writer lease: renew: %w", err)
	}
	got := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	if trusting {
		// Another relay may trust its memory, until at most TTL after it
		// sent the renewal that said so, which was before this one read
		// it: wait a TTL from now, by this clock, with a margin for the
		// clocks' rates.
		l.blocked = later(l.blocked, got.Add(l.ttl+l.ttl/100+time.Millisecond))
	}
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
