package bulk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/admission"
	"github.com/kukuri/communitynode/internal/protocol"
)

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
