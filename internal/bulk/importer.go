package bulk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/sync/errgroup"

	"github.com/kukuri/communitynode/internal/admission"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
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
	// Store stores the events (store.Ingest; store.DryRunTx for a dry run). Its
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
	// StatsEvery). It may be nil.
	OnAnalyzed func(store.Analyzed)
	// StatsEvery is how often a real import checks the query tables'
	// statistics and refreshes missing or stale ones (store.AnalyzeStale, as
	// the relay does), and it checks once more at the end: a large import into
	// a node whose autovacuum is off or behind would otherwise slow its own
	// batches down and leave REQs without statistics. Default 30 s (each
	// check may analyse three tables, 0.2-0.6 s each at a million events);
	// negative turns it off.
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

// readChunks splits r into lines and hands them out in chunks, to the workers
// and, in the same order, to the collector. Blank lines are skipped.
func readChunks(ctx context.Context, r io.Reader, maxMessage int, tasks, ordered chan<- *chunk) error {
	const envelope = len(`["EVENT",]`)
	maxLine := 0
	if maxMessage > 0 {
		maxLine = maxMessage - envelope
	}
	br := bufio.NewReaderSize(r, 1<<20)
	var no int64
	c := &chunk{done: make(chan struct{})}
	send := func() error {
		for _, ch := range []chan<- *chunk{ordered, tasks} {
			select {
			case ch <- c:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c = &chunk{done: make(chan struct{})}
		return nil
	}
	for {
		raw, tooLong, n, err := readLine(br, maxLine)
		if n > 0 {
			no++
			if raw = bytes.TrimSpace(raw); len(raw) > 0 || tooLong {
				l := line{no: no}
				if tooLong {
					l.reason = fmt.Sprintf("invalid: message too large (limit %d bytes)", maxMessage)
				}
				c.lines = append(c.lines, l)
				c.raw = append(c.raw, raw)
				if len(c.lines) == chunkLines {
					if err := send(); err != nil {
						return err
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", no+1, err)
		}
	}
	if len(c.lines) > 0 {
		return send()
	}
	return nil
}

// readLine returns the next line without its line end, copied, and how many
// bytes it consumed (0 only at the end of the input). A line longer than
// maxLen (when maxLen > 0) is consumed and reported as tooLong, without its bytes.
func readLine(br *bufio.Reader, maxLen int) (out []byte, tooLong bool, n int, err error) {
	for {
		part, err := br.ReadSlice('\n')
		n += len(part)
		if !tooLong {
			out = append(out, part...)
			if maxLen > 0 && len(bytes.TrimRight(out, "\r\n")) > maxLen {
				tooLong, out = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(out, "\r\n"), tooLong, n, err
	}
}

// check parses and validates a chunk's lines: everything that needs no storage.
func (im *Importer) check(c *chunk, now time.Time) {
	defer close(c.done)
	chain := &admission.Chain{Limits: im.Limits, Policy: im.Policy}
	var msg []byte
	for i := range c.lines {
		l := &c.lines[i]
		if l.reason != "" {
			continue
		}
		msg = append(append(append(msg[:0], `["EVENT",`...), c.raw[i]...), ']')
		m, err := protocol.ParseClientMessage(msg, im.Limits)
		if err != nil {
			var perr *protocol.ParseError
			if errors.As(err, &perr) {
				l.id = perr.EventID
			}
			l.reason = err.Error()
			continue
		}
		ev := m.Event
		l.id = ev.ID
		l.reason = admit(chain, ev, now)
		if l.reason == "" {
			l.ev = ev
		}
	}
	c.raw = nil
}

// admit runs the relay's admission chain (internal/admission) without a
// connection, so without rates and AUTH: a protected event is refused. No rank
// gate: the operator imports what the file holds. Ephemeral events are refused
// after the chain.
func admit(chain *admission.Chain, ev *nostr.Event, now time.Time) string {
	if r := chain.Check(ev, now, nil); r != "" {
		return r
	}
	if protocol.ClassOf(ev.Kind) == protocol.Ephemeral {
		return ReasonEphemeral
	}
	return ""
}

// collector stores the checked lines in file order, batch by batch.
type collector struct {
	im        *Importer
	sink      sink
	st        *Stats
	batchSize int
	batch     []line
	deferred  []line
	start     time.Time
	lastTick  time.Time
	lastLines int64
	busy      *storeGate // nil: no worker waits for the store
	// waiting are the authors of the lines answered "pending:", with how many
	// (see Stats.Pending).
	waiting map[string]int64
}

func (c *collector) add(ctx context.Context, lines []line) error {
	for _, l := range lines {
		c.st.Lines++
		if l.ev == nil {
			c.refuse(l, l.reason)
			continue
		}
		c.batch = append(c.batch, l)
		if len(c.batch) >= c.batchSize {
			if err := c.flush(ctx); err != nil {
				return err
			}
		}
	}
	c.tick()
	return nil
}

// flush stores the batch and settles each of its lines.
func (c *collector) flush(ctx context.Context) error {
	if len(c.batch) == 0 {
		return nil
	}
	verdicts, err := c.store(ctx, c.batch)
	if err != nil {
		return err
	}
	for i, v := range verdicts {
		l := c.batch[i]
		switch {
		case retriable(v.Message):
			c.deferred = append(c.deferred, l)
		default:
			c.settle(l, v)
		}
	}
	c.batch = c.batch[:0]
	c.tick()
	return nil
}

// retry tries the deferred lines again, in file order, until a pass stores
// none of them; what is left is refused with its last reason.
func (c *collector) retry(ctx context.Context) error {
	c.st.Retried = int64(len(c.deferred))
	var last []protocol.Verdict
	for pass := 0; len(c.deferred) > 0; pass++ {
		todo := c.deferred
		c.deferred = nil
		last = last[:0]
		stored := false
		var keep []line
		for from := 0; from < len(todo); from += c.batchSize {
			part := todo[from:min(from+c.batchSize, len(todo))]
			verdicts, err := c.store(ctx, part)
			if err != nil {
				return err
			}
			for i, v := range verdicts {
				if retriable(v.Message) && pass+1 < maxRetryPasses {
					keep = append(keep, part[i])
					last = append(last, v)
					continue
				}
				if v.OK && v.Message == "" {
					stored = true
					c.st.RetriedAccepted++
				}
				c.settle(part[i], v)
			}
			c.tick()
		}
		if !stored {
			for i, l := range keep {
				c.settle(l, last[i])
			}
			return nil
		}
		c.deferred = keep
	}
	return nil
}

// retriable reports a refusal that only reflects what was not stored yet.
func retriable(msg string) bool {
	return msg == protocol.ReasonMissingTopic || msg == protocol.ReasonPersonNotMember
}

func (c *collector) store(ctx context.Context, lines []line) ([]protocol.Verdict, error) {
	evs := make([]*nostr.Event, len(lines))
	for i, l := range lines {
		evs[i] = l.ev
	}
	if c.busy != nil {
		done := c.busy.storing()
		defer done()
	}
	verdicts, err := c.sink.ingest(ctx, evs, c.st)
	if err != nil {
		return nil, fmt.Errorf("store lines %d-%d: %w", lines[0].no, lines[len(lines)-1].no, err)
	}
	if len(verdicts) != len(evs) {
		return nil, fmt.Errorf("store returned %d verdicts for %d events", len(verdicts), len(evs))
	}
	return verdicts, nil
}

func (c *collector) settle(l line, v protocol.Verdict) {
	switch {
	case v.OK && v.Message == "":
		c.st.Accepted++
	case v.OK && v.Message == store.MsgPending:
		c.st.Pending++
		if c.waiting == nil {
			c.waiting = map[string]int64{}
		}
		c.waiting[l.ev.PubKey]++
	case v.OK && strings.HasPrefix(v.Message, "duplicate:"):
		c.st.Duplicates++
	case v.OK:
		c.st.Accepted++ // an OK with a note is still stored
	default:
		c.refuse(l, v.Message)
	}
}

// settleWaiting, once every line is stored, counts as accepted the "pending:"
// lines whose author has nothing waiting any more: a later line made the
// author a member, which published its waiting events.
func (c *collector) settleWaiting(ctx context.Context) error {
	if len(c.waiting) == 0 {
		return nil
	}
	authors := make([]string, 0, len(c.waiting))
	for a := range c.waiting {
		authors = append(authors, a)
	}
	still, err := c.sink.waiting(ctx, authors)
	if err != nil {
		return err
	}
	for a, n := range c.waiting {
		if !still[a] {
			c.st.Pending -= n
			c.st.Accepted += n
		}
	}
	return nil
}

func (c *collector) refuse(l line, reason string) {
	c.st.refuse(reason)
	if c.im.OnRefused != nil {
		c.im.OnRefused(Refusal{Line: l.no, ID: l.id, Reason: reason})
	}
}

// tick reports progress when ProgressEvery has passed since the last report.
func (c *collector) tick() {
	if c.im.OnProgress == nil {
		return
	}
	every := c.im.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	t := time.Now()
	if t.Sub(c.lastTick) < every {
		return
	}
	s := *c.st
	s.Elapsed = t.Sub(c.start)
	s.Seconds = s.Elapsed.Seconds()
	s.EventsPerSecond = float64(s.Lines-c.lastLines) / t.Sub(c.lastTick).Seconds()
	c.lastTick, c.lastLines = t, s.Lines
	c.im.OnProgress(s)
}

// sink is where checked events go: the store (a real import) or a transaction
// that is rolled back (a dry run).
type sink interface {
	ingest(ctx context.Context, evs []*nostr.Event, st *Stats) ([]protocol.Verdict, error)
	// waiting returns which of authors have identity events waiting for
	// their first post, as the import left them.
	waiting(ctx context.Context, authors []string) (map[string]bool, error)
	finish(ctx context.Context, st *Stats) error
	close(ctx context.Context)
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// waitingAuthors returns which of authors have rows in cn_relay.pending_events.
func waitingAuthors(ctx context.Context, q queryer, authors []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, "SELECT DISTINCT pubkey FROM cn_relay.pending_events WHERE pubkey = ANY($1)", authors)
	if err != nil {
		return nil, fmt.Errorf("read pending identity events: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read pending identity events: %w", err)
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}

func (im *Importer) newSink(ctx context.Context) (sink, error) {
	if !im.DryRun {
		return &storeSink{im: im, lastStats: time.Now()}, nil
	}
	tx, err := im.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin dry run: %w", err)
	}
	return &dryRunSink{store: im.Store, tx: tx}, nil
}

type storeSink struct {
	im        *Importer
	lastStats time.Time
}

func (s *storeSink) ingest(ctx context.Context, evs []*nostr.Event, _ *Stats) ([]protocol.Verdict, error) {
	verdicts, err := s.im.Store.Ingest(ctx, evs)
	if err != nil {
		return nil, err
	}
	every := s.im.StatsEvery
	if every == 0 {
		every = 30 * time.Second
	}
	if every > 0 && time.Since(s.lastStats) >= every {
		s.lastStats = time.Now()
		if err := s.keepStatistics(ctx); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

func (s *storeSink) keepStatistics(ctx context.Context) error {
	done, err := s.im.Store.AnalyzeStale(ctx)
	if s.im.OnAnalyzed != nil {
		for _, a := range done {
			s.im.OnAnalyzed(a)
		}
	}
	return err
}

// finish refreshes stale statistics and announces the outbox head, as the
// relay does after its commits: the store's writer coalesces its NOTIFYs and
// may not have sent the last one.
func (s *storeSink) finish(ctx context.Context, st *Stats) error {
	if st.Accepted == 0 {
		return nil
	}
	if s.im.StatsEvery >= 0 {
		flushStats(ctx, s.im.Pool)
		if err := s.keepStatistics(ctx); err != nil {
			return err
		}
	}
	head, err := outbox.Head(ctx, s.im.Pool)
	if err != nil {
		return err
	}
	if _, err := s.im.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, strconv.FormatInt(head, 10)); err != nil {
		return fmt.Errorf("notify %s: %w", outbox.Channel, err)
	}
	st.HeadSeq = head
	return nil
}

func (s *storeSink) waiting(ctx context.Context, authors []string) (map[string]bool, error) {
	return waitingAuthors(ctx, s.im.Pool, authors)
}

func (s *storeSink) close(context.Context) {}

// flushStats makes the pool's backends publish their table statistics
// counters now (Postgres 15+; best effort): a backend flushes them when it goes
// idle, but at most once a second, so the last batches' changes could be
// missing when the import checks for stale statistics at its end.
func flushStats(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range pool.AcquireAllIdle(ctx) {
		// The backend flushes before it answers: the call returns after it.
		_, _ = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		c.Release()
	}
}

type dryRunSink struct {
	store *store.Store
	tx    pgx.Tx
}

func (s *dryRunSink) ingest(ctx context.Context, evs []*nostr.Event, st *Stats) ([]protocol.Verdict, error) {
	verdicts, rows, err := s.store.DryRunTx(ctx, s.tx, evs)
	st.OutboxRows += int64(rows)
	return verdicts, err
}

func (s *dryRunSink) waiting(ctx context.Context, authors []string) (map[string]bool, error) {
	return waitingAuthors(ctx, s.tx, authors)
}

func (s *dryRunSink) finish(context.Context, *Stats) error { return nil }

func (s *dryRunSink) close(ctx context.Context) {
	_ = s.tx.Rollback(context.WithoutCancel(ctx))
}
