package eventcache

import (
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func note(id string, createdAt int64, tags ...nostr.Tag) *nostr.Event {
	for len(id) < 64 {
		id = "0" + id
	}
	return &nostr.Event{ID: id, PubKey: "pk", CreatedAt: nostr.Timestamp(createdAt), Kind: 1, Tags: tags}
}

// fill fills c with evs (newest first) at seq.
func fill(t *testing.T, c *Cache, seq int64, evs ...*nostr.Event) {
	fillUnscoped(t, c, seq, nil, evs...)
}

// fillUnscoped is fill where the database has events of the kinds unscoped
// without a topic.
func fillUnscoped(t *testing.T, c *Cache, seq int64, unscoped []int, evs ...*nostr.Event) {
	t.Helper()
	require.NoError(t, c.Fill(func(add func(*nostr.Event, []byte) bool) (int64, []int, error) {
		for _, ev := range evs {
			if !add(ev, []byte(`{"id":"`+ev.ID+`"}`)) {
				break
			}
		}
		return seq, unscoped, nil
	}))
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Event.ID[60:]
	}
	return out
}

// TestExpiredEventsAreNotServed: an event past its NIP-40 expiration is left
// out although the sweep has not deleted it yet, as the database's reads do.
func TestExpiredEventsAreNotServed(t *testing.T) {
	c := New(1<<20, false)
	fill(t, c, 1, note("0002", 100, nostr.Tag{"expiration", "150"}), note("0001", 90))
	hits, _, _, ok := c.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 10}}, protocol.Viewer{}, 149, nil)
	require.True(t, ok)
	require.Equal(t, []string{"0002", "0001"}, ids(hits))
	hits, _, _, ok = c.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 10}}, protocol.Viewer{}, 150, nil)
	require.True(t, ok)
	require.Equal(t, []string{"0001"}, ids(hits))
}

// TestBoundedCacheProvesCompleteness: once the oldest events are dropped, a
// filter is answered only when its limit is reached or its since lies above
// the floor; ties are served lowest id first.
func TestBoundedCacheProvesCompleteness(t *testing.T) {
	var evs []*nostr.Event
	for i := 20; i > 0; i-- {
		evs = append(evs, note(strconv.Itoa(1000+i), int64(100+i/2)))
	}
	c := New(10*entrySize([]byte(`{"id":"`+evs[0].ID+`"}`)), false)
	fill(t, c, 1, evs...)
	st := c.Stats()
	require.True(t, st.Bounded)
	require.Equal(t, 10, st.Events)
	require.EqualValues(t, 105, st.Floor) // (the 11th newest, 1010, was not taken)

	hits, _, _, ok := c.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 3}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok)
	require.Equal(t, []string{"1020", "1018", "1019"}, ids(hits)) // created_at 110, 109, 109
	_, _, _, ok = c.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 11}}, protocol.Viewer{}, 0, nil)
	require.False(t, ok, "the 11th may be below the floor")
	since := nostr.Timestamp(106)
	hits, _, _, ok = c.Query([]nostr.Filter{{Kinds: []int{1}, Since: &since, Limit: 50}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok, "nothing at or after since is below the floor")
	require.Len(t, hits, 9) // (1011, at 105, is before since)
	since = 105
	_, _, _, ok = c.Query([]nostr.Filter{{Kinds: []int{1}, Since: &since, Limit: 50}}, protocol.Viewer{}, 0, nil)
	require.False(t, ok, "an event at the floor's second may be missing")

	// An upsert below the floor is not taken; one above it drops the oldest.
	c.Apply([]outbox.Row{{Seq: 2, Op: outbox.OpUpsert, EventID: evs[19].ID}, {Seq: 3, Op: outbox.OpUpsert, EventID: note("2000", 200).ID}},
		map[string]Loaded{evs[19].ID: {Event: evs[19], JSON: []byte(`{}`)}, note("2000", 200).ID: {Event: note("2000", 200), JSON: []byte(`{"id":"` + note("2000", 200).ID + `"}`)}}, 3)
	require.False(t, c.Holds(evs[19].ID))
	require.True(t, c.Holds(note("2000", 200).ID))
	require.EqualValues(t, 3, c.Stats().Seq)
	require.EqualValues(t, 105, c.Stats().Floor) // (1011 went: it is the floor now)
}

