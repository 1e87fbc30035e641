package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/pkg/outboxmsg"
)

// A stream consumer takes its rows from a NATS JetStream stream that the
// node's bridge fills (one message per outbox row, pkg/outboxmsg), instead of
// reading cn_relay.events_outbox. It keeps the runtime's promises with its
// offsets and effects in its own database (which has pkg/consumer's tables,
// and whatever the handler writes, but no outbox):
//
//   - Start: the active instance reads the stream from the message after its
//     offset: the stored stream position (cn_relay.consumer_stream_positions)
//     when it belongs to the stored offset, else the first message whose
//     Nats-Msg-Id is above the offset (a binary search; after an operator's
//     reset-offset). It reads with an ordered consumer (no acks: the offset in
//     the database is the only truth; acks would only save redeliveries).
//   - Commit: the outbox seq (consumer_offsets.last_seq) and the stream
//     sequence of the batch's last message commit in the transaction of the
//     handler's effects, with the fencing check.
//   - Redeliveries: a message whose stream sequence is not above the last one
//     read, or whose seq is not above the offset, is skipped, never applied
//     twice.
//   - Never skip: when the stream no longer holds the next message (retention
//     removed it, or the stream was recreated), or a delivered message is not
//     the one after the last (a hole), the consumer halts with
//     ErrRebuildNeeded (halted_reason says why): its effects must be rebuilt
//     from a source that still has every row.
//   - A message that is not an outbox row halts the consumer like a failing
//     row under PolicyHalt. Parking works as for the table (the parked row is
//     recorded with its stream position moving past it), but `cnctl dlq retry`
//     cannot re-apply a parked row here: the stream consumer does not keep
//     the events.

// ErrRebuildNeeded is wrapped (with ErrHalted) by Run's error when a stream
// consumer's next row is no longer in the stream.
var ErrRebuildNeeded = errors.New("rebuild needed")

// Message is an outbox row read from the stream, with the event it names.
type Message struct {
	outbox.Row
	// Event is the signed event as NIP-01 JSON (upsert rows; nil for deletes),
	// as published: verify it if it matters to you. An upsert row with a nil
	// Event is Removed.
	Event []byte
	// Removed: an upsert row whose event the node removed before the bridge
	// published it (a superseded version of the node's own state,
	// outboxmsg.HeaderRemoved): nothing to apply; a newer upsert row of the
	// same effective key follows.
	Removed bool
	// StreamSeq is the message's sequence in the stream.
	StreamSeq uint64
}

// StreamHandler applies the side effects of stream messages, like Handler does
// for rows: msgs are in ascending seq order, never empty, and tx is the
// transaction that advances the offset (and the stream position) when it
// returns nil.
type StreamHandler interface {
	HandleMessages(ctx context.Context, tx Tx, msgs []Message) error
}

// streamState is what a stream consumer adds to a Consumer.
type streamState struct {
	stream jetstream.Stream
	name   string
	h      StreamHandler
	// msgs are the messages of the batch being applied, by seq; set and read
	// on the lead goroutine only.
	msgs map[int64]Message
}

// Handle hands the messages of rows to the StreamHandler.
func (s *streamState) Handle(ctx context.Context, tx Tx, rows []outbox.Row) error {
	msgs := make([]Message, len(rows))
	for i, r := range rows {
		m, ok := s.msgs[r.Seq]
		if !ok {
			return fmt.Errorf("row %d was not read from the stream (a stream consumer cannot retry parked rows)", r.Seq)
		}
		msgs[i] = m
	}
	return s.h.HandleMessages(ctx, tx, msgs)
}

// AfterCommit forwards to the StreamHandler.
func (s *streamState) AfterCommit() {
	if ac, ok := s.h.(AfterCommitter); ok {
		ac.AfterCommit()
	}
}

