package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/pkg/backoff"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/pkg/outboxmsg"
)

// ConsumerName is the bridge's consumer in cn_relay.consumer_offsets.
const ConsumerName = "bridge-v1"

// Defaults (the node's flags name them in internal/node/defaults.go).
const (
	DefaultStream          = "CN_EVENTS"
	DefaultSubjectPrefix   = "cn.events"
	DefaultDuplicateWindow = 2 * time.Minute
	// DefaultBatchSize is the rows per consumer transaction, all published
	// pipelined before the batch waits for their acknowledgements (measured in
	// BenchmarkBridge).
	DefaultBatchSize = 2000
)

// MinServerVersion is the oldest nats-server the bridge accepts. The bridge is
// tested against 2.15; the 2.9 line (Debian's 2.9.10) is end of life and is
// refused rather than trusted with the chain.
const MinServerVersion = "2.10.0"

// errCodeWrongLastMsgID is the server's rejection of a publish whose
// Nats-Expected-Last-Msg-Id is not the stream's last message id.
const errCodeWrongLastMsgID jetstream.ErrorCode = 10070

// errCodeStreamMsgTooLarge is the server's rejection of a message larger than
// the stream's max_msg_size.
const errCodeStreamMsgTooLarge jetstream.ErrorCode = 10054

// ErrTooLarge means a row's message (headers and event JSON) is larger than the
// NATS server's max_payload or the stream's max_msg_size: no retry can publish
// it, so the bridge halts on it (see the package's promises on poison rows).
var ErrTooLarge = errors.New("message too large for the NATS server")

// ErrChainBroken means the stream ends before rows the bridge's offset counts
// as published: it will not publish past the hole.
var ErrChainBroken = errors.New("chain broken")

// Config says where the bridge publishes.
type Config struct {
	Stream          string        // stream name; DefaultStream
	SubjectPrefix   string        // subjects are <prefix>.<topic token>; DefaultSubjectPrefix
	DuplicateWindow time.Duration // of a stream the bridge creates; DefaultDuplicateWindow
	RetryBase       time.Duration // first delay after a failed publish; 50ms
	RetryMax        time.Duration // longest delay between publish attempts; 5s
	Logger          *slog.Logger
	Registerer      prometheus.Registerer // may be nil
}

func (c *Config) setDefaults() {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.RetryBase == 0 {
		c.RetryBase = 50 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Bridge is the consumer.Handler that publishes outbox rows. Create it with
// New; a consumer.Consumer named ConsumerName runs it under PolicyHalt (parking
// a row would leave a hole in the stream).
type Bridge struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	cfg    Config
	m      *metrics

	// last is the stream's last message id as of the last successful batch;
	// valid only while known. Handle runs on one goroutine at a time.
	last  int64
	known bool
}

var _ consumer.Handler = (*Bridge)(nil)

// New checks the server (version, JetStream), creates the stream if it does not
// exist (an existing one is used as it is, after checking that it takes the
// bridge's subjects) and returns the handler. nc should reconnect forever.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Bridge, error) {
	cfg.setDefaults()
	if err := CheckServerVersion(nc.ConnectedServerVersion()); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*consumerBatchMax),
		jetstream.WithPublishAsyncTimeout(ackTimeout))
	if err != nil {
		return nil, err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("nats server %s at %s: JetStream unavailable: %w", nc.ConnectedServerVersion(), nc.ConnectedUrlRedacted(), err)
	}
	subjects := cfg.SubjectPrefix + ".>"
	stream, err := js.Stream(ctx, cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		stream, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        cfg.Stream,
			Description: "community node outbox (bridge-v1): one message per outbox row, Nats-Msg-Id = seq",
			Subjects:    []string{subjects},
			Storage:     jetstream.FileStorage,
			Duplicates:  cfg.DuplicateWindow,
		})
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", cfg.Stream, err)
		}
	case err != nil:
		return nil, fmt.Errorf("stream %s: %w", cfg.Stream, err)
	default:
		if subs := stream.CachedInfo().Config.Subjects; len(subs) != 1 || subs[0] != subjects {
			return nil, fmt.Errorf("stream %s takes subjects %v, want exactly [%s]", cfg.Stream, subs, subjects)
		}
	}
	return &Bridge{nc: nc, js: js, stream: stream, cfg: cfg, m: newMetrics(cfg.Registerer)}, nil
}

// ackTimeout is how long a publish waits for its acknowledgement before the
// batch is retried (a reconnect fails the pending ones at once).
const ackTimeout = 10 * time.Second

