package relay

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/internal/store"
)

// TestFakeReadsAsTheStore: the fake store keeps the read contract as the
// Postgres store does, so that the relay's tests on the fake hold for the
// store: for the same events (notes, reactions, addressable events, DMs)
// and the same requests, Read returns the same events in the same order,
// each as the store serves it (ID, PubKey, CreatedAt, Kind, Tags for
// addressable kinds only) with the same JSON, the same From for several
// filters, and stops at the same refusal of Take; private kinds go to their
// parties only.
func TestFakeReadsAsTheStore(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())
	fake := newFakeStore()
	ctx := context.Background()
	keys := []key{newKey(t), newKey(t), newKey(t)}
	at := nostr.Now() - 10_000
	var evs []*nostr.Event
	for i := range 40 {
		k := keys[i%len(keys)]
		created := at + nostr.Timestamp(i/2) // (pairs share a second: ties by id)
		topic := []string{"go", "rust"}[i%2]
		var ev *nostr.Event
		switch i % 5 {
		case 0, 1:
			ev = k.signedAt(t, 1, created, nostr.Tags{{"t", topic}, {"e", fmt.Sprintf("%064x", i)}}, fmt.Sprintf("note %d \"quoted\"\n", i))
		case 2:
			ev = k.signedAt(t, 7, created, nostr.Tags{{"t", topic}}, "+")
		case 3:
			ev = k.signedAt(t, 30023, created, nostr.Tags{{"d", fmt.Sprint("article ", i)}, {"t", topic}}, "long form")
		case 4:
			to := keys[(i+1)%len(keys)]
			ev = k.signedAt(t, protocol.KindEncryptedDM, created, nostr.Tags{{"p", to.pk}, {"t", topic}}, "ciphertext?iv=x")
		}
		evs = append(evs, ev)
	}
	res, err := st.Ingest(ctx, evs)
	require.NoError(t, err)
	private := 0
	for i, r := range res {
		require.True(t, r.OK, "event %d (kind %d): %s", i, evs[i].Kind, r.Message)
		if protocol.IsPrivateKind(evs[i].Kind) {
			private++
		}
	}
	require.Positive(t, private)
	fake.store(evs)
	byID := map[string]*nostr.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}

	limit := func(f nostr.Filter, n int) nostr.Filter { f.Limit = n; return f }
	requests := []readpath.Request{
		{Filters: []nostr.Filter{limit(nostr.Filter{}, 500)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Kinds: []int{1}}, 5)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Authors: []string{keys[0].pk}}, 7)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Tags: nostr.TagMap{"t": {"rust"}}}, 9)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Kinds: []int{30023}}, 3)}},
		{Filters: []nostr.Filter{{Kinds: []int{1}, LimitZero: true}}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Kinds: []int{1}}, 2), limit(nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}}, 6), limit(nostr.Filter{Kinds: []int{30023}}, 9)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Kinds: []int{protocol.KindEncryptedDM}}, 50)}},
		{Filters: []nostr.Filter{limit(nostr.Filter{Kinds: []int{protocol.KindEncryptedDM}}, 50)}, Viewer: protocol.Viewer{Authed: []string{keys[1].pk}}},
		{Filters: []nostr.Filter{limit(nostr.Filter{}, 500), limit(nostr.Filter{Authors: []string{keys[2].pk}}, 4)}, Viewer: protocol.Viewer{Authed: []string{keys[2].pk}}},
	}
	for i, req := range requests {
		for _, refuseAt := range []int{0, 1, 4} { // (0: Take keeps everything)
			name := fmt.Sprintf("request %d, refusal at %d", i, refuseAt)
			take := func() func(int) bool {
				asked := 0
				return func(n int) bool {
					asked++
					require.Positive(t, n, name)
					return refuseAt == 0 || asked < refuseAt
				}
			}
			req.Take = take()
			want, err := st.Read(ctx, req)
			require.NoError(t, err, name)
			req.Take = take()
			got, err := fake.Read(ctx, req)
			require.NoError(t, err, name)
			require.Equal(t, readpath.Primary, got.Source, name)
			require.Equal(t, want.Stopped, got.Stopped, name)
			require.Equal(t, ids(want.Events), ids(got.Events), name)
			require.Len(t, got.JSON, len(got.Events), name)
			for j, ev := range got.Events {
				w := want.Events[j]
				require.Equal(t, []any{w.ID, w.PubKey, w.CreatedAt, w.Kind, w.Content, w.Sig, len(w.Tags)},
					[]any{ev.ID, ev.PubKey, ev.CreatedAt, ev.Kind, ev.Content, ev.Sig, len(ev.Tags)}, "%s: event %d as served", name, j)
				require.JSONEq(t, string(want.JSON[j]), string(got.JSON[j]), "%s: event %d's JSON", name, j)
				if protocol.IsPrivateKind(ev.Kind) {
					orig := byID[ev.ID]
					party := slices.Contains(req.Viewer.Authed, orig.PubKey) || slices.Contains(req.Viewer.Authed, orig.Tags.GetFirst([]string{"p"}).Value())
					require.True(t, party, "%s: a DM read by no party", name)
				}
			}
			require.Equal(t, want.From, got.From, name)
			if i == 8 && refuseAt == 0 {
				require.NotEmpty(t, got.Events, "a party reads its DMs")
			}
		}
	}
}

