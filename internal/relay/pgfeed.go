package relay

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// PGFeed is the Feed of a Postgres outbox: reads go through the pool, and Listen
// holds one dedicated connection (not from the pool) with LISTEN cn_relay_outbox.
//
// A notification whose seq a read (ReadAfter) has already returned does not
// wake the follower: each batch the relay commits is read after its local
// commit (follower.committed) and notified a moment later, and that read
// would find nothing. A PGFeed serves one follower (its ReadAfter's only
// caller).
type PGFeed struct {
	pool     *pgxpool.Pool
	log      *slog.Logger
	notified atomic.Int64 // the highest seq a notification carried
	read     atomic.Int64 // the highest seq ReadAfter returned
}

// NewPGFeed returns a Feed on pool. logger may be nil.
func NewPGFeed(pool *pgxpool.Pool, logger *slog.Logger) *PGFeed {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PGFeed{pool: pool, log: logger}
}

// Head implements Feed.
func (f *PGFeed) Head(ctx context.Context) (int64, error) {
	return outbox.Head(ctx, f.pool)
}

// ReadAfter implements Feed.
func (f *PGFeed) ReadAfter(ctx context.Context, after int64, limit int, buf []outbox.Row) ([]outbox.Row, error) {
	rows, err := outbox.ReadAfter(ctx, f.pool, after, limit, buf)
	if err == nil && len(rows) > 0 {
		raise(&f.read, rows[len(rows)-1].Seq)
	}
	return rows, err
}

// raise sets v to seq if seq is higher.
func raise(v *atomic.Int64, seq int64) {
	for cur := v.Load(); seq > cur && !v.CompareAndSwap(cur, seq); cur = v.Load() {
	}
}

// Listen implements Feed with outbox.Listen: a dedicated LISTEN connection that
// reconnects with back-off and wakes after every notification and reconnect.
func (f *PGFeed) Listen(ctx context.Context, wake func()) {
	outbox.ListenChannel(ctx, f.pool.Config().ConnConfig, outbox.Channel, wake, func(payload string) {
		if seq, err := strconv.ParseInt(payload, 10, 64); err == nil {
			raise(&f.notified, seq)
			if seq <= f.read.Load() {
				return // read already (see PGFeed)
			}
		}
		wake()
	}, f.log)
}

// Notified returns the highest seq an outbox notification has carried so far
// (0 before any): every row up to it is committed, whichever process wrote
// it.
func (f *PGFeed) Notified() int64 { return f.notified.Load() }
