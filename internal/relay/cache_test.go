package relay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/eventcache"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// cacheWorld is a Postgres store with a random history, and its keys.
type cacheWorld struct {
	t    *testing.T
	rng  *rand.Rand
	db   *pgtest.DB
	st   *store.Store
	w    *outbox.Writer
	keys []key
	evs  []*nostr.Event // every event ingested (accepted or not)
	base int64
	// feeds: half the filters are an app's author feeds (authors among the
	// first feeds keys, perhaps kinds, a limit), which author ranges serve.
	feeds int
}

func newCacheWorld(t *testing.T, seed uint64) *cacheWorld {
	db := pgtest.New(t)
	w := startWriter(t, db)
	cw := &cacheWorld{t: t, rng: rand.New(rand.NewPCG(seed, 7)), db: db, w: w, st: store.New(db.Pool, w, testConfig().Limits.TopicRules),
		base: time.Now().Unix() - 1000}
	for range 6 {
		cw.keys = append(cw.keys, newKey(t))
	}
	return cw
}

var cacheTopics = []string{"Go", "go", "nostr", "#Nostr", "cats", ""}

// randomEvent makes one event of the kinds the cache must treat alike with
// the database: notes with t/p/e tags, replaceable and addressable versions,
// reactions, private kinds, NIP-09 deletions of earlier events, with
// created_at in a narrow window (many ties, arrivals out of order).
func (cw *cacheWorld) randomEvent() *nostr.Event {
	r := cw.rng
	k := cw.keys[r.IntN(len(cw.keys))]
	ev := &nostr.Event{PubKey: k.pk, CreatedAt: nostr.Timestamp(cw.base + r.Int64N(300)), Content: "c" + strconv.Itoa(r.IntN(1000))}
	other := func() string { return cw.keys[r.IntN(len(cw.keys))].pk }
	earlier := func() *nostr.Event {
		if len(cw.evs) == 0 {
			return nil
		}
		return cw.evs[r.IntN(len(cw.evs))]
	}
	switch n := r.IntN(20); {
	case n < 9:
		ev.Kind = 1
		for range r.IntN(3) {
			ev.Tags = append(ev.Tags, nostr.Tag{"t", cacheTopics[r.IntN(len(cacheTopics))]})
		}
		if r.IntN(3) == 0 {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", other()})
		}
		if e := earlier(); e != nil && r.IntN(3) == 0 {
			ev.Tags = append(ev.Tags, nostr.Tag{"e", e.ID})
		}
	case n < 11:
		ev.Kind = 0
	case n < 13:
		ev.Kind = 30023
		ev.Tags = nostr.Tags{{"d", []string{"a", "b", ""}[r.IntN(3)]}, {"t", cacheTopics[r.IntN(len(cacheTopics))]}}
	case n < 15:
		ev.Kind = 7
		ev.Content = "+"
		if e := earlier(); e != nil {
			ev.Tags = nostr.Tags{{"e", e.ID}, {"p", e.PubKey}}
		}
	case n < 17:
		ev.Kind = []int{protocol.KindEncryptedDM, protocol.KindGiftWrap}[r.IntN(2)]
		ev.Tags = nostr.Tags{{"p", other()}}
	default:
		ev.Kind = 5
		for range 1 + r.IntN(3) {
			if e := earlier(); e != nil {
				ev.Tags = append(ev.Tags, nostr.Tag{"e", e.ID})
				if protocol.EffectiveKey(e) != "" && r.IntN(2) == 0 {
					d, _ := protocol.DTag(e)
					ev.Tags = append(ev.Tags, nostr.Tag{"a", fmt.Sprintf("%d:%s:%s", e.Kind, e.PubKey, d)})
				}
			}
		}
		ev.PubKey = k.pk
	}
	require.NoError(cw.t, ev.Sign(k.sk))
	return ev
}

// ingest stores n random events in batches of up to 20.
func (cw *cacheWorld) ingest(n int) {
	for n > 0 {
		batch := make([]*nostr.Event, 0, 20)
		for range min(n, 1+cw.rng.IntN(20)) {
			batch = append(batch, cw.randomEvent())
		}
		n -= len(batch)
		_, err := cw.st.Ingest(context.Background(), batch)
		require.NoError(cw.t, err)
		cw.evs = append(cw.evs, batch...)
	}
}