// signedAt returns an event of kind by k with tags and content, created at.
func (k key) signedAt(t *testing.T, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
	require.NoError(t, ev.Sign(k.sk))
	return ev
}

// laggingReader is a read replica of a fakeStore that stopped replaying
// when its snapshot was taken: every Read is that snapshot's (Source
// readpath.Replica).
type laggingReader struct{ sn *fakeSnapshot }

func (l laggingReader) Read(_ context.Context, req readpath.Request) (readpath.Result, error) {
	res := l.sn.read(req)
	res.Source = readpath.Replica
	return res, nil
}

func (l laggingReader) Count(_ context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error) {
	return int64(len(l.sn.read(readpath.Request{Filters: filters, Viewer: v}).Events)), nil
}

// TestHandoffOnTheFake: the fake implements the whole read contract, the
// primary's window and snapshot included, so the handoff of a lagging
// replica's answer runs without Postgres: with the fake as the primary and
// a copy of it taken before four more notes as the replica (Deps.Reads), a
// REQ gets the primary's answer (the newest Limit notes, the four the
// replica missed among them, handoffCaught); when the primary cannot be read the REQ is
// CLOSED with an error, never answered with the replica's stale page.
func TestHandoffOnTheFake(t *testing.T) {
	t.Parallel()
	fake := newFakeStore()
	k := newKey(t)
	at := nostr.Now() - 1000
	var notes []*nostr.Event
	for i := range 10 {
		notes = append(notes, k.note(t, fmt.Sprint("note ", i), func(ev *nostr.Event) { ev.CreatedAt = at + nostr.Timestamp(i) }))
	}
	fake.store(notes[:6])
	lag := laggingReader{fake.snapshot()}
	fake.store(notes[6:])
	start := func(primary Primary) *testRelay {
		cfg := testConfig()
		cfg.CacheBytes = 0
		reg := prometheus.NewRegistry()
		r, err := New(cfg, Deps{Store: primaryOf{fake, primary}, Feed: fake, Reads: lag, Registerer: reg, Gatherer: reg})
		require.NoError(t, err)
		tr := serveRelay(t, r)
		tr.store, tr.reg = fake, reg
		return tr
	}
	tr := start(fake)
	got := dial(t, tr.url).req("go", map[string]any{"#t": []string{"go"}, "limit": 8})
	require.Empty(t, got.closed)
	var want []string
	for i := 9; i >= 2; i-- {
		want = append(want, notes[i].ID)
	}
	require.Equal(t, want, got.ids, "the primary's newest 8")
	require.EqualValues(t, 4, testutil.ToFloat64(tr.m.handoffCaught), "the notes the replica missed")

	bare := start(failingPrimary{})
	got = dial(t, bare.url).req("go", map[string]any{"#t": []string{"go"}, "limit": 8})
	require.Equal(t, reasonQueryFailed, got.closed)
	require.Empty(t, got.ids)
}

// primaryOf is a fakeStore whose Primary parts (the handoff's reads) are
// another's.
type primaryOf struct {
	*fakeStore
	p Primary
}

func (s primaryOf) Window(ctx context.Context, after int64, limit int) (readpath.Window, error) {
	return s.p.Window(ctx, after, limit)
}

func (s primaryOf) InSnapshot(ctx context.Context, fn func(readpath.Snapshot) error) error {
	return s.p.InSnapshot(ctx, fn)
}

// failingPrimary is a primary that cannot be read (unreachable).
type failingPrimary struct{}

func (failingPrimary) Window(context.Context, int64, int) (readpath.Window, error) {
	return readpath.Window{}, errNotOnTheFake
}

func (failingPrimary) InSnapshot(context.Context, func(readpath.Snapshot) error) error {
	return errNotOnTheFake
}