// NewStream returns a Consumer that applies the messages of stream with
// handler (see the stream consumer's promises above). pool is the consumer's
// own database.
func NewStream(pool *pgxpool.Pool, handler StreamHandler, cfg Config, stream jetstream.Stream) (*Consumer, error) {
	if handler == nil || stream == nil {
		return nil, errors.New("consumer: nil handler or stream")
	}
	s := &streamState{stream: stream, name: stream.CachedInfo().Config.Name, h: handler}
	cfg.DisableListen = true
	c, err := New(pool, s, cfg)
	if err != nil {
		return nil, err
	}
	c.stream = s
	return c, nil
}

// queuePosition queues the upsert of the stream position of row seq (the last
// row of the batch being committed).
func (s *streamState) queuePosition(b *pgx.Batch, name string, seq int64) {
	b.Queue(`INSERT INTO cn_relay.consumer_stream_positions (consumer, stream, stream_seq, last_seq)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (consumer) DO UPDATE SET stream = excluded.stream, stream_seq = excluded.stream_seq,
			last_seq = excluded.last_seq, updated_at = now()`,
		name, s.name, int64(s.msgs[seq].StreamSeq), seq)
}

// leadStream applies the stream while this instance holds the lease; it returns
// like lead.
func (c *Consumer) leadStream(ctx context.Context, l lease) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.heartbeat(ctx, cancel, l.generation)
	last := l.lastSeq
	for {
		err := c.followStream(ctx, l.generation, &last)
		if !errors.Is(err, errOffsetMoved) {
			if ctx.Err() != nil {
				return leadEnd(ctx)
			}
			return err
		}
		stored, ok, err := offset(ctx, c.pool, c.cfg.Name, "")
		if err != nil || !ok {
			if ctx.Err() != nil {
				return leadEnd(ctx)
			}
			return fmt.Errorf("reload moved offset: %w", err)
		}
		c.cfg.Logger.Warn("offset was moved by an operator; continuing from it", "consumer", c.cfg.Name, "last_seq", stored)
		last = stored
	}
}

// followStream reads the stream from the message after *last and applies it in
// batches, moving *last.
func (c *Consumer) followStream(ctx context.Context, generation int64, last *int64) error {
	s := c.stream
	c.m.lastSeq.Set(float64(*last))
	start, err := s.startSeq(ctx, c.pool, c.cfg.Name, *last)
	if err != nil {
		return err
	}
	oc, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
	})
	if err != nil {
		return fmt.Errorf("stream %s: ordered consumer: %w", s.name, err)
	}
	it, err := oc.Messages(jetstream.PullMaxMessages(2 * c.cfg.BatchSize))
	if err != nil {
		return fmt.Errorf("stream %s: read: %w", s.name, err)
	}
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	defer it.Stop()
	in := make(chan jetstream.Msg, c.cfg.BatchSize)
	readErr := make(chan error, 1)
	go func() {
		for {
			m, err := it.Next()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case in <- m:
			case <-readCtx.Done():
				return
			}
		}
	}()

	next := start // the stream sequence expected next
	batch := make([]jetstream.Msg, 0, c.cfg.BatchSize)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return fmt.Errorf("stream %s: read: %w", s.name, err)
		case m := <-in:
			batch = append(batch, m)
		}
	fill:
		for len(batch) < c.cfg.BatchSize {
			select {
			case m := <-in:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		rows := make([]outbox.Row, 0, len(batch))
		msgs := make(map[int64]Message, len(batch))
		var pending uint64
		var newest time.Time
		prev := *last
		for _, m := range batch {
			meta, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("stream %s: message metadata: %w", s.name, err)
			}
			switch seq := meta.Sequence.Stream; {
			case seq < next:
				c.m.redelivered.Inc()
				continue
			case seq > next:
				c.m.halted.Set(1)
				return fmt.Errorf("%w: %w: stream %s delivered stream sequence %d after %d: the messages between are gone",
					ErrHalted, ErrRebuildNeeded, s.name, seq, next-1)
			}
			next++
			pending, newest = meta.NumPending, meta.Timestamp
			row, event, err := outboxmsg.Decode(m.Headers(), m.Data())
			if err != nil {
				c.m.halted.Set(1)
				return fmt.Errorf("%w: stream %s sequence %d: %w", ErrHalted, s.name, meta.Sequence.Stream, err)
			}
			if row.Seq <= prev {
				c.m.redelivered.Inc() // applied already
				continue
			}
			prev = row.Seq
			rows = append(rows, row)
			msgs[row.Seq] = Message{Row: row, Event: event, Removed: row.Op == outbox.OpUpsert && event == nil, StreamSeq: meta.Sequence.Stream}
		}
		if len(rows) == 0 {
			continue
		}
		s.msgs = msgs
		applied, err := c.apply(ctx, generation, *last, rows, nil)
		s.msgs = nil
		if err != nil {
			return err
		}
		*last = applied
		c.m.lastSeq.Set(float64(applied))
		c.m.backlog.Set(float64(pending))
		if pending == 0 {
			c.m.lagSeconds.Set(0)
		} else {
			c.m.lagSeconds.Set(max(time.Since(newest).Seconds(), 0))
		}
	}
}