// moderate hides and unhides random earlier events.
func (cw *cacheWorld) moderate(n int) {
	ctx := context.Background()
	var hide, unhide []string
	for range n {
		e := cw.evs[cw.rng.IntN(len(cw.evs))]
		if cw.rng.IntN(2) == 0 {
			hide = append(hide, e.ID)
		} else {
			unhide = append(unhide, e.ID)
		}
	}
	tx, err := cw.db.Pool.Begin(ctx)
	require.NoError(cw.t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	p, err := cw.st.Publisher().ModerateTx(ctx, tx, hide, unhide)
	require.NoError(cw.t, err)
	require.NoError(cw.t, tx.Commit(ctx))
	if p.Range.Count > 0 {
		cw.w.Notify(p.Range.Last)
	}
}

// randomFilter is a validated filter of the shapes clients send.
func (cw *cacheWorld) randomFilter() nostr.Filter {
	r := cw.rng
	var f nostr.Filter
	if cw.feeds > 0 && r.IntN(2) == 0 {
		for range 1 + r.IntN(2) {
			f.Authors = append(f.Authors, cw.keys[r.IntN(cw.feeds)].pk)
		}
		f.Kinds = [][]int{nil, {1}, {0}, {1, 7}}[r.IntN(4)]
		f.Limit = []int{1, 5, 20, 100}[r.IntN(4)]
		return f
	}
	pick := func(n int) []string {
		var out []string
		for range n {
			out = append(out, cw.keys[r.IntN(len(cw.keys))].pk)
		}
		return out
	}
	switch r.IntN(8) {
	case 0:
		for range 1 + r.IntN(3) {
			f.IDs = append(f.IDs, cw.evs[r.IntN(len(cw.evs))].ID)
		}
		if r.IntN(4) == 0 {
			f.IDs = append(f.IDs, nostr.GeneratePrivateKey()) // (never stored)
		}
	case 1:
		f.Authors = pick(1 + r.IntN(3))
	case 2:
		f.Tags = nostr.TagMap{"t": {protocol.NormalizeTopic(cacheTopics[r.IntN(4)])}}
	case 3:
		f.Tags = nostr.TagMap{"p": pick(1 + r.IntN(2))}
	case 4:
		f.Tags = nostr.TagMap{"e": {cw.evs[r.IntN(len(cw.evs))].ID}}
	case 5:
		f.Kinds = []int{[]int{0, 1, 7, 30023, 5}[r.IntN(5)]}
	case 6:
		f.Authors = pick(2)
		f.Tags = nostr.TagMap{"t": {"go"}}
	case 7: // what was never stored here (the seen set's proofs)
		never := nostr.GeneratePrivateKey()
		switch r.IntN(4) {
		case 0:
			f.IDs = []string{never}
		case 1:
			f.Authors = []string{never}
		case 2:
			f.Tags = nostr.TagMap{"e": {never}}
		case 3:
			f.Tags = nostr.TagMap{"p": {never, cw.keys[r.IntN(len(cw.keys))].pk}} // (one stored)
		}
	}
	if r.IntN(2) == 0 { // (as apps do: a filter without kinds could match a topic-less deletion)
		f.Kinds = append(f.Kinds, []int{1, 7, 30023, 0}[r.IntN(4)])
	}
	if r.IntN(4) == 0 {
		since := nostr.Timestamp(cw.base + r.Int64N(300))
		f.Since = &since
	}
	if r.IntN(5) == 0 {
		until := nostr.Timestamp(cw.base + r.Int64N(300))
		f.Until = &until
	}
	f.Limit = []int{1, 5, 20, 100, 500}[r.IntN(5)]
	return f
}

// cacheRelay is a relay on cw's store whose follower (and so cache) runs; its
// topic rules are the store's (testConfig's): a topic required, kind 5
// exempt.
func (cw *cacheWorld) cacheRelay(cacheBytes int) *Relay {
	cfg := testConfig()
	cfg.CacheBytes = cacheBytes
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: pgStore{cw.st}, Feed: NewPGFeed(cw.db.Pool, nil), Registerer: prometheus.NewRegistry()}))
	require.NoError(cw.t, err)
	require.NotNil(cw.t, cacheOf(r))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.follower.run(ctx) }()
	cw.t.Cleanup(func() { cancel(); <-done })
	return r
}

// caughtUp waits until r's cache has applied the outbox head.
func (cw *cacheWorld) caughtUp(r *Relay) {
	head, err := outbox.Head(context.Background(), cw.db.Pool)
	require.NoError(cw.t, err)
	require.True(cw.t, cacheOf(r).WaitFor(head, waitTimeout, nil), "the cache did not reach seq %d: %+v", head, cacheOf(r).Stats())
	require.Eventually(cw.t, func() bool { return cacheOf(r).SeenStats().Ready }, waitTimeout, time.Millisecond, "the seen set was not built")
}

