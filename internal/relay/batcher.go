package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/outbox"
)

// batcher groups events from all connections into Store.Ingest calls (group
// commit: one outbox lock per batch, not per event; see pkg/outbox/doc.go). A batch is flushed as soon as a flush slot is idle, when
// it holds BatchMaxEvents events, or when its first event has waited BatchMaxDelay:
// a lone event is not delayed, and under load batches grow while the slots are
// busy. At most IngestConcurrency flushes run at once; while they all run, events queue up and, once the queue is full,
// the readers that submit them wait (backpressure to the clients).
//
// Pipelined (IngestConcurrency 1, the default): a slot is given back as soon as
// its batch holds its write turn and its COMMIT is sent (outbox.WithTurn), and
// a full batch (BatchMaxEvents) then starts at once: it takes a connection and
// sends its reads, which the server runs once the previous commit is durable
// and visible, so a batch sees everything the batch before it wrote (an event,
// then its deletion; a replaceable event, then its newer version). A batch
// that is not full waits until no batch is in flight (see idle). At most two
// batches are in flight: one before its COMMIT, one committing or holding its
// answers (the writer lease's hold). Parsing and signature checks need no
// batch: each connection's reader does them before submit, while batches
// commit.
//
// Promises: every submitted event gets exactly one reply, and only after the
// Ingest call that carried it returned (so an OK true means committed). close
// flushes what was submitted before it and waits for every flush to reply.
type batcher struct {
	store    Store
	maxBatch int
	maxDelay time.Duration
	timeout  time.Duration
	m        *metrics
	log      *slog.Logger
	onCommit func(evs []*nostr.Event, results []IngestResult) // called after each successful Ingest

	in       chan ingestJob
	slots    chan struct{} // batches before their COMMIT
	inflight chan struct{} // batches until they replied
	freed    chan struct{} // a flush sent its COMMIT or finished: a slot may be free again
	turn     string        // the pipeline's write turn (outbox.WithTurn); "" when not pipelined

	mu      sync.RWMutex // submit holds it shared; close exclusively
	closed  bool
	stop    chan struct{}
	done    chan struct{}
	flushes sync.WaitGroup
}

type ingestJob struct {
	ev    *nostr.Event
	reply func(IngestResult)
}

func newBatcher(cfg Config, store Store, m *metrics, log *slog.Logger, onCommit func([]*nostr.Event, []IngestResult)) *batcher {
	inflight, turn := cfg.IngestConcurrency, ""
	if cfg.IngestConcurrency == 1 {
		inflight, turn = 2, pipelineName()
	}
	return &batcher{
		inflight: make(chan struct{}, inflight),
		turn:     turn,
		store:    store,
		maxBatch: cfg.BatchMaxEvents,
		maxDelay: cfg.BatchMaxDelay,
		timeout:  cfg.IngestTimeout,
		m:        m,
		log:      log,
		onCommit: onCommit,
		in:       make(chan ingestJob, 2*cfg.BatchMaxEvents),
		slots:    make(chan struct{}, cfg.IngestConcurrency),
		freed:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// submit queues ev; reply is called once with its result, from another goroutine.
// It returns false (and never calls reply) once the batcher is closed. It may wait
// while the queue is full.
func (b *batcher) submit(ev *nostr.Event, reply func(IngestResult)) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return false
	}
	b.m.ingestWaiting.Inc()
	b.in <- ingestJob{ev: ev, reply: reply}
	return true
}