// startSeq returns the stream sequence of the first message after the offset
// last, or ErrRebuildNeeded (wrapped with ErrHalted) when the stream cannot
// show that nothing between last and it is missing.
func (s *streamState) startSeq(ctx context.Context, pool *pgxpool.Pool, name string, last int64) (uint64, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s info: %w", s.name, err)
	}
	first, end := info.State.FirstSeq, info.State.LastSeq
	rebuild := func(format string, args ...any) (uint64, error) {
		return 0, fmt.Errorf("%w: %w: stream %s (messages %d..%d) at offset %d: %s", ErrHalted, ErrRebuildNeeded,
			s.name, first, end, last, fmt.Sprintf(format, args...))
	}
	var pos, posLast int64
	var stream string
	err = pool.QueryRow(ctx, `SELECT stream, stream_seq, last_seq FROM cn_relay.consumer_stream_positions WHERE consumer = $1`,
		name).Scan(&stream, &pos, &posLast)
	switch {
	case err == nil && stream == s.name && posLast == last:
		start := uint64(pos) + 1
		if start > end+1 {
			return rebuild("the stream ends before the stored position %d (was it recreated?)", pos)
		}
		if start < first {
			return rebuild("the next message (stream sequence %d) is gone (retention)", start)
		}
		return start, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("read stream position of %s: %w", name, err)
	}
	// No position for this offset: find the first message with an id above it.
	lo, hi := first, end+1 // the answer is in [lo, hi]
	if first == 0 {
		lo = 1
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		id, err := s.msgID(ctx, mid)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return rebuild("message %d is missing from the stream", mid)
			}
			return 0, err
		}
		if id > last {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == first && first > 1 {
		// Messages before the first were removed: one of them may have been
		// the next row, unless the first is last+1 itself.
		if lo > end {
			return rebuild("the stream holds no message and has removed %d", first-1)
		}
		id, err := s.msgID(ctx, lo)
		if err != nil {
			return 0, err
		}
		if id != last+1 {
			return rebuild("its first message is seq %d, and the rows between are gone (retention)", id)
		}
	}
	return lo, nil
}

// msgID returns the outbox seq (Nats-Msg-Id) of the message at stream
// sequence seq.
func (s *streamState) msgID(ctx context.Context, seq uint64) (int64, error) {
	m, err := s.stream.GetMsg(ctx, seq)
	if err != nil {
		return 0, fmt.Errorf("stream %s message %d: %w", s.name, seq, err)
	}
	id, err := strconv.ParseInt(m.Header.Get(nats.MsgIdHdr), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %w: stream %s message %d has Nats-Msg-Id %q, not an outbox seq", ErrHalted, ErrRebuildNeeded,
			s.name, seq, m.Header.Get(nats.MsgIdHdr))
	}
	return id, nil
}