// compare checks n random REQs (one to three filters, readers anonymous or
// authenticated) answered by the cache against the database, and returns how
// many the cache answered.
func (cw *cacheWorld) compare(r *Relay, n int) (hits int) {
	t := cw.t
	for i := range n {
		filters := []nostr.Filter{cw.randomFilter()}
		for cw.rng.IntN(4) == 0 && len(filters) < 3 {
			filters = append(filters, cw.randomFilter())
		}
		var v protocol.Viewer
		if cw.rng.IntN(4) == 0 {
			v.Authed = []string{cw.keys[cw.rng.IntN(len(cw.keys))].pk}
		}
		got, gotSeq, _, ok := cacheOf(r).Query(filters, v, time.Now().Unix(), nil)
		if !ok {
			cw.learn(r, filters, v)
			continue
		}
		hits++
		want, wantSeq, err := cw.st.QuerySnapshot(context.Background(), filters, v)
		require.NoError(t, err)
		require.Equal(t, wantSeq, gotSeq, "REQ %d: seq", i)
		wantIDs := make([]string, len(want))
		for j, ev := range want {
			wantIDs[j] = ev.ID
		}
		gotIDs := make([]string, len(got))
		for j, h := range got {
			gotIDs[j] = h.Event.ID
		}
		require.Equal(t, wantIDs, gotIDs, "REQ %d: %v as %v", i, filters, v.Authed)
		for j, h := range got {
			require.JSONEq(t, string(eventJSON(want[j])), string(h.JSON), "REQ %d: event %d's JSON", i, j)
		}
	}
	return hits
}

// learn does what the relay does with a REQ the cache missed: the
// database's answer, read with its JSON (Read), is offered to the cache's
// author ranges (offerLearn, learn). Sometimes the world changes between the
// read and the offer, so that the cache has applied rows after the answer's
// seq, some of which touch it.
func (cw *cacheWorld) learn(r *Relay, filters []nostr.Filter, v protocol.Viewer) {
	ctx := context.Background()
	if len(filters) != 1 || len(v.Authed) > 0 || !eventcache.Learnable(filters[0]) {
		return
	}
	res, err := cw.st.Read(ctx, readpath.Request{Filters: filters, Viewer: v})
	require.NoError(cw.t, err)
	sv := &servedJSON{}
	sv.add(res)
	evs, seq := res.Events, res.Seq
	if cw.rng.IntN(3) == 0 {
		cw.ingest(1 + cw.rng.IntN(10))
		cw.moderate(1 + cw.rng.IntN(3))
		cw.caughtUp(r)
	}
	s := &subscription{filters: filters}
	r.offerLearn(s, evs, sv, seq)
	select {
	case item := <-r.learns:
		r.learn(ctx, item)
	default:
		cw.t.Fatalf("a learnable answer was not offered: %v", filters)
	}
}

// TestCacheAnswersAsTheDatabase: whatever the history (notes, replaceable
// and addressable versions, NIP-09 deletions, private kinds, hiding and
// unhiding), every REQ the event cache answers gets exactly the database's
// answer (ids, order, JSON) and seq, for a cache that holds everything and
// one a tenth of the size that has to drop events and prove completeness;
// filled from the database at start and kept by the follower after.
func TestCacheAnswersAsTheDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		bytes   int
		minHits int
	}{
		{"unbounded", 64 << 20, 350},
		{"bounded", 200 * 1500, 120},
		// Many authors with a few events each above the floor: author
		// filters miss, and the database's answers become author ranges.
		{"bounded, many authors", 150 * 1500, 100},
		// A deletion stored without a topic (as before they took the person
		// scope): no outbox rows; the cache must leave kind 5 to the database.
		{"legacy deletion without a topic", 64 << 20, 220},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cw := newCacheWorld(t, uint64(len(tc.name)))
			if tc.name == "bounded, many authors" {
				for range 34 {
					cw.keys = append(cw.keys, newKey(t))
				}
				cw.feeds = 8
			}
			cw.ingest(600) // before the fill
			if tc.name == "legacy deletion without a topic" {
				tag, err := cw.db.Pool.Exec(context.Background(), `DELETE FROM cn_relay.event_topics WHERE event_id =
					(SELECT id FROM cn_relay.events WHERE kind = 5 AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 1)`)
				require.NoError(t, err)
				require.Positive(t, tag.RowsAffected())
			}
			if tc.bytes < 64<<20 { // (statistics: the seen set is made at the size they give)
				_, err := cw.db.Pool.Exec(context.Background(), "ANALYZE cn_relay.events, cn_relay.event_tags")
				require.NoError(t, err)
			}
			r := cw.cacheRelay(tc.bytes)
			cw.caughtUp(r)
			if tc.name == "legacy deletion without a topic" {
				require.Equal(t, []int{5}, cacheOf(r).Stats().Unscoped)
			}
			require.Equal(t, tc.bytes < 64<<20, cacheOf(r).Stats().Bounded, "%+v", cacheOf(r).Stats())
			hits := cw.compare(r, 150)
			for range 6 { // after the fill: the follower keeps it
				cw.ingest(150)
				cw.moderate(10)
				cw.caughtUp(r)
				hits += cw.compare(r, 50)
			}
			t.Logf("%s: %d of 450 REQs answered by the cache; %+v; %+v; learns: %v taken, %v left", tc.name, hits, cacheOf(r).Stats(), cacheOf(r).SeenStats(),
				testutil.ToFloat64(r.m.cacheLearns.WithLabelValues("taken")), testutil.ToFloat64(r.m.cacheLearns.WithLabelValues("left")))
			require.Positive(t, cacheOf(r).SeenStats().Proofs, "no REQ was answered by the seen set")
			if tc.name == "bounded, many authors" {
				require.GreaterOrEqual(t, cacheOf(r).Stats().RangeHits, int64(30), "too few REQs were answered by author ranges")
			}
			require.GreaterOrEqual(t, hits, tc.minHits, "the cache answers too few REQs to be tested")
			if tc.bytes < 64<<20 {
				require.Less(t, hits, 450, "a bounded cache must leave some REQs to the database")
			}
		})
	}
}

