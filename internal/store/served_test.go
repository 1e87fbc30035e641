package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
)

// trickyContents are contents and tags (every event needs a topic) whose JSON needs care: escapes, control
// characters, U+2028/U+2029, emoji and other non-ASCII, nested quotes.
var trickyContents = []struct {
	content string
	tags    nostr.Tags
}{
	{"", nostr.Tags{{"t", "q"}}},
	{`plain`, nostr.Tags{{"t", "q"}, {}}},
	{`she said "hi \"there\"" \ back\\slash /slash`, nostr.Tags{{"t", "q"}, {"x", `"\"nested\""`, `\`}}},
	{"line\nbreak\r\ttab\b\f\x01\x1f\x7f end", nostr.Tags{{"t", "q"}, {"c", "ctl\x02\n"}}},
	{"sep\u2028line\u2029para", nostr.Tags{{"t", "q"}, {"u", "\u2028\u2029"}}},
	{"emoji 🤙🏽 日本語 ü é \U0001F600 <html>&amp;", nostr.Tags{{"t", "q"}, {"e", "🤙", ""}, {"empty"}, {}}},
	{`{"looks":["like",json]}`, nostr.Tags{{"t", "q"}, {"j", `{"a":[1,"2"]}`}}},
}

// TestServedJSONVerifies reads tricky events with Read and checks that
// each one's JSON is, byte for byte, a valid JSON event whose id and signature
// verify and whose fields are the stored event's; an addressable event keeps
// its effective key.
func TestServedJSONVerifies(t *testing.T) {
	f := newFixture(t)
	var want []*nostr.Event
	for i, c := range trickyContents {
		want = append(want, f.event(t, 0, 1, base+nostr.Timestamp(i), c.tags, c.content))
	}
	want = append(want, f.event(t, 1, 30023, base, nostr.Tags{{"d", "a \"d\"\u2028"}, {"t", "q"}}, "long\u2029form"))
	for _, r := range f.ingest(t, want...) {
		require.True(t, r.OK, r.Message)
	}
	byID := map[string]*nostr.Event{}
	for _, ev := range want {
		byID[ev.ID] = ev
	}
	for _, filter := range []nostr.Filter{{Limit: 100}, {Tags: nostr.TagMap{"t": {"q"}}, Limit: 100}, {Authors: []string{want[0].PubKey}, Limit: 100}} {
		res, err := f.store.Read(context.Background(), readpath.Request{Filters: []nostr.Filter{filter}})
		require.NoError(t, err)
		require.NotEmpty(t, res.Events)
		require.Len(t, res.JSON, len(res.Events))
		require.Equal(t, readpath.Primary, res.Source)
		for i, ev := range res.Events {
			orig := byID[ev.ID]
			require.NotNil(t, orig)
			js := res.JSON[i]
			require.True(t, json.Valid(js), "%s", js)
			var got nostr.Event
			require.NoError(t, json.Unmarshal(js, &got), "%s", js)
			require.Equal(t, orig.ID, got.GetID(), "id over the served JSON: %s", js)
			ok, err := got.CheckSignature()
			require.NoError(t, err)
			require.True(t, ok, "signature: %s", js)
			require.Equal(t, orig.Content, got.Content)
			require.Equal(t, len(orig.Tags), len(got.Tags))
			for i := range orig.Tags {
				require.Equal(t, []string(orig.Tags[i]), []string(got.Tags[i]))
			}
			// The event itself: what the relay needs besides the JSON.
			require.Equal(t, orig.PubKey, ev.PubKey)
			require.Equal(t, orig.CreatedAt, ev.CreatedAt)
			require.Equal(t, orig.Kind, ev.Kind)
			require.Equal(t, protocol.EffectiveKey(orig), protocol.EffectiveKey(ev))
		}
	}
	// QuerySnapshot's events are whole.
	evs, _, err := f.store.QuerySnapshot(context.Background(), []nostr.Filter{{Limit: 100}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, evs, len(want))
	for _, ev := range evs {
		require.Equal(t, byID[ev.ID].Content, ev.Content)
		ok, err := ev.CheckSignature()
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// TestServedRowBudget checks that a Read's Take is asked for the bytes held
// for each served row (at least its JSON) and stops the read at a refusal.
func TestServedRowBudget(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.ingest(t, f.event(t, 0, 1, base+nostr.Timestamp(i), nostr.Tags{{"t", "q"}}, "content"))
	}
	var asked []int
	res, err := f.store.Read(context.Background(), readpath.Request{Filters: []nostr.Filter{{Limit: 100}}, Take: func(n int) bool {
		asked = append(asked, n)
		return len(asked) <= 2
	}})
	require.NoError(t, err)
	require.Len(t, res.Events, 2)
	require.Len(t, res.JSON, 2, "the refused row is not kept")
	require.True(t, res.Stopped)
	require.Len(t, asked, 3)
	for i, ev := range res.Events {
		require.GreaterOrEqual(t, asked[i], len(res.JSON[i])+len(ev.ID)+len(ev.PubKey))
	}
	res, err = f.store.Read(context.Background(), readpath.Request{Filters: []nostr.Filter{{Limit: 100}}, Take: func(int) bool { return true }})
	require.NoError(t, err)
	require.Len(t, res.Events, 5)
	require.False(t, res.Stopped, "every row fit")
}

// BenchmarkServedRow compares, for one typical stored row (the tags' jsonb
// text and the content), building its JSON from the stored bytes with
// decoding the tags and encoding the event, as the relay did before Served.
func BenchmarkServedRow(b *testing.B) {
	ev := &nostr.Event{Kind: 1, CreatedAt: base, Content: "a note about \"things\" 🤙 with a line\nbreak and some more words to be typical",
		Tags: nostr.Tags{{"t", "bench"}, {"p", "8c20d1a3822ec72fd18e2770a340ee6f78a58653fbbc4228b95dd8c4da789ec5"}, {"e", "f7504e67468e8234fa34c04b69c0f6b5f28d71423cd8fcf24bc514708637ab5f", "", "reply"}}}
	if err := ev.Sign(nostr.GeneratePrivateKey()); err != nil {
		b.Fatal(err)
	}
	// Postgres' jsonb text of the tags.
	tags := `[["t", "bench"], ["p", "8c20d1a3822ec72fd18e2770a340ee6f78a58653fbbc4228b95dd8c4da789ec5"], ["e", "f7504e67468e8234fa34c04b69c0f6b5f28d71423cd8fcf24bc514708637ab5f", "", "reply"]]`
	b.Run("decode+encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			e := *ev
			var err error
			if e.Tags, err = decodeTags(tags); err != nil {
				b.Fatal(err)
			}
			if _, err := e.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("served", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			appendEventJSON(make([]byte, 0, 512), ev.ID, ev.PubKey, int64(ev.CreatedAt), int32(ev.Kind), tags, ev.Content, ev.Sig)
		}
	})
}

// TestServedFromTellsEachFiltersAnswer: a Read of several filters records, for each event, the filters whose own answer (newest
// first, cut to its Limit) held it; an event that a filter matches but that
// is older than its Limit newest is not recorded for it.
func TestServedFromTellsEachFiltersAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var notes []*nostr.Event // newest first
	for i := range 4 {
		notes = append([]*nostr.Event{f.event(t, 0, 1, base+nostr.Timestamp(i), nostr.Tags{{"t", "q"}}, "")}, notes...)
	}
	react := f.event(t, 1, 7, base+10, nostr.Tags{{"t", "q"}}, "+")
	f.ingest(t, append([]*nostr.Event{react}, notes...)...)
	filters := []nostr.Filter{{Kinds: []int{1}, Limit: 2}, {Tags: nostr.TagMap{"t": {"q"}}, Limit: 4}, {Kinds: []int{30023}, Limit: 9}}
	res, err := f.store.Read(context.Background(), readpath.Request{Filters: filters})
	require.NoError(t, err)
	require.Len(t, res.From, len(res.Events))
	from := map[string]uint64{}
	for i, ev := range res.Events {
		from[ev.ID] = res.From[i]
	}
	require.Equal(t, map[string]uint64{
		react.ID:    0b010,
		notes[0].ID: 0b011,
		notes[1].ID: 0b011,
		notes[2].ID: 0b010, // (kind 1, but older than filter 0's two newest)
	}, from)
	require.NotContains(t, from, notes[3].ID, "an event the query did not return")

	res, err = f.store.Read(context.Background(), readpath.Request{Filters: filters[:1]})
	require.NoError(t, err)
	require.NotEmpty(t, res.Events)
	require.Nil(t, res.From, "a lone filter: nothing to tell")
}
