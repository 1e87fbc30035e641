package eventcache

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// Next is the read a Reader falls back to (relay.Reader: the primary's
// store, or the read replicas in front of it).
type Next interface {
	Read(ctx context.Context, req readpath.Request) (readpath.Result, error)
	Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error)
}

// Reader is the event cache in front of a database's reads (a relay.Reader
// decorator): it answers a read from the cache when the cache holds the
// whole answer (Cache.Query) and has applied every outbox row committed
// before the read began, and passes every other read, and every count, to
// Next unchanged.
//
// Read-your-writes: before it answers, the cache must have applied, within
// Wait, the highest of Want (this process's commits, the notifications
// received) and an outbox head read after the read began (Heads, by any
// process), as a database snapshot taken then would hold them. Every row
// above the answer's Seq is applied to the cache, and so fanned out, after
// the read began, so a subscription filed before it misses none.
//
// A cache answer (Source readpath.Cache) holds no memory of the reader's:
// it is bounded by Request.Cap, not Request.Take, which Next alone asks.
type Reader struct {
	Cache *Cache
	Next  Next
	// Want returns the lowest seq the cache must have applied before it
	// answers, read without a round trip (this process's commits,
	// notifications received).
	Want func() int64
	// Heads reads the outbox head after the read began.
	Heads *Heads
	// Sole, if set, reports whether this process is the only one
	// acknowledging clients' writes (writerlease.Lease.Sole). While it is, a
	// read skips Heads: every write acknowledged before the read began is
	// this process's (Want) or at most floor, which the cache must have
	// applied instead. Writes that acknowledge no client (consumers,
	// operator tools) are in the answer once their notification arrived.
	Sole func() (floor int64, ok bool)
	// Wait bounds the wait for the cache to apply the seq wanted; past it
	// Next answers.
	Wait time.Duration
	// Now is the clock for NIP-40 expiry; nil: time.Now.
	Now func() time.Time
	// Answers, if set, counts each read by how the cache took it (label
	// result): "hit" (it answered), "miss" (it cannot prove it holds the
	// whole answer) or "behind" (it had not applied the seq wanted within
	// Wait, or the head could not be read). See NewAnswers.
	Answers *prometheus.CounterVec
}

// ReadWait is how long a read waits for the cache to apply the writes
// committed before it began, before Next answers instead (Reader.Wait), and
// bounds each read of the outbox head (Heads.Wait).
const ReadWait = 100 * time.Millisecond

// Feed is the outbox as a Reader needs it (relay.Feed).
type Feed interface {
	// Head reads the highest committed seq.
	Head(ctx context.Context) (int64, error)
	// Notified returns the highest seq a notification has announced.
	Notified() int64
}

// NewReader puts c in front of next: a read waits until c has applied
// every row this process committed (committed, relay.RecentStore's
// Committed), every row feed's notifications announced, and the outbox head
// read after the read began, for at most ReadWait; answers counts the
// reads (nil: not counted).
func NewReader(c *Cache, next Next, committed func() int64, feed Feed, now func() time.Time, answers *prometheus.CounterVec) *Reader {
	return &Reader{Cache: c, Next: next,
		Want:    func() int64 { return max(committed(), feed.Notified()) },
		Heads:   &Heads{Read: feed.Head, Wait: ReadWait},
		Wait:    ReadWait,
		Now:     now,
		Answers: answers,
	}
}

// Compose is a relay's event cache in front of next: a Cache of maxBytes
// (topicless: it also holds events without a community topic) and the Reader
// that answers from it, whose answers counter is registered with reg (nil:
// not registered). The caller hands the Reader to the relay as its reads and
// the Cache as the cache its outbox follower fills.
func Compose(maxBytes int, topicless bool, next Next, committed func() int64, feed Feed, now func() time.Time, reg prometheus.Registerer) (*Reader, *Cache) {
	answers := NewAnswers()
	if reg != nil {
		reg.MustRegister(answers)
	}
	c := New(maxBytes, topicless)
	return NewReader(c, next, committed, feed, now, answers), c
}

// NewAnswers is the counter of Reader.Answers,
// cn_relay_cache_answers_total{result}; the caller registers it.
func NewAnswers() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cn_relay_cache_answers_total",
		Help: "REQs by how the event cache took them: hit (it answered), miss (it cannot prove it holds the whole answer), behind (it had not applied the writes committed before the REQ within 100 ms, or the outbox head could not be read); miss and behind read the database.",
	}, []string{"result"})
}

// Read answers req from the cache when it can (see Reader), else from Next.
func (rd *Reader) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	if res, ok := rd.fromCache(ctx, req); ok {
		return res, nil
	}
	return rd.Next.Read(ctx, req)
}

// Count is Next's: the cache counts nothing.
func (rd *Reader) Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error) {
	return rd.Next.Count(ctx, filters, v)
}

func (rd *Reader) answered(result string) {
	if rd.Answers != nil {
		rd.Answers.WithLabelValues(result).Inc()
	}
}

// fromCache is the cache's answer to req; ok is false when Next must
// answer.
func (rd *Reader) fromCache(ctx context.Context, req readpath.Request) (res readpath.Result, ok bool) {
	now := time.Now
	if rd.Now != nil {
		now = rd.Now
	}
	at := now().Unix()
	// A read the cache cannot answer as it stands goes to Next at once
	// (without the head read below, which would only delay it).
	hits, seq, stopped, ok := rd.Cache.Query(req.Filters, req.Viewer, at, capTake(req.Cap))
	if !ok {
		rd.answered("miss")
		return res, false
	}
	// Every write committed before the read began, by any process, is in
	// its answer, as with a database snapshot: the cache must have applied
	// the outbox head read after it began (Want bounds it from below for
	// free). A sole writer needs no read (Sole). Want and the sole floor are
	// read after the read began, so an answer the cache gave at a seq at or
	// above both holds every such write: a sole writer's first answer is
	// its answer when the cache had applied them already (the usual case),
	// and the cache is asked again only after a wait.
	want := rd.Want()
	head, sole := rd.soleFloor()
	if !sole || seq < max(want, head) {
		if !sole {
			var err error
			if head, err = rd.Heads.Get(ctx); err != nil {
				rd.answered("behind")
				return res, false
			}
		}
		if !rd.Cache.WaitFor(max(want, head), rd.Wait, ctx.Done()) {
			rd.answered("behind")
			return res, false
		}
		hits, seq, stopped, ok = rd.Cache.Query(req.Filters, req.Viewer, at, capTake(req.Cap))
		if !ok {
			rd.answered("miss")
			return res, false
		}
	}
	rd.answered("hit")
	res = readpath.Result{Events: make([]*nostr.Event, len(hits)), JSON: make([][]byte, len(hits)), Seq: seq,
		Source: readpath.Cache, Stopped: stopped}
	for i, h := range hits {
		res.Events[i], res.JSON[i] = h.Event, h.JSON
	}
	return res, true
}

// capTake returns a take that keeps events while their bytes sum to at most
// limit (readpath.Request.Cap); nil for no cap.
func capTake(limit int64) func(int) bool {
	if limit <= 0 {
		return nil
	}
	kept := int64(0)
	return func(n int) bool {
		if kept+int64(n) > limit {
			return false
		}
		kept += int64(n)
		return true
	}
}

// soleFloor is Sole's answer (false when unset).
func (rd *Reader) soleFloor() (int64, bool) {
	if rd.Sole == nil {
		return 0, false
	}
	return rd.Sole()
}
