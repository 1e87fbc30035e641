package relay

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
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
	// before Read and may fail it; eventsHook before Events; pingHook answers Ping.
	ingestHook func(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error)
	queryHook  func(ctx context.Context) error
	eventsHook func(ctx context.Context) error
	pingHook   func(ctx context.Context) error
	headHook   func(ctx context.Context) // runs before Head (the follower's start)
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

// Read implements the read contract (Reader) as the real store does: the
// events and the outbox head are read under one lock, so the snapshot holds
// exactly the rows up to the seq it reports; each event comes as the store
// serves it (ID, PubKey, CreatedAt, Kind, Tags only for addressable kinds, no
// Content or Sig) with its JSON, which holds the whole event; Take is asked
// for each event of each filter's answer before it is kept, and a refusal
// ends the read; a read of 2 to 64 filters says which filters' own answers
// held each event (From). TestFakeReadsAsTheStore holds it to the store.
func (s *fakeStore) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	s.mu.Lock()
	hook := s.queryHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return readpath.Result{}, err
		}
	}
	return s.snapshot().read(req), nil
}

// Window implements Primary: what the rows after `after` changed, in a
// snapshot of the store.
func (s *fakeStore) Window(_ context.Context, after int64, limit int) (readpath.Window, error) {
	return s.snapshot().window(after, limit), nil
}

// InSnapshot implements Primary: fn reads a copy of the store taken now.
func (s *fakeStore) InSnapshot(_ context.Context, fn func(readpath.Snapshot) error) error {
	return fn(s.snapshot())
}

// fakeSnapshot is a copy of a fakeStore's events and outbox at one seq.
type fakeSnapshot struct {
	all  []*nostr.Event // newest first, ties by lowest id
	byID map[string]*nostr.Event
	rows []outbox.Row
	seq  int64
}

func (s *fakeStore) snapshot() *fakeSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &fakeSnapshot{all: s.sorted(), byID: maps.Clone(s.events), rows: slices.Clone(s.rows), seq: s.seq}
}

// Read implements readpath.Snapshot (Seq 0: the Window's is the head).
func (sn *fakeSnapshot) Read(_ context.Context, req readpath.Request) (readpath.Result, error) {
	res := sn.read(req)
	res.Seq = 0
	return res, nil
}

// Window implements readpath.Snapshot.
func (sn *fakeSnapshot) Window(_ context.Context, after int64, limit int) (readpath.Window, error) {
	return sn.window(after, limit), nil
}

func (sn *fakeSnapshot) read(req readpath.Request) readpath.Result {
	// As the store reads: filter by filter, each filter's matches newest
	// first up to its Limit, asking Take for each before it is kept (an
	// event another filter kept already is asked for again); a refusal ends
	// the whole read. The union is then sorted, each event once.
	res := readpath.Result{Seq: sn.seq, Source: readpath.Primary}
	picked := make(map[string]uint64) // id -> the filters whose own answer held it
	served := make(map[string][]byte) // id -> its JSON
read:
	for i, f := range req.Filters {
		if f.LimitZero {
			continue
		}
		n := 0
		for _, ev := range sn.all {
			if f.Limit > 0 && n >= f.Limit {
				break
			}
			if !protocol.Match(f, ev) || !req.Viewer.MayRead(ev) {
				continue
			}
			js := eventJSON(ev)
			if req.Take != nil && !req.Take(len(js)+len(ev.ID)+len(ev.PubKey)) {
				res.Stopped = true
				break read
			}
			picked[ev.ID] |= 1 << i
			served[ev.ID] = js
			n++
		}
	}
	attribute := len(req.Filters) > 1 && len(req.Filters) <= 64
	if attribute {
		res.From = []uint64{}
	}
	for _, ev := range sn.all {
		from, ok := picked[ev.ID]
		if !ok {
			continue
		}
		out := &nostr.Event{ID: ev.ID, PubKey: ev.PubKey, CreatedAt: ev.CreatedAt, Kind: ev.Kind}
		if protocol.ClassOf(ev.Kind) == protocol.Addressable {
			out.Tags = ev.Tags
		}
		res.Events = append(res.Events, out)
		res.JSON = append(res.JSON, served[ev.ID])
		if attribute {
			res.From = append(res.From, from)
		}
	}
	return res
}