// consumerBatchMax bounds the publishes one batch has in flight (the consumer's
// batch size is at most 10,000 on the command line).
const consumerBatchMax = 10_000

// CheckServerVersion fails with one line when version is older than
// MinServerVersion or unreadable.
func CheckServerVersion(version string) error {
	have, ok := parseVersion(version)
	want, _ := parseVersion(MinServerVersion)
	if !ok {
		return fmt.Errorf("nats server version %q unreadable; the bridge needs nats-server >= %s", version, MinServerVersion)
	}
	for i := range have {
		if have[i] != want[i] {
			if have[i] < want[i] {
				return fmt.Errorf("nats server %s is too old: the bridge needs nats-server >= %s with JetStream", version, MinServerVersion)
			}
			return nil
		}
	}
	return nil
}

func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// Ping reports whether the NATS connection is up (for /healthz).
func (b *Bridge) Ping(context.Context) error {
	if s := b.nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("nats %s", s)
	}
	return nil
}

// Handle publishes rows (see the package's promises) and returns once the server
// acknowledged every one of them, so that the consumer commits the offset only
// past published rows. Publish failures are retried here until ctx ends.
func (b *Bridge) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	var payloads map[string][]byte
	for attempt := 0; ; attempt++ {
		err := b.attempt(ctx, tx, rows, &payloads)
		if err == nil {
			b.m.chainBroken.Set(0)
			return nil
		}
		b.known = false
		if errors.Is(err, ErrChainBroken) {
			b.m.chainBroken.Set(1)
			return err
		}
		if errors.Is(err, ErrTooLarge) {
			return err // no retry publishes it: the consumer's attempts, then the halt
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var dbErr dbError
		if errors.As(err, &dbErr) {
			return err // the consumer retries database failures
		}
		b.m.publishErrors.Inc()
		b.cfg.Logger.Warn("publish failed; retrying", "stream", b.cfg.Stream, "first_seq", rows[0].Seq, "err", err)
		if !backoff.Sleep(ctx, backoff.Jittered(b.cfg.RetryBase, b.cfg.RetryMax, attempt)) {
			return ctx.Err()
		}
	}
}

// dbError is a failure to read Postgres inside Handle.
type dbError struct{ error }

func (e dbError) Unwrap() error { return e.error }

func (b *Bridge) attempt(ctx context.Context, tx consumer.Tx, rows []outbox.Row, payloads *map[string][]byte) error {
	if !b.known {
		last, err := b.streamLast(ctx)
		if err != nil {
			return err
		}
		offset, err := consumer.Offset(ctx, tx, ConsumerName)
		if err != nil {
			return dbError{err}
		}
		if last > 0 && last < offset {
			return fmt.Errorf("%w: stream %s ends at seq %d but %s's offset is %d: rows up to %d are missing from the stream (to republish them: cnctl reset-offset --consumer %s --to-seq %d --execute)",
				ErrChainBroken, b.cfg.Stream, last, ConsumerName, offset, offset, ConsumerName, last)
		}
		b.last, b.known = last, true
		b.m.lastPublished.Set(float64(last))
	}
	i := 0
	for i < len(rows) && rows[i].Seq <= b.last {
		i++
	}
	if i > 0 {
		b.m.skipped.Add(float64(i))
	}
	todo := rows[i:]
	if len(todo) == 0 {
		return nil
	}
	if *payloads == nil {
		p, err := loadPayloads(ctx, tx, todo)
		if err != nil {
			return dbError{err}
		}
		*payloads = p
	}
	return b.publish(ctx, todo, *payloads)
}

// streamLast returns the id (seq) of the stream's last message, 0 for a stream
// that never held one.
func (b *Bridge) streamLast(ctx context.Context) (int64, error) {
	info, err := b.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s info: %w", b.cfg.Stream, err)
	}
	if info.State.LastSeq == 0 {
		return 0, nil
	}
	msg, err := b.stream.GetMsg(ctx, info.State.LastSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, fmt.Errorf("%w: stream %s's last message (stream seq %d) is gone, so the last published row is unknown; keep the last message (no max-age or max-msgs that removes it)",
			ErrChainBroken, b.cfg.Stream, info.State.LastSeq)
	}
	if err != nil {
		return 0, fmt.Errorf("stream %s last message: %w", b.cfg.Stream, err)
	}
	id := msg.Header.Get(jetstream.MsgIDHeader)
	last, perr := strconv.ParseInt(id, 10, 64)
	if perr != nil || last <= 0 {
		return 0, fmt.Errorf("%w: stream %s's last message has Nats-Msg-Id %q, not an outbox seq: another writer uses the stream", ErrChainBroken, b.cfg.Stream, id)
	}
	return last, nil
}

