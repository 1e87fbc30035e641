package loadgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// GenerateConfig describes a workload of signed events.
type GenerateConfig struct {
	Events  int    // how many events
	Authors int    // how many author keys (at least 2: p tags point to other authors)
	Topic   string // value of every event's t tag
	Kind    int    // kind of every event
	// Group, when set, adds an h tag with this NIP-29 group id to every event.
	Group string
	// MaxAge bounds how far before Now an event's created_at may lie (default 60s).
	MaxAge time.Duration
	// Now is the reference time (default time.Now()).
	Now time.Time
}

// EventSet is a pre-generated, signed workload: Messages[i] is the ready-to-send
// ["EVENT", Events[i]] frame, so nothing is built or signed while the clock runs.
type EventSet struct {
	Authors  []string // public keys (hex)
	Events   []*nostr.Event
	Messages [][]byte
}

// IDs returns the ids of Events[from:to].
func (s *EventSet) IDs(from, to int) []string {
	ids := make([]string, 0, to-from)
	for _, ev := range s.Events[from:to] {
		ids = append(ids, ev.ID)
	}
	return ids
}

func (c GenerateConfig) validate() error {
	return firstError(atLeast("events", c.Events, 1),
		when(c.Authors < 2, "authors must be at least 2, since p tags point to other authors (got %d)", c.Authors),
		nonEmpty("topic", c.Topic), validKind(c.Kind), when(c.MaxAge < 0, "max age must not be negative (got %v)", c.MaxAge))
}

// words pad contents to their target length.
var words = strings.Fields(`relay event topic community node index query latency
	throughput bench nostr signal garden river window lantern copper meadow harbor
	thread circle pixel orbit quiet rapid silver forest ember puzzle canvas`)

// Generate makes cfg.Authors keys and cfg.Events signed events, signing on every
// CPU. Each event has a t tag with the topic, 1-3 p tags naming other authors,
// 100-300 bytes of content that is unique to this call and index (so ids
// differ), and created_at up to MaxAge before Now.
func Generate(cfg GenerateConfig) (*EventSet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 60 * time.Second
	}
	if cfg.Now.IsZero() {
		cfg.Now = time.Now()
	}
	run := fmt.Sprintf("%016x", rand.Uint64()) // makes contents unique across calls

	secrets := make([]string, cfg.Authors)
	set := &EventSet{
		Authors:  make([]string, cfg.Authors),
		Events:   make([]*nostr.Event, cfg.Events),
		Messages: make([][]byte, cfg.Events),
	}
	workers := min(runtime.GOMAXPROCS(0), max(cfg.Authors, cfg.Events))
	if err := parallel(workers, cfg.Authors, func(_ *rand.Rand, i int) error {
		secrets[i] = nostr.GeneratePrivateKey()
		pk, err := nostr.GetPublicKey(secrets[i])
		if err != nil {
			return fmt.Errorf("derive public key: %w", err)
		}
		set.Authors[i] = pk
		return nil
	}); err != nil {
		return nil, err
	}
	maxAge := int64(cfg.MaxAge / time.Second)
	now := cfg.Now.Unix()
	err := parallel(workers, cfg.Events, func(rng *rand.Rand, i int) error {
		a := rng.IntN(cfg.Authors)
		tags := nostr.Tags{{"t", cfg.Topic}}
		if cfg.Group != "" {
			tags = append(tags, nostr.Tag{"h", cfg.Group})
		}
		for _, p := range pickOthers(rng, cfg.Authors, a, 1+rng.IntN(3)) {
			tags = append(tags, nostr.Tag{"p", set.Authors[p]})
		}
		ev := &nostr.Event{
			CreatedAt: nostr.Timestamp(now - rng.Int64N(maxAge+1)),
			Kind:      cfg.Kind,
			Tags:      tags,
			Content:   content(rng, run, i, 100+rng.IntN(201)),
		}
		if err := ev.Sign(secrets[a]); err != nil {
			return fmt.Errorf("sign event: %w", err)
		}
		msg, err := json.Marshal([]any{"EVENT", ev})
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		set.Events[i], set.Messages[i] = ev, msg
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// pickOthers returns up to k distinct indexes in [0,n) other than self.
func pickOthers(rng *rand.Rand, n, self, k int) []int {
	k = min(k, n-1)
	out := make([]int, 0, k)
	for len(out) < k {
		p := rng.IntN(n)
		if p == self || contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// content is exactly size bytes of ASCII, starting with a prefix unique to run and i.
func content(rng *rand.Rand, run string, i, size int) string {
	var b strings.Builder
	b.Grow(size + 16)
	fmt.Fprintf(&b, "loadgen %s #%d:", run, i)
	for b.Len() < size {
		b.WriteByte(' ')
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()[:size]
}

// parallel calls fn(rng, i) for i in [0,n) on up to workers goroutines, each
// with its own random source, and returns the first error.
func parallel(workers, n int, fn func(rng *rand.Rand, i int) error) error {
	workers = max(1, min(workers, n))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs error
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
			for i := w; i < n; i += workers {
				if err := fn(rng, i); err != nil {
					mu.Lock()
					if errs == nil {
						errs = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errs
}
