package bulk

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/admission"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// Reasons the importer gives itself (internal/admission and internal/protocol
// give the others).
const (
	ReasonEphemeral = "invalid: ephemeral events are never stored"
	// ReasonProtected refuses a protected (NIP-70) event: no author
	// authenticated for it.
	ReasonProtected = admission.ReasonProtected
)

// DefaultBatchSize is how many events one import transaction stores.
const DefaultBatchSize = 2000

// maxRetryPasses bounds the passes over events refused for what was not stored
// yet (see the package doc).
const maxRetryPasses = 8

// chunkLines is how many lines one worker task parses and verifies.
const chunkLines = 256

// Importer stores JSON Lines events through the relay's rules. Set the fields,
// then call Run once.
type Importer struct {
	// Store stores the events (store.Import; store.DryRunTx for a dry run). Its
	// outbox writer should be running, so that partitions are kept ahead.
	Store *store.Store
	// Pool runs the dry run's transaction and the final NOTIFY.
	Pool *pgxpool.Pool
	// Limits are the relay's limits and topic rules; they must be the ones the
	// Store was made with.
	Limits protocol.Limits
	// Policy is the relay management state (relayadmin.Load); nil enforces none.
	Policy admission.Policy
	// DryRun decides everything in one transaction that is rolled back.
	DryRun bool
	// BatchSize is the events per transaction (default DefaultBatchSize).
	BatchSize int
	// Workers parse and verify (default GOMAXPROCS).
	Workers int
	// Now is the clock of validation (created_at skew, NIP-40); nil means time.Now.
	Now func() time.Time
	// OnRefused is called for every refused line, in the order decided (file
	// order, then the retried lines). It may be nil.
	OnRefused func(Refusal)
	// OnProgress is called about every ProgressEvery (default 1 s) with the
	// counts so far. It may be nil.
	OnProgress    func(Stats)
	ProgressEvery time.Duration
	// OnAnalyzed is called for each query table a real import analysed (see
	// StatsEvery), from the goroutine that calls OnRefused and OnProgress,
	// after the check that analysed it ended. It may be nil.
	OnAnalyzed func(store.Analyzed)
	// StatsEvery is how often a real import checks the query tables'
	// statistics and refreshes missing or stale ones (store.AnalyzeStale, as
	// the relay does), and it checks once more at the end: a large import into
	// a node whose autovacuum is off or behind would otherwise slow its own
	// batches down and leave REQs without statistics. The checks during the
	// import run alongside its batches, on another connection (one at a
	// time; the batches do not wait for them); the one at the end is done
	// before Run returns. Zero checks only at the end; negative turns the
	// checks off. The node's imports use node.DefaultImportStatsInterval, the
	// one home of that cadence.
	StatsEvery time.Duration
}

// Refusal is one refused line.
type Refusal struct {
	Line   int64  `json:"line"`
	ID     string `json:"id,omitempty"` // the event id, when readable
	Reason string `json:"reason"`       // the NIP-01 OK message the relay would send
}

// Stats counts what an import did. Lines counts non-blank lines; each ends up
// accepted, pending, duplicate or refused.
type Stats struct {
	DryRun   bool  `json:"dry_run"`
	Lines    int64 `json:"lines"`
	Accepted int64 `json:"accepted"`
	// Pending counts the identity events (profiles, lists) answered "pending:"
	// whose author is still not a member when the import ends: they wait in
	// cn_relay.pending_events for its first post (see
	// protocol.IdentityWritersMembers) and are not served yet. Those whose
	// author's first post came later in the input were published then and
	// count as accepted. While the import runs (OnProgress) it counts every
	// "pending:" answer so far.
	Pending    int64            `json:"pending"`
	Duplicates int64            `json:"duplicates"`
	Refused    int64            `json:"refused"`
	Reasons    map[string]int64 `json:"refused_by_reason"`
	// Retried counts events tried again after the file (see the package doc);
	// RetriedAccepted how many of them were then stored.
	Retried         int64 `json:"retried"`
	RetriedAccepted int64 `json:"retried_accepted"`
	// OutboxRows is what a dry run would have appended to the outbox.
	OutboxRows int64 `json:"outbox_rows,omitempty"`
	// HeadSeq is the outbox head announced after a real import (0: none).
	HeadSeq int64         `json:"head_seq,omitempty"`
	Elapsed time.Duration `json:"-"`
	Seconds float64       `json:"seconds"`
	// EventsPerSecond is the lines decided per second of the whole run.
	EventsPerSecond float64 `json:"events_per_second"`
}

func (s *Stats) refuse(reason string) {
	s.Refused++
	s.Reasons[reasonKey(reason)]++
}