// loadPayloads returns the NIP-01 JSON of the events of the upsert rows, by id.
// An upsert row with an effective key whose event is not in cn_relay.events
// is a superseded version of the node's own state that the store removed
// (events are never deleted otherwise): it has no payload, and publish marks
// its message removed (outboxmsg.HeaderRemoved). A missing event of any other
// upsert row is an error (the bridge halts on it).
func loadPayloads(ctx context.Context, tx consumer.Tx, rows []outbox.Row) (map[string][]byte, error) {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.Op == outbox.OpUpsert {
			ids = append(ids, r.EventID)
		}
	}
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	res, err := tx.Query(ctx, `SELECT id, json_build_object('id', id, 'pubkey', pubkey, 'created_at', created_at,
		'kind', kind, 'tags', tags, 'content', content, 'sig', sig)::text
		FROM cn_relay.events WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	defer res.Close()
	for res.Next() {
		var id string
		var js []byte
		if err := res.Scan(&id, &js); err != nil {
			return nil, fmt.Errorf("load events: %w", err)
		}
		out[id] = js
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	for _, r := range rows {
		if _, ok := out[r.EventID]; r.Op == outbox.OpUpsert && !ok && r.EffectiveKey == "" {
			return nil, fmt.Errorf("outbox row %d: event %s is not in cn_relay.events (only a superseded replaceable or addressable version is ever removed)", r.Seq, r.EventID)
		}
	}
	return out, nil
}

// publish sends rows pipelined, each chained to the one before, then waits for
// every acknowledgement. On success b.last is the last row's seq.
func (b *Bridge) publish(ctx context.Context, rows []outbox.Row, payloads map[string][]byte) error {
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, len(rows))
	prev := b.last
	var sendErr error
	for _, r := range rows {
		id := strconv.FormatInt(r.Seq, 10)
		msg := outboxmsg.Encode(b.cfg.SubjectPrefix+"."+TopicToken(r.TopicID), r, payloads[r.EventID])
		chain := jetstream.WithExpectLastMsgID(strconv.FormatInt(prev, 10))
		if prev == 0 {
			chain = jetstream.WithExpectLastSequence(0)
		}
		f, err := b.js.PublishMsgAsync(msg, jetstream.WithMsgID(id), chain)
		if errors.Is(err, nats.ErrMaxPayload) {
			b.m.tooLarge.Set(float64(r.Seq))
			sendErr = fmt.Errorf("%w: seq %d (event %s): its message (%d bytes of event JSON, plus headers) exceeds the server's max_payload of %d bytes; raise max_payload in the nats-server configuration and restart the bridge (the bridge halts rather than skip the row, which would leave a hole in the stream)",
				ErrTooLarge, r.Seq, r.EventID, len(msg.Data), b.nc.MaxPayload())
			break
		}
		if err != nil {
			sendErr = fmt.Errorf("publish seq %d: %w", r.Seq, err)
			break
		}
		futures = append(futures, f)
		prev = r.Seq
	}
	// Wait for every future sent, even after a failure: their outcome is known
	// before the next attempt reads the stream's last id again.
	var ackErr error
	acked := 0
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				b.m.duplicates.Inc()
			}
			acked++
		case err := <-f.Err():
			var apiErr *jetstream.APIError
			if ackErr == nil && errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStreamMsgTooLarge {
				b.m.tooLarge.Set(float64(rows[i].Seq))
				ackErr = fmt.Errorf("%w: seq %d (event %s): the stream %s refuses it (%v); raise the stream's max_msg_size and restart the bridge (the bridge halts rather than skip the row, which would leave a hole in the stream)",
					ErrTooLarge, rows[i].Seq, rows[i].EventID, b.cfg.Stream, err)
			}
			if ackErr == nil {
				ackErr = fmt.Errorf("publish seq %d: %w", rows[i].Seq, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b.m.published.Add(float64(acked))
	if err := errors.Join(ackErr, sendErr); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeWrongLastMsgID {
			b.m.chainRejects.Inc()
		}
		return err
	}
	b.last = prev
	b.m.tooLarge.Set(0)
	b.m.lastPublished.Set(float64(prev))
	b.m.publishSeconds.Observe(time.Since(start).Seconds())
	return nil
}
