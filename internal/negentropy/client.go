package negentropy

import (
	"fmt"
	"slices"
	"sync"

	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// Client is the initiating side of one session over a fixed set of items. It
// collects the differences as the rounds go: Have, the ids only this side
// holds, and Need, the ids only the peer holds. Its methods must not be called
// concurrently; Close must be called once the session ends, whatever the
// outcome.
type Client struct {
	neg  *lib.Negentropy
	stop chan struct{}
	wg   sync.WaitGroup

	mu         sync.Mutex
	have, need []string
	done       bool
}

// NewClient returns a client over items (in any order, without duplicates);
// frameLimit is handled as in NewServer. It fails on a bad item id.
func NewClient(items []Item, frameLimit int) (c *Client, err error) {
	frameLimit = max(frameLimit, MinFrameLimit)
	for _, it := range items {
		if err := checkItem(it); err != nil {
			return nil, err
		}
	}
	defer recoverInto(&err)
	c = &Client{neg: lib.New(newSorted(items), frameLimit), stop: make(chan struct{})}
	// The library sends differences on small buffered channels while it
	// reconciles; these goroutines collect them so that it never blocks.
	c.wg.Add(2)
	go c.collect(c.neg.Haves, &c.have)
	go c.collect(c.neg.HaveNots, &c.need)
	return c, nil
}

func (c *Client) collect(ch chan string, into *[]string) {
	defer c.wg.Done()
	for {
		select {
		case id, ok := <-ch:
			if !ok {
				return
			}
			c.mu.Lock()
			*into = append(*into, id)
			c.mu.Unlock()
		case <-c.stop:
			return
		}
	}
}

// Start returns the first message (for NEG-OPEN).
func (c *Client) Start() (msg string, err error) {
	defer recoverInto(&err)
	return c.neg.Start(), nil
}

// Reconcile takes the peer's message and returns the next one to send, or
// done when the reconciliation is complete (Result then holds every
// difference). The peer's message is checked first (Check).
func (c *Client) Reconcile(msg string) (next string, done bool, err error) {
	if err := Check(msg); err != nil {
		return "", false, err
	}
	defer recoverInto(&err)
	next, err = c.neg.Reconcile(msg)
	if err != nil {
		return "", false, fmt.Errorf("reconcile: %w", err)
	}
	if next == "" {
		// The library closed its channels: wait until every id is collected.
		c.wg.Wait()
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
		return "", true, nil
	}
	return next, false, nil
}

// Result returns the ids only this side has and those only the peer has,
// sorted, each once. They are complete once Reconcile reported done; before,
// they are what the rounds so far found.
func (c *Client) Result() (have, need []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	have = slices.Compact(slices.Sorted(slices.Values(c.have)))
	need = slices.Compact(slices.Sorted(slices.Values(c.need)))
	return have, need
}

// Close stops the collecting goroutines. It is safe to call more than once.
func (c *Client) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
}
