package relay

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// fakeStore is an in-memory Store and Feed: Ingest stores new events and appends
// one upsert outbox row per topic, then wakes the listeners, as the real store and
// its NOTIFY do. Several relays may share one fakeStore, like processes sharing a
// database.
type fakeStore struct {
	mu       sync.Mutex
	events   map[string]*nostr.Event
	rows     []outbox.Row
	seq      int64
	batches  [][]*nostr.Event // every Ingest call, for assertions
	listener []func()

	// Hooks, set before use. ingestHook replaces the default Ingest; queryHook runs
	// before Query and may fail it; eventsHook before Events; pingHook answers Ping.
	ingestHook func(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error)
	queryHook  func(ctx context.Context) error
	eventsHook func(ctx context.Context) error
	pingHook   func(ctx context.Context) error
}

func newFakeStore() *fakeStore {
	return &fakeStore{events: make(map[string]*nostr.Event)}
}

func (s *fakeStore) Ingest(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error) {
	s.mu.Lock()
	s.batches = append(s.batches, slices.Clone(evs))
	hook := s.ingestHook
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx, evs)
	}
	return s.store(evs), nil
}

// store is the default Ingest.
func (s *fakeStore) store(evs []*nostr.Event) []IngestResult {
	s.mu.Lock()
	res := make([]IngestResult, len(evs))
	for i, ev := range evs {
		if _, dup := s.events[ev.ID]; dup {
			res[i] = IngestResult{OK: true, Message: "duplicate: already have this event"}
			continue
		}
		s.events[ev.ID] = ev
		for _, topic := range protocol.Topics(ev) {
			s.seq++
			s.rows = append(s.rows, outbox.Row{Seq: s.seq, Op: outbox.OpUpsert, EventID: ev.ID, TopicID: topic,
				Kind: ev.Kind, CreatedAt: int64(ev.CreatedAt)})
		}
		res[i] = IngestResult{OK: true}
	}
	wake := slices.Clone(s.listener)
	s.mu.Unlock()
	for _, w := range wake {
		w()
	}
	return res
}

// appendRow adds a raw outbox row (a delete, say) and wakes the listeners.
func (s *fakeStore) appendRow(r outbox.Row) {
	s.mu.Lock()
	s.seq++
	r.Seq = s.seq
	s.rows = append(s.rows, r)
	wake := slices.Clone(s.listener)
	s.mu.Unlock()
	for _, w := range wake {
		w()
	}
}

// ingested returns every event passed to Ingest, in order.
func (s *fakeStore) ingested() []*nostr.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*nostr.Event
	for _, b := range s.batches {
		out = append(out, b...)
	}
	return out
}

// QuerySnapshot reads the events and the outbox head under one lock: the
// snapshot holds exactly the rows up to the seq it reports.
func (s *fakeStore) QuerySnapshot(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) ([]*nostr.Event, int64, error) {
	s.mu.Lock()
	hook := s.queryHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.sorted()
	picked := make(map[string]*nostr.Event)
	for _, f := range filters {
		if f.LimitZero {
			continue
		}
		n := 0
		for _, ev := range all {
			if f.Limit > 0 && n >= f.Limit {
				break
			}
			if protocol.Match(f, ev) && v.MayRead(ev) {
				picked[ev.ID] = ev
				n++
			}
		}
	}
	out := make([]*nostr.Event, 0, len(picked))
	for _, ev := range all {
		if picked[ev.ID] != nil {
			out = append(out, ev)
		}
	}
	return out, s.seq, nil
}

// sorted returns the stored events newest first, ties by lowest id.
func (s *fakeStore) sorted() []*nostr.Event {
	all := make([]*nostr.Event, 0, len(s.events))
	for _, ev := range s.events {
		all = append(all, ev)
	}
	slices.SortFunc(all, func(a, b *nostr.Event) int {
		if c := cmp.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return all
}

func (s *fakeStore) Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, ev := range s.events {
		for _, f := range filters {
			if protocol.Match(f, ev) && v.MayRead(ev) {
				n++
				break
			}
		}
	}
	return n, nil
}

func (s *fakeStore) Events(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	s.mu.Lock()
	hook := s.eventsHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*nostr.Event
	for _, id := range ids {
		if ev := s.events[id]; ev != nil {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Ping answers nil, or what pingHook says.
func (s *fakeStore) Ping(ctx context.Context) error {
	s.mu.Lock()
	hook := s.pingHook
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx)
	}
	return nil
}

// Head implements Feed.
func (s *fakeStore) Head(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// ReadAfter implements Feed.
func (s *fakeStore) ReadAfter(_ context.Context, after int64, limit int, buf []outbox.Row) ([]outbox.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := buf[:0]
	for _, r := range s.rows {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// Listen implements Feed.
func (s *fakeStore) Listen(ctx context.Context, wake func()) {
	s.mu.Lock()
	s.listener = append(s.listener, wake)
	s.mu.Unlock()
	wake()
	<-ctx.Done()
}
