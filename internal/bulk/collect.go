package bulk

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

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