// TestUnscopedKindsAreLeftToTheDatabase: a filter that could match an event
// stored without a topic (and so without outbox rows) is not answered,
// unless it has a #t condition or its ids are all held: of the kinds the
// fill found so, or of any kind when topics are not required.
func TestUnscopedKindsAreLeftToTheDatabase(t *testing.T) {
	a := note("0001", 100, nostr.Tag{"t", "go"})
	legacy := New(1<<20, false)
	fillUnscoped(t, legacy, 1, []int{5}, a)
	topicless := New(1<<20, true)
	fill(t, topicless, 1, a)
	for name, c := range map[string]*Cache{"legacy deletions": legacy, "topics not required": topicless} {
		for _, f := range []nostr.Filter{{Authors: []string{"pk"}, Limit: 5}, {Kinds: []int{1, 5}, Limit: 5}, {IDs: []string{a.ID, note("9", 1).ID}, Limit: 5}} {
			_, _, _, ok := c.Query([]nostr.Filter{f}, protocol.Viewer{}, 0, nil)
			require.False(t, ok, "%s: %v", name, f)
		}
		for _, f := range []nostr.Filter{{Authors: []string{"pk"}, Tags: nostr.TagMap{"t": {"go"}}, Limit: 5}, {IDs: []string{a.ID}, Limit: 5}} {
			hits, _, _, ok := c.Query([]nostr.Filter{f}, protocol.Viewer{}, 0, nil)
			require.True(t, ok, "%s: %v", name, f)
			require.Equal(t, []string{"0001"}, ids(hits))
		}
	}
	_, _, _, ok := legacy.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 5}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok, "kind 1 was not found without a topic")
	_, _, _, ok = topicless.Query([]nostr.Filter{{Kinds: []int{1}, Limit: 5}}, protocol.Viewer{}, 0, nil)
	require.False(t, ok, "any kind may be stored without a topic")
	c := New(1<<20, false)
	fill(t, c, 1, a)
	_, _, _, ok = c.Query([]nostr.Filter{{Authors: []string{"pk"}, Limit: 5}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok, "every event has a topic: a filter without kinds is answered")
	// A reader who may see private kinds is left to the database unless the
	// filter names public kinds only.
	_, _, _, ok = c.Query([]nostr.Filter{{Tags: nostr.TagMap{"t": {"go"}}, Limit: 5}}, protocol.Viewer{Authed: []string{"pk"}}, 0, nil)
	require.False(t, ok)
}

// TestWaitFor: WaitFor returns once the cache applied the seq, and gives up
// after its wait.
func TestWaitFor(t *testing.T) {
	c := New(1<<20, false)
	require.False(t, c.WaitFor(0, time.Millisecond, nil), "not filled")
	fill(t, c, 5)
	require.True(t, c.WaitFor(5, 0, nil))
	require.False(t, c.WaitFor(6, 10*time.Millisecond, nil))
	go c.Apply([]outbox.Row{{Seq: 7, Op: outbox.OpDelete, EventID: "x"}}, nil, 7)
	require.True(t, c.WaitFor(7, time.Minute, nil))
}