// TestCacheReadsYourWrites: an event the relay answered OK true for is in
// the stored part of a REQ sent right after, on the same and on another
// connection, although the cache learns of it from the outbox.
func TestCacheReadsYourWrites(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tr, _ := startAppRelay(t, db, nil)
	require.NotNil(t, cacheOf(tr.Relay))
	a, b := dial(t, tr.url), dial(t, tr.url)
	k := newKey(t)
	for i := range 50 {
		ev := k.note(t, "note "+strconv.Itoa(i), nil)
		ok, reason := a.publish(ev)
		require.True(t, ok, reason)
		c := []*client{a, b}[i%2]
		got := c.req("ryw", map[string]any{"ids": []string{ev.ID}})
		require.Empty(t, got.closed)
		require.Equal(t, []string{ev.ID}, got.ids, "note %d", i)
	}
	hits := cacheAnswers(tr.Relay, "hit")
	require.Positive(t, hits, "the cache answered none of them")
}

// TestCacheSeesOtherProcessesWrites: a write another process committed
// before a REQ arrived (a hide, a new event), announced by no notification
// yet, is in the REQ's stored part although the cache had not applied it:
// the REQ waits for the outbox head read after it arrived, or reads the
// database.
func TestCacheSeesOtherProcessesWrites(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tr, _ := startAppRelay(t, db, nil)
	require.NotNil(t, cacheOf(tr.Relay))
	// Another process: its own writer, whose notifications are never sent
	// (its Run is not started), so this relay learns of its rows only by
	// polling (every second) or by reading the head.
	other := store.New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), testConfig().Limits.TopicRules)
	c := dial(t, tr.url)
	k := newKey(t)
	for i := range 10 {
		ev := k.note(t, "published elsewhere "+strconv.Itoa(i), nil)
		res, err := other.Ingest(context.Background(), []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, res[0].Message)
		require.Equal(t, []string{ev.ID}, c.req("fresh", map[string]any{"ids": []string{ev.ID}}).ids, "event %d", i)

		tx, err := db.Pool.Begin(context.Background())
		require.NoError(t, err)
		_, err = other.Publisher().ModerateTx(context.Background(), tx, []string{ev.ID}, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(context.Background()))
		require.Empty(t, c.req("hidden", map[string]any{"ids": []string{ev.ID}}).ids, "event %d was hidden before the REQ", i)
	}
	require.Positive(t, cacheAnswers(tr.Relay, "hit")+cacheAnswers(tr.Relay, "behind"))
}

// TestLearnQueueIsBounded: the answers waiting for the learner hold no
// connection's budget, so their bytes are bounded: an offer past
// learnQueueBytes is left (busy), and the bytes come back once learnt.
func TestLearnQueueIsBounded(t *testing.T) {
	t.Parallel()
	cw := newCacheWorld(t, 3)
	r := cw.cacheRelay(1 << 20)
	offer := func(size int) {
		ev := &nostr.Event{ID: strconv.Itoa(size), PubKey: cw.keys[0].pk}
		sv := &servedJSON{}
		sv.Put(ev, make([]byte, size))
		r.offerLearn(&subscription{filters: []nostr.Filter{{Authors: []string{ev.PubKey}, Limit: 20}}}, []*nostr.Event{ev}, sv, 0)
	}
	offer(learnQueueBytes - 100)
	require.Len(t, r.learns, 1)
	offer(200)
	require.Len(t, r.learns, 1, "past the bytes bound")
	require.EqualValues(t, 1, testutil.ToFloat64(r.m.cacheLearns.WithLabelValues("busy")))
	offer(50)
	require.Len(t, r.learns, 2, "within it")
	for len(r.learns) > 0 {
		r.learn(context.Background(), <-r.learns) // (the JSON does not decode: left)
	}
	require.Zero(t, r.learnBytes.Load())
}