// run collects and flushes batches until close; call it exactly once.
func (b *batcher) run() {
	defer close(b.done)
	var batch []ingestJob
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			timer.Stop()
			b.flush(batch)
			batch = nil
		}
	}
	for {
		select {
		case j := <-b.in:
			batch = append(batch, j)
			switch {
			case len(batch) >= b.maxBatch || b.idle():
				// Full, or a flush slot is idle: waiting would only add latency.
				// Under load the slots are busy and batches grow by themselves.
				flush()
			case len(batch) == 1:
				timer.Reset(b.maxDelay)
			}
		case <-b.freed:
			if len(batch) >= b.maxBatch || b.idle() {
				flush() // what queued up while every slot was busy
			}
		case <-timer.C:
			flush()
		case <-b.stop:
			// No submit is in progress or can start: take what is queued.
			for {
				select {
				case j := <-b.in:
					batch = append(batch, j)
					if len(batch) >= b.maxBatch {
						flush()
					}
					continue
				default:
				}
				break
			}
			flush()
			b.flushes.Wait()
			return
		}
	}
}

// idle reports whether a batch that is not full should be flushed now: a flush
// could start at once and, pipelined, no batch is in flight (a batch started
// early, while the previous one commits, would be small: it would have
// gathered only what arrived since the previous one started, and every batch
// pays a WAL flush; measured in docs/benchmarks.md). A full batch starts as soon
// as a slot is free.
func (b *batcher) idle() bool {
	if b.turn != "" {
		return len(b.inflight) == 0
	}
	return len(b.slots) < cap(b.slots) && len(b.inflight) < cap(b.inflight)
}

// flush starts an Ingest of batch as soon as a slot is free.
func (b *batcher) flush(batch []ingestJob) {
	b.inflight <- struct{}{}
	b.slots <- struct{}{}
	b.m.ingestWaiting.Sub(float64(len(batch)))
	b.flushes.Add(1)
	// sent gives the slot back: when the batch's COMMIT is sent (pipelined),
	// else when its Ingest returned.
	sent := sync.OnceFunc(func() {
		<-b.slots
		b.wake()
	})
	go func() {
		defer b.flushes.Done()
		defer func() {
			sent()
			<-b.inflight
			b.wake()
		}()
		b.ingest(batch, sent)
	}()
}

// wake tells run that a slot may be free.
func (b *batcher) wake() {
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// pipelineName is a random name for the batcher's write turn.
func pipelineName() string {
	var r [12]byte
	_, _ = rand.Read(r[:])
	return "relay-ingest-" + hex.EncodeToString(r[:])
}

func (b *batcher) ingest(batch []ingestJob, sent func()) {
	evs := make([]*nostr.Event, len(batch))
	for i, j := range batch {
		evs[i] = j.ev
	}
	// Not tied to the relay's context: a batch that started is finished even
	// during shutdown, so that its clients get their answers.
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	if b.turn != "" {
		ctx = outbox.WithTurn(ctx, b.turn, sent)
	}
	start := time.Now()
	results, err := b.callIngest(ctx, evs)
	cancel()
	b.m.ingestSeconds.Observe(time.Since(start).Seconds())
	b.m.batchSize.Observe(float64(len(batch)))
	if err == nil && len(results) != len(evs) {
		err = fmt.Errorf("store returned %d results for %d events", len(results), len(evs))
	}
	if err != nil {
		b.log.Error("ingest failed; answering the batch with an error", "events", len(evs), "err", err)
		for _, j := range batch {
			j.reply(IngestResult{OK: false, Message: reasonIngestFailed})
		}
		return
	}
	b.onCommit(evs, results) // (before the replies: a client's next REQ may follow them)
	for i, j := range batch {
		j.reply(results[i])
	}
}

// callIngest calls Store.Ingest and turns a panic into an error, so that one bad
// batch cannot take the relay down or leave its clients unanswered.
func (b *batcher) callIngest(ctx context.Context, evs []*nostr.Event) (results []IngestResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store ingest panicked: %v", p)
		}
	}()
	results, err = b.store.Ingest(ctx, evs)
	if err != nil {
		err = fmt.Errorf("ingest %d events: %w", len(evs), err)
	}
	return results, err
}

// close refuses further submits, flushes what is queued and waits for every
// flush to reply. run must be running (or have been started).
func (b *batcher) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
}
