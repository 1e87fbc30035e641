package eventcache

import (
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// by returns ev as written by author, of kind.
func by(ev *nostr.Event, author string, kind int) *nostr.Event {
	ev.PubKey, ev.Kind = author, kind
	return ev
}

func loaded(evs ...*nostr.Event) []Loaded {
	out := make([]Loaded, len(evs))
	for i, ev := range evs {
		out[i] = Loaded{Event: ev, JSON: []byte(`{"id":"` + ev.ID + `"}`)}
	}
	return out
}

func query(t *testing.T, c *Cache, f nostr.Filter) ([]string, bool) {
	t.Helper()
	hits, _, _, ok := c.Query([]nostr.Filter{f}, protocol.Viewer{}, 0, nil)
	return ids(hits), ok
}

// TestAuthorRangesAnswerBelowTheFloor: a database answer to an author filter
// that Learn takes answers the same filter, narrower ones (a kind, a smaller
// limit) and, for an answer short of its limit, everything of that author;
// filters of other authors or none are answered as before; the follower's
// rows keep the range (a backdated event above its floor is taken, a deleted
// one dropped).
func TestAuthorRangesAnswerBelowTheFloor(t *testing.T) {
	// 200 notes at created_at 100..299, every tenth by "a", the others by
	// "b"; the cache holds the newest 100 (10 of a's).
	var all, aOf []*nostr.Event
	for i := 199; i >= 0; i-- {
		ev := by(note(strconv.Itoa(1000+i), int64(100+i)), "b", 1)
		if i%10 == 0 {
			ev.PubKey = "a"
			aOf = append(aOf, ev)
		}
		all = append(all, ev)
	}
	c := New(100*entrySize([]byte(`{"id":"`+all[0].ID+`"}`)), false)
	fill(t, c, 1, all...)
	require.Equal(t, 100, c.Stats().Events)
	want := func(evs ...*nostr.Event) []string {
		out := make([]string, len(evs))
		for i, ev := range evs {
			out[i] = ev.ID[60:]
		}
		return out
	}
	_, ok := query(t, c, nostr.Filter{Authors: []string{"a"}, Limit: 15})
	require.False(t, ok, "a has 10 events above the floor")

	require.False(t, c.Learn(nostr.Filter{Authors: []string{"a"}, Tags: nostr.TagMap{"t": {"go"}}, Limit: 15}, loaded(aOf[:15]...), 1), "not an author filter")
	require.False(t, c.Learn(nostr.Filter{Authors: []string{"a"}, Limit: 15}, loaded(aOf[:15]...), 2), "read after what the cache applied")
	require.True(t, c.Learn(nostr.Filter{Authors: []string{"a"}, Limit: 15}, loaded(aOf[:15]...), 1))
	st := c.Stats()
	require.Equal(t, 1, st.Ranges)
	require.True(t, c.Holds(aOf[14].ID), "a's 5 older events are pinned")
	got, ok := query(t, c, nostr.Filter{Authors: []string{"a"}, Limit: 15})
	require.True(t, ok)
	require.Equal(t, want(aOf[:15]...), got)
	got, ok = query(t, c, nostr.Filter{Authors: []string{"a"}, Kinds: []int{1}, Limit: 12})
	require.True(t, ok)
	require.Equal(t, want(aOf[:12]...), got)
	_, ok = query(t, c, nostr.Filter{Authors: []string{"a"}, Limit: 16})
	require.False(t, ok, "the 16th is below the range")
	_, ok = query(t, c, nostr.Filter{Authors: []string{"a", "b"}, Limit: 200})
	require.False(t, ok, "b has no range")
	_, ok = query(t, c, nostr.Filter{Kinds: []int{1}, Limit: 150})
	require.False(t, ok, "pinned events answer only their authors' filters")

	// A backdated event of a above the range's floor is taken; one below it
	// is not; a deleted pinned event goes.
	back := by(note("2000", int64(aOf[12].CreatedAt)+1), "a", 1)
	older := by(note("2001", int64(aOf[14].CreatedAt)-1), "a", 1)
	c.Apply([]outbox.Row{{Seq: 2, Op: outbox.OpUpsert, EventID: back.ID}, {Seq: 3, Op: outbox.OpUpsert, EventID: older.ID},
		{Seq: 4, Op: outbox.OpDelete, EventID: aOf[13].ID}}, map[string]Loaded{back.ID: loaded(back)[0], older.ID: loaded(older)[0]}, 4)
	require.True(t, c.Holds(back.ID))
	require.False(t, c.Holds(older.ID))
	require.False(t, c.Holds(aOf[13].ID))
	got, ok = query(t, c, nostr.Filter{Authors: []string{"a"}, Limit: 15})
	require.True(t, ok)
	require.Equal(t, append(append(want(aOf[:12]...), "2000"), want(aOf[12], aOf[14])...), got)

	// An answer read before those rows is not taken: they touch it.
	require.False(t, c.Learn(nostr.Filter{Authors: []string{"a"}, Limit: 16}, loaded(aOf[:16]...), 1))
	// b wrote nothing of kind 0: an answer short of its limit is a range
	// over all of b's kind 0 (none).
	_, ok = query(t, c, nostr.Filter{Authors: []string{"b"}, Kinds: []int{0}, Limit: 1})
	require.False(t, ok)
	require.True(t, c.Learn(nostr.Filter{Authors: []string{"b"}, Kinds: []int{0}, Limit: 1}, nil, 4))
	got, ok = query(t, c, nostr.Filter{Authors: []string{"b"}, Kinds: []int{0}, Limit: 1})
	require.True(t, ok)
	require.Empty(t, got)
	require.EqualValues(t, 4, c.Stats().RangeHits) // (the answers above that only ranges gave)
}

// TestAuthorRangesKeepToTheirShare: author ranges and their pinned events
// take at most a quarter of the budget; the least recently used go first,
// with the events only they held.
func TestAuthorRangesKeepToTheirShare(t *testing.T) {
	var all []*nostr.Event
	for i := 399; i >= 0; i-- {
		all = append(all, by(note(strconv.Itoa(10000+i), int64(1000+i)), "pk"+strconv.Itoa(i%20), 1))
	}
	size := entrySize([]byte(`{"id":"` + all[0].ID + `"}`))
	c := New(100*size, false)
	fill(t, c, 1, all...)
	authorOf := func(a string) (evs []*nostr.Event) {
		for _, ev := range all {
			if ev.PubKey == a {
				evs = append(evs, ev)
			}
		}
		return evs
	}
	// Each range pins 10 events (5 of its 15 are above the floor): two fit.
	for i := range 20 {
		a := "pk" + strconv.Itoa(i)
		require.True(t, c.Learn(nostr.Filter{Authors: []string{a}, Limit: 15}, loaded(authorOf(a)[:15]...), 1), a)
		st := c.Stats()
		require.LessOrEqual(t, st.Bytes, 100*size)
		require.LessOrEqual(t, st.PinnedBytes, 25*size, "after %s: %+v", a, st)
		held := 0
		for _, ev := range all {
			if c.Holds(ev.ID) {
				held++
			}
		}
		require.Equal(t, st.Events, held)
	}
	// The newest ranges are held; the first ones went, with their events.
	require.Equal(t, 2, c.Stats().Ranges)
	_, ok := query(t, c, nostr.Filter{Authors: []string{"pk19"}, Limit: 15})
	require.True(t, ok)
	_, ok = query(t, c, nostr.Filter{Authors: []string{"pk0"}, Limit: 15})
	require.False(t, ok)
	require.False(t, c.Holds(authorOf("pk0")[14].ID))
	// Using a range keeps it: pk19 is used, then more are learnt.
	for i := range 5 {
		_, ok = query(t, c, nostr.Filter{Authors: []string{"pk19"}, Limit: 15})
		require.True(t, ok)
		a := "pk" + strconv.Itoa(i)
		require.True(t, c.Learn(nostr.Filter{Authors: []string{a}, Limit: 15}, loaded(authorOf(a)[:15]...), 1))
	}
	_, ok = query(t, c, nostr.Filter{Authors: []string{"pk19"}, Limit: 15})
	require.True(t, ok, "the range used last is kept")
}

// TestRowLogTellsWhatChangedAfterASeq: the log answers for the rows after a
// seq while it holds them all, newest first across its ring's wrap, and says
// it cannot tell once older ones were overwritten.
func TestRowLogTellsWhatChangedAfterASeq(t *testing.T) {
	var l rowLog
	l.reset(0)
	for seq := int64(1); seq <= logSize+904; seq++ {
		l.add(loggedRow{seq: seq, id: "id" + strconv.FormatInt(seq, 10), author: "pk" + strconv.FormatInt(seq%7, 10)})
	}
	last := int64(logSize + 904)
	require.True(t, l.touches(903, nil, nil), "row 904 was overwritten: the log cannot tell")
	require.False(t, l.touches(904, nil, nil))
	require.True(t, l.touches(905, map[string]bool{"id906": true}, nil))
	require.False(t, l.touches(906, map[string]bool{"id906": true}, nil), "row 906 is not after 906")
	require.True(t, l.touches(last-1, nil, map[string]bool{"pk" + strconv.FormatInt(last%7, 10): true}))
	require.False(t, l.touches(last-1, nil, map[string]bool{"pk" + strconv.FormatInt((last+1)%7, 10): true}))
	require.False(t, l.touches(last, map[string]bool{"id" + strconv.FormatInt(last, 10): true}, nil))
}