// window reads what the rows after `after` changed: every row names its
// event, an upsert row its effective key; the named events are all visible
// (the fake hides nothing).
func (sn *fakeSnapshot) window(after int64, limit int) readpath.Window {
	w := readpath.Window{Seq: sn.seq, Named: map[string]bool{}, Keys: map[string]bool{}}
	var rows []outbox.Row
	for _, r := range sn.rows {
		if r.Seq > after {
			rows = append(rows, r)
		}
	}
	if len(rows) > limit {
		w.More = true
		return w
	}
	for _, r := range rows {
		if strings.HasPrefix(r.TopicID, "GROUP:") {
			w.Groups = true
		}
		if r.Op == outbox.OpUpsert && r.EffectiveKey != "" {
			w.Keys[r.EffectiveKey] = true
		}
		if w.Named[r.EventID] {
			continue
		}
		w.Named[r.EventID] = true
		if ev := sn.byID[r.EventID]; ev != nil {
			w.Events = append(w.Events, ev)
		}
	}
	return w
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

// Notified implements Feed: every row is announced as it is appended.
func (s *fakeStore) Notified() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Head implements Feed.
func (s *fakeStore) Head(ctx context.Context) (int64, error) {
	s.mu.Lock()
	hook := s.headHook
	s.mu.Unlock()
	if hook != nil {
		hook(ctx)
	}
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

// The optional parts of Store (Deps.Store): the fake serves NIP-77 from its
// events, holds no group (every group public) and no withheld event, and
// keeps no event cache fill or NIP-77 tree (a test that wants either uses a
// Postgres store).

// errNotOnTheFake answers the parts the fake does not keep.
var errNotOnTheFake = errors.New("fakeStore: not kept by the fake (use a Postgres store)")

// SyncItems implements SyncStore: the (created_at, id) of the events matching
// f that v may read, at most max, or readpath.ErrTooManySyncItems; take is
// asked for each (readpath.ErrSyncBudget at its first refusal).
func (s *fakeStore) SyncItems(_ context.Context, f nostr.Filter, v protocol.Viewer, max int, take func(n int) bool) ([]negentropy.Item, error) {
	var items []negentropy.Item
	for _, ev := range s.sorted() {
		if !protocol.Match(f, ev) || !v.MayRead(ev) {
			continue
		}
		if len(items) == max {
			return nil, readpath.ErrTooManySyncItems
		}
		if take != nil && !take(len(ev.ID)+8) {
			return nil, readpath.ErrSyncBudget
		}
		items = append(items, negentropy.Item{CreatedAt: ev.CreatedAt, ID: ev.ID})
	}
	return items, nil
}

// SyncTreeItems implements SyncTreeStore: the fake is unscoped (it may hold
// events without a topic), so the relay keeps no NIP-77 tree on it.
func (s *fakeStore) SyncTreeItems(context.Context, func(negentropy.Candidate)) (int64, bool, error) {
	return 0, true, nil
}

// Recent implements RecentStore: the fake fills no event cache.
func (s *fakeStore) Recent(context.Context, int, func(*nostr.Event, []byte) bool) (int64, []int, error) {
	return 0, nil, errNotOnTheFake
}

// StoredKeys implements RecentStore: the fake fills no event cache.
func (s *fakeStore) StoredKeys(context.Context, func(int), func(string, []byte)) error {
	return errNotOnTheFake
}

// Committed implements RecentStore: every row the fake appended.
func (s *fakeStore) Committed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// GroupAccess implements GroupAccessStore: the fake holds no private,
// hidden or deleted group.
func (s *fakeStore) GroupAccess(context.Context, []string) (map[string]protocol.GroupRule, error) {
	return map[string]protocol.GroupRule{}, nil
}

// GroupWithheld implements WithheldStore: the fake withholds nothing.
func (s *fakeStore) GroupWithheld(context.Context, nostr.Filter, groups.WithheldReader) ([]*nostr.Event, error) {
	return nil, nil
}

// GroupState implements WithheldStore: the fake keeps no group state.
func (s *fakeStore) GroupState(context.Context, string) (*groups.State, error) {
	return nil, errNotOnTheFake
}