// reasonKey groups reasons whose text carries details: "invalid: message too
// large (140000 bytes, limit 131072)" counts as "invalid: message too large".
func reasonKey(reason string) string {
	if i := strings.LastIndex(reason, " ("); i > 0 && strings.HasSuffix(reason, ")") {
		return reason[:i]
	}
	return reason
}

// line is one input line on its way through the pipeline.
type line struct {
	no     int64
	ev     *nostr.Event // set when it passed every check that needs no storage
	id     string       // the event id when readable
	reason string       // why it was refused before storage
}

type chunk struct {
	lines []line
	raw   [][]byte
	done  chan struct{}
}

// Run reads r to the end and imports it. It returns the counts and an error
// only for operational failures (reading r, the database); refused lines are
// counted and reported through OnRefused.
func (im *Importer) Run(ctx context.Context, r io.Reader) (Stats, error) {
	if im.Store == nil || im.Pool == nil {
		return Stats{}, errors.New("import: Store and Pool are required")
	}
	batchSize := im.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	workers := im.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	now := im.Now
	if now == nil {
		now = time.Now
	}
	start := time.Now()
	st := Stats{DryRun: im.DryRun, Reasons: map[string]int64{}}

	sink, err := im.newSink(ctx)
	if err != nil {
		return st, err
	}
	defer sink.close(ctx)

	g, gctx := errgroup.WithContext(ctx)
	tasks := make(chan *chunk, workers)
	// ordered holds the chunks in file order; its capacity is how far parsing
	// and verification may run ahead of storing (about two batches).
	ordered := make(chan *chunk, 2*batchSize/chunkLines+workers)
	g.Go(func() error {
		defer close(tasks)
		defer close(ordered)
		return readChunks(gctx, r, im.Limits.MaxMessageBytes, tasks, ordered)
	})
	busy := newStoreGate(batchSize)
	for w := range workers {
		g.Go(func() error {
			for {
				// The last worker of several yields its CPU to the store while
				// a batch is being stored and the checks are a batch ahead
				// (see storeGate).
				if w > 0 && w == workers-1 {
					busy.waitIdle(gctx)
				}
				c, ok := <-tasks
				if !ok {
					return nil
				}
				im.check(c, now())
				busy.checked(len(c.lines))
			}
		})
	}

	c := &collector{im: im, sink: sink, st: &st, batchSize: batchSize, start: start, lastTick: start, busy: busy}
	g.Go(func() error {
		for ch := range ordered {
			select {
			case <-ch.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			busy.consumed(len(ch.lines))
			if err := c.add(gctx, ch.lines); err != nil {
				return err
			}
		}
		if err := c.flush(gctx); err != nil {
			return err
		}
		return c.retry(gctx)
	})
	err = g.Wait()
	st.Elapsed = time.Since(start)
	st.Seconds = st.Elapsed.Seconds()
	if st.Seconds > 0 {
		st.EventsPerSecond = float64(st.Lines) / st.Seconds
	}
	if err != nil {
		return st, err
	}
	if err := c.settleWaiting(ctx); err != nil {
		return st, err
	}
	if err := sink.finish(ctx, &st); err != nil {
		return st, err
	}
	return st, nil
}

// storeGate lets the import's one serial stage, storing, go first when the
// checks are ahead. Each batch's store needs a CPU for its connection's
// backend and one for the collector, and checking chunks on every CPU at the
// same time makes it wait for them. So while a batch is being stored and a
// whole batch of checked lines is ready after it, one worker of several takes
// no new chunk: the store will not wait for checks after this batch. When
// checking is the slower stage (pure-Go signatures) less is ready, and every
// worker keeps going.
type storeGate struct {
	batch int          // lines in a batch
	ready atomic.Int64 // lines checked and not yet taken by the collector
	mu    sync.Mutex
	idle  chan struct{} // closed while no batch is being stored
}

func newStoreGate(batch int) *storeGate {
	idle := make(chan struct{})
	close(idle)
	return &storeGate{batch: batch, idle: idle}
}

func (g *storeGate) checked(lines int)  { g.ready.Add(int64(lines)) }
func (g *storeGate) consumed(lines int) { g.ready.Add(-int64(lines)) }

// storing marks a batch as being stored until the returned function is called.
func (g *storeGate) storing() (done func()) {
	g.mu.Lock()
	g.idle = make(chan struct{})
	idle := g.idle
	g.mu.Unlock()
	return func() { close(idle) }
}

// waitIdle returns when no batch is being stored or less than a batch is
// ready, or ctx is done.
func (g *storeGate) waitIdle(ctx context.Context) {
	if g.ready.Load() < int64(g.batch) {
		return
	}
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
}