// TestIDsAllHeldAnswerABoundedCache: a filter whose ids are all held is
// answered by a cache that has dropped events, whatever its limit; one with
// an id not held is not (the event may be below the floor).
func TestIDsAllHeldAnswerABoundedCache(t *testing.T) {
	a, b, old := note("0003", 100), note("0002", 90), note("0001", 80)
	c := New(2*entrySize([]byte(`{"id":"`+a.ID+`"}`)), false)
	fill(t, c, 1, a, b, old)
	require.True(t, c.Stats().Bounded)
	hits, _, _, ok := c.Query([]nostr.Filter{{IDs: []string{b.ID, a.ID}, Limit: 500}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok)
	require.Equal(t, []string{"0003", "0002"}, ids(hits))
	_, _, _, ok = c.Query([]nostr.Filter{{IDs: []string{a.ID, old.ID}, Limit: 500}}, protocol.Viewer{}, 0, nil)
	require.False(t, ok)
}

// seenScan is a SeenScan of evs' keys, as store.Reader.StoredKeys reads them,
// without an estimate of their number.
func seenScan(evs ...*nostr.Event) SeenScan { return seenScanSized(-1, evs...) }

// seenScanSized is seenScan that first gives estimate (unless negative).
func seenScanSized(estimate int, evs ...*nostr.Event) SeenScan {
	return func(size func(int), key func(string, []byte)) error {
		if estimate >= 0 {
			size(estimate)
		}
		for _, ev := range evs {
			key(SeenID, []byte(ev.ID))
			key(SeenAuthor, []byte(ev.PubKey))
			for _, tag := range ev.Tags {
				if len(tag) >= 2 && len(tag[0]) == 1 && tag[0] != "t" {
					key(SeenTag(tag[0]), []byte(tag[1]))
				}
			}
		}
		return nil
	}
}

// TestSeenSetProvesEmptyAnswers: a bounded cache cannot answer a REQ for
// what lies below its floor, but once the seen set is built it answers, empty,
// every filter whose ids, authors or values of one tag were never stored;
// keys of events stored below the floor, of events the follower applied
// during and after the build, and t tags (not in the set) still read the
// database.
func TestSeenSetProvesEmptyAnswers(t *testing.T) {
	old := note("0001", 50, nostr.Tag{"e", "target"}, nostr.Tag{"t", "go"})
	old.PubKey = "oldauthor"
	var evs []*nostr.Event
	for i := 20; i > 0; i-- {
		evs = append(evs, note(strconv.Itoa(1000+i), int64(100+i)))
	}
	c := New(5*entrySize([]byte(`{"id":"`+evs[0].ID+`"}`)), false)
	fill(t, c, 1, append(evs, old)...)
	require.True(t, c.Stats().Bounded)
	v := protocol.Viewer{}
	query := func(f nostr.Filter) ([]string, bool) {
		f.Limit = 10
		hits, _, _, ok := c.Query([]nostr.Filter{f}, v, 0, nil)
		return ids(hits), ok
	}
	never := note("9999", 1).ID
	unstored := []nostr.Filter{
		{IDs: []string{never}},
		{Authors: []string{"stranger"}},
		{Tags: nostr.TagMap{"e": {"nothing"}}},
		{Tags: nostr.TagMap{"p": {"nobody", "noone"}}, Kinds: []int{7}},
		{Authors: []string{"pk"}, Tags: nostr.TagMap{"e": {"nothing"}}}, // (one unstored condition is enough)
	}
	for _, f := range unstored {
		_, ok := query(f)
		require.False(t, ok, "before the seen set: %v", f)
	}

	// A build, during which the follower applies a new event.
	during := note("2001", 300, nostr.Tag{"e", "during"})
	full, err := c.BuildSeen(func(size func(int), key func(string, []byte)) error {
		c.Apply([]outbox.Row{{Seq: 2, EventID: during.ID, Op: outbox.OpUpsert}},
			map[string]Loaded{during.ID: {Event: during, JSON: []byte(`{}`)}}, 2)
		return seenScan(append(evs, old)...)(size, key)
	})
	require.NoError(t, err)
	require.NotNil(t, full)
	for _, f := range unstored {
		got, ok := query(f)
		require.True(t, ok, "%v", f)
		require.Empty(t, got)
	}
	require.EqualValues(t, len(unstored), c.SeenStats().Proofs)
	for _, f := range []nostr.Filter{
		{IDs: []string{old.ID}},                                             // stored below the floor
		{Authors: []string{"oldauthor"}},                                    // "
		{Tags: nostr.TagMap{"e": {"target"}}},                               // "
		{Tags: nostr.TagMap{"t": {"nothing"}}, Since: nil, Kinds: []int{1}}, // t is not in the set
	} {
		_, ok := query(f)
		require.False(t, ok, "%v", f)
	}
	_, ok := query(nostr.Filter{Tags: nostr.TagMap{"e": {"during"}}})
	require.False(t, ok, "an event applied during the build is in the set (its older #e matches could be below the floor)")

	// After the build, the follower's events are added as they come; ids
	// held or never stored are answered together.
	after := note("2002", 301, nostr.Tag{"e", "after"})
	c.Apply([]outbox.Row{{Seq: 3, EventID: after.ID, Op: outbox.OpUpsert}},
		map[string]Loaded{after.ID: {Event: after, JSON: []byte(`{}`)}}, 3)
	c.Apply([]outbox.Row{{Seq: 4, EventID: after.ID, Op: outbox.OpDelete}}, nil, 4)
	_, ok = query(nostr.Filter{Tags: nostr.TagMap{"e": {"after"}}})
	require.False(t, ok, "a stored event's key stays in the set after it is deleted")
	got, ok := query(nostr.Filter{IDs: []string{during.ID, never}})
	require.True(t, ok)
	require.Equal(t, []string{"2001"}, got)

	// Sized for twice the keys found (at least seenMinKeys): full once as
	// many more are added.
	for i := 0; ; i++ {
		select {
		case <-full:
			require.Greater(t, c.SeenStats().Keys, seenMinKeys)
			return
		default:
		}
		require.Less(t, i, seenMinKeys, "the seen set never filled up")
		ev := note(strconv.Itoa(100000+i), int64(400+i))
		c.Apply([]outbox.Row{{Seq: int64(5 + i), EventID: ev.ID, Op: outbox.OpUpsert}},
			map[string]Loaded{ev.ID: {Event: ev, JSON: []byte(`{}`)}}, int64(5+i))
	}
}

// TestNoSeenSetForTopiclessEvents: when events may be stored without a topic
// (no outbox rows), the follower cannot add their keys: no seen set is built.
func TestNoSeenSetForTopiclessEvents(t *testing.T) {
	c := New(1<<20, true)
	fill(t, c, 1)
	full, err := c.BuildSeen(seenScan(note("0001", 1)))
	require.NoError(t, err)
	require.Nil(t, full)
	require.False(t, c.SeenStats().Ready)
}

// TestSeenSetSizedFromTheEstimate: with the scan's estimate the set is made at
// its size before the keys come (none are held aside); an estimate that was
// too low (stale statistics) makes the set full at once, and the next build
// is sized from the keys the set took.
func TestSeenSetSizedFromTheEstimate(t *testing.T) {
	var evs []*nostr.Event
	for i := range 40_000 {
		evs = append(evs, note(strconv.Itoa(100000+i), int64(i)))
	}
	c := New(1<<20, false)
	fill(t, c, 1)

	full, err := c.BuildSeen(seenScanSized(400_000, evs...))
	require.NoError(t, err)
	big := c.SeenStats()
	require.Equal(t, 80_000, big.Keys) // (an id and an author each)
	select {
	case <-full:
		t.Fatal("a set sized for its keys reported full")
	default:
	}
	hits, _, _, ok := c.Query([]nostr.Filter{{Authors: []string{"stranger"}, Limit: 1}}, protocol.Viewer{}, 0, nil)
	require.True(t, ok)
	require.Empty(t, hits)
	require.EqualValues(t, 1, c.SeenStats().Proofs)

	c = New(1<<20, false)
	fill(t, c, 1)
	full, err = c.BuildSeen(seenScanSized(10, evs...))
	require.NoError(t, err)
	small := c.SeenStats()
	require.Less(t, small.Bytes, big.Bytes)
	select {
	case <-full:
	default:
		t.Fatal("a set sized from a stale estimate did not report full")
	}
	full, err = c.BuildSeen(seenScanSized(10, evs...))
	require.NoError(t, err)
	require.Greater(t, c.SeenStats().Bytes, small.Bytes, "the rebuild is sized from the keys the set took")
	select {
	case <-full:
		t.Fatal("the rebuilt set reported full")
	default:
	}
}
