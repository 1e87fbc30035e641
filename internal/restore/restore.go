// Package restore checks a node's database after it was restored from a
// backup (or after a failover to a standby that was behind) against what
// lives outside it, and repairs the one thing that must be repaired before
// the relay takes events again: the outbox sequence.
//
// Why. A point-in-time restore brings the outbox, its sequence and every
// consumer offset kept in the same database back to one consistent moment:
// they agree with each other. What lives elsewhere does not go back: the
// bridge's NATS JetStream stream holds one message per outbox row published
// before the failure (Nats-Msg-Id = seq), and a consumer in another database
// (a remote indexer following that stream) has applied them. Both can be
// ahead of the restored outbox head. If the relay then draws seq values
// again from the restored sequence, it hands out seqs the stream already
// holds for other events: the bridge, which takes the stream as the truth for
// what was published, skips them (they never reach the stream or a remote
// consumer), and a remote consumer at offset N skips every new row up to N.
//
// Promise: after Advance(ctx, pool, r.Floor) the next seq the outbox draws is
// above every seq that the checked stream, the database's consumers and the
// operator's floor have seen, so no seq is used twice. Seq values may jump
// (the outbox promises order, never gap-free seqs), so the jump costs nothing.
// The rows lost with the restore stay lost to this database: the stream
// still holds the upserts' signed events (see Report.StreamAhead), which the
// operator can re-publish.
package restore

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

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// Sequence is the outbox's sequence (pkg/outbox's schema).
const Sequence = "cn_relay.events_outbox_seq_seq"

// Ahead is a consumer whose offset is above the outbox head.
type Ahead struct {
	Consumer string `json:"consumer"`
	LastSeq  int64  `json:"last_seq"`
}

// Report is what Check found.
type Report struct {
	Head int64 `json:"head_seq"` // the outbox head
	// Next is the seq the outbox sequence hands out next.
	Next int64 `json:"next_seq"`
	// Consumers are the database's consumers whose offsets are above Head.
	Consumers []Ahead `json:"consumers_ahead,omitempty"`
	// Stream is the bridge stream checked ("" when none was), StreamLast the
	// Nats-Msg-Id of its last message (0: empty), StreamAhead how many of its
	// messages are above Head (rows this database no longer has).
	Stream      string `json:"stream,omitempty"`
	StreamLast  int64  `json:"stream_last_seq,omitempty"`
	StreamAhead int64  `json:"stream_messages_ahead,omitempty"`
	// AtLeast is the operator's floor (the highest offset of a consumer in
	// another database), 0 when none was given.
	AtLeast int64 `json:"at_least,omitempty"`
	// Floor is the highest seq anything has seen: Head, the consumers'
	// offsets, StreamLast and AtLeast.
	Floor int64 `json:"floor_seq"`
}

// NeedsRepair reports whether the sequence would hand out a seq at or
// below Floor.
func (r Report) NeedsRepair() bool { return r.Next <= r.Floor }

// Check reads the outbox head, the sequence and the consumers' offsets, and,
// when stream is not nil, the stream's last message; atLeast is a floor the
// operator knows of (0: none).
func Check(ctx context.Context, pool *pgxpool.Pool, stream jetstream.Stream, atLeast int64) (Report, error) {
	var r Report
	st, err := consumer.ReadStatus(ctx, pool)
	if err != nil {
		return r, err
	}
	r.Head = st.HeadSeq
	if r.Next, err = nextSeq(ctx, pool); err != nil {
		return r, err
	}
	r.Floor = r.Head
	for _, c := range st.Consumers {
		if c.LastSeq > r.Head {
			r.Consumers = append(r.Consumers, Ahead{Consumer: c.Consumer, LastSeq: c.LastSeq})
			r.Floor = max(r.Floor, c.LastSeq)
		}
	}
	if stream != nil {
		info, err := stream.Info(ctx)
		if err != nil {
			return r, fmt.Errorf("read stream: %w", err)
		}
		r.Stream = info.Config.Name
		if r.StreamLast, r.StreamAhead, err = streamAhead(ctx, stream, info.State, r.Head); err != nil {
			return r, err
		}
		r.Floor = max(r.Floor, r.StreamLast)
	}
	r.AtLeast = atLeast
	r.Floor = max(r.Floor, atLeast)
	return r, nil
}

// streamAhead returns the last message's id and how many messages have an id
// above head (walking back from the last one).
func streamAhead(ctx context.Context, stream jetstream.Stream, state jetstream.StreamState, head int64) (last, ahead int64, err error) {
	for s := state.LastSeq; s >= state.FirstSeq && s > 0; s-- {
		msg, err := stream.GetMsg(ctx, s)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted from the stream
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read stream message %d: %w", s, err)
		}
		id, err := strconv.ParseInt(msg.Header.Get(jetstream.MsgIDHeader), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("stream message %d has Nats-Msg-Id %q, not an outbox seq: is this the bridge's stream?", s, msg.Header.Get(jetstream.MsgIDHeader))
		}
		if last == 0 {
			last = id
		}
		if id <= head {
			break
		}
		ahead++
	}
	return last, ahead, nil
}

// nextSeq is the value the outbox sequence returns next.
func nextSeq(ctx context.Context, q outbox.Querier) (int64, error) {
	var last int64
	var called bool
	if err := q.QueryRow(ctx, "SELECT last_value, is_called FROM "+Sequence).Scan(&last, &called); err != nil {
		return 0, fmt.Errorf("read the outbox sequence: %w", err)
	}
	if called {
		last++
	}
	return last, nil
}

// Advance makes the outbox sequence hand out seqs above floor, under the
// outbox lock (an append running now finishes first; the ones after it draw
// from the advanced sequence), then creates the outbox partitions ahead of it
// as writers do. It never moves the sequence back. It returns the next seq
// before and after.
func Advance(ctx context.Context, pool *pgxpool.Pool, floor int64) (before, after int64, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", outbox.LockKey); err != nil {
			return err
		}
		if before, err = nextSeq(ctx, tx); err != nil {
			return err
		}
		after = before
		if before > floor {
			return nil
		}
		if _, err := tx.Exec(ctx, "SELECT setval($1, $2, true)", Sequence, floor); err != nil {
			return fmt.Errorf("advance the outbox sequence: %w", err)
		}
		after = floor + 1
		return nil
	})
	if err != nil || after == before {
		return before, after, err
	}
	// Partitions ahead of the new value, as writers keep them.
	if _, err := outbox.EnsurePartitions(ctx, pool, outbox.DefaultPartitionsAhead); err != nil {
		return before, after, fmt.Errorf("outbox partitions after the advance: %w", err)
	}
	return before, after, nil
}

// OpenStream connects to the NATS server at url (failing within 10 s if it
// does not answer) and returns the stream name and a function that closes the
// connection.
func OpenStream(ctx context.Context, url, name string) (jetstream.Stream, func(), error) {
	nc, err := nats.Connect(url, nats.Name("cnctl"), nats.Timeout(10*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, name)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return stream, nc.Close, nil
}
