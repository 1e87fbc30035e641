package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type fixture struct {
	db    *pgtest.DB
	store *Store
	keys  []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := pgtest.New(t)
	f := &fixture{db: db, store: New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}))}
	for range 3 {
		f.keys = append(f.keys, nostr.GeneratePrivateKey())
	}
	return f
}

var base = nostr.Timestamp(1_700_000_000)

func (f *fixture) event(t *testing.T, author, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
	require.NoError(t, ev.Sign(f.keys[author]))
	return ev
}

func (f *fixture) ingest(t *testing.T, evs ...*nostr.Event) []protocol.Verdict {
	t.Helper()
	res, err := f.store.Ingest(context.Background(), evs)
	require.NoError(t, err)
	require.Len(t, res, len(evs))
	return res
}

func (f *fixture) query(t *testing.T, filters ...nostr.Filter) []string {
	t.Helper()
	evs, err := f.store.Query(context.Background(), filters)
	require.NoError(t, err)
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// rows returns the outbox as "op id topic [key] [reason]" lines after seq `after`.
func (f *fixture) rows(t *testing.T, after int64) ([]string, int64) {
	t.Helper()
	rows, err := outbox.ReadAfter(context.Background(), f.db.Pool, after, 1000, nil)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s %s", r.Op, r.EventID[:8], r.TopicID, r.EffectiveKey, r.Reason)))
		after = r.Seq
	}
	return out, after
}

func topic(v string) nostr.Tag { return nostr.Tag{"t", v} }

func TestIngestRegularAndDuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.event(t, 0, 1, base, nostr.Tags{topic("Go"), topic("nostr"), {"p", strings.Repeat("ab", 32)}}, "hello")
	res := f.ingest(t, a, a)
	require.Equal(t, []protocol.Verdict{{OK: true, Message: ""}, {OK: true, Message: msgDuplicate}}, res)
	require.Equal(t, []protocol.Verdict{{OK: true, Message: msgDuplicate}}, f.ingest(t, a))

	rows, _ := f.rows(t, 0)
	require.Equal(t, []string{"upsert " + a.ID[:8] + " go", "upsert " + a.ID[:8] + " nostr"}, rows)
	require.Equal(t, []string{a.ID}, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}, Limit: 10}))
	require.Equal(t, []string{a.ID}, f.query(t, nostr.Filter{Tags: nostr.TagMap{"p": {strings.Repeat("ab", 32)}}, Limit: 10}))
	require.Empty(t, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"rust"}}, Limit: 10}))
	got, err := f.store.Events(context.Background(), []string{a.ID})
	require.NoError(t, err)
	require.Len(t, got, 1)
	ok, err := got[0].CheckSignature()
	require.NoError(t, err)
	require.True(t, ok, "stored events come back byte-exact")
}

func TestReplaceableAndAddressable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	v1 := f.event(t, 0, 0, base, nostr.Tags{topic("x")}, "v1")
	v2 := f.event(t, 0, 0, base+10, nostr.Tags{topic("x")}, "v2")
	old := f.event(t, 0, 0, base-10, nostr.Tags{topic("x")}, "old")
	f.ingest(t, v1)
	f.ingest(t, v2)
	require.Equal(t, []protocol.Verdict{{OK: true, Message: ""}}, f.ingest(t, old), "a late older version is stored")
	profile := nostr.Filter{Kinds: []int{0}, Limit: 10}
	require.Equal(t, []string{v2.ID}, f.query(t, profile))
	key := "0:" + v1.PubKey
	rows, _ := f.rows(t, 0)
	require.Equal(t, []string{"upsert " + v1.ID[:8] + " x " + key, "upsert " + v2.ID[:8] + " x " + key}, rows,
		"an upsert each time the effective version changes, none for the late older one")

	// Same created_at: the lowest id wins, whichever arrives first.
	a := f.event(t, 1, 10002, base, nostr.Tags{topic("x")}, "a")
	b := f.event(t, 1, 10002, base, nostr.Tags{topic("x")}, "b")
	lo, hi := a, b
	if hi.ID < lo.ID {
		lo, hi = hi, lo
	}
	f.ingest(t, hi)
	f.ingest(t, lo)
	require.Equal(t, []string{lo.ID}, f.query(t, nostr.Filter{Kinds: []int{10002}, Limit: 10}))
	f.ingest(t, hi) // duplicate, changes nothing
	require.Equal(t, []string{lo.ID}, f.query(t, nostr.Filter{Kinds: []int{10002}, Limit: 10}))

	// Addressable: one effective version per d; two versions in one batch.
	d1a := f.event(t, 2, 30023, base, nostr.Tags{{"d", "one"}, topic("x")}, "1a")
	d1b := f.event(t, 2, 30023, base+1, nostr.Tags{{"d", "one"}, topic("x")}, "1b")
	d2 := f.event(t, 2, 30023, base, nostr.Tags{{"d", "two"}, topic("x")}, "2")
	f.ingest(t, d1b, d1a, d2)
	require.ElementsMatch(t, []string{d1b.ID, d2.ID}, f.query(t, nostr.Filter{Kinds: []int{30023}, Limit: 10}))
	require.Equal(t, []string{d1b.ID}, f.query(t, nostr.Filter{Kinds: []int{30023}, Tags: nostr.TagMap{"d": {"one"}}, Limit: 10}))
}

func TestDeletion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	note := f.event(t, 0, 1, base, nostr.Tags{topic("a"), topic("b")}, "to delete")
	other := f.event(t, 1, 1, base, nostr.Tags{topic("a")}, "someone else's")
	f.ingest(t, note, other)
	_, after := f.rows(t, 0)

	del := f.event(t, 0, 5, base+1, nostr.Tags{{"e", note.ID}, {"e", other.ID}, topic("a")}, "")
	f.ingest(t, del)
	rows, after := f.rows(t, after)
	require.Equal(t, []string{
		"upsert " + del.ID[:8] + " a",
		"delete " + note.ID[:8] + " a  nip09", "delete " + note.ID[:8] + " b  nip09",
	}, rows, "one delete row per topic; other authors' events are untouched")
	require.ElementsMatch(t, []string{del.ID, other.ID}, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"a"}}, Limit: 10}))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: msgDeleted}}, f.ingest(t, note), "deleted events never come back")

	// A deletion that arrives before its target wins when the target arrives.
	late := f.event(t, 0, 1, base, nostr.Tags{topic("a")}, "late")
	f.ingest(t, f.event(t, 0, 5, base+1, nostr.Tags{{"e", late.ID}, topic("a")}, ""))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: msgDeletedByAuth}}, f.ingest(t, late))
	// Someone else's deletion of it does not.
	late2 := f.event(t, 0, 1, base, nostr.Tags{topic("a")}, "late2")
	f.ingest(t, f.event(t, 1, 5, base+1, nostr.Tags{{"e", late2.ID}, topic("a")}, ""))
	require.Equal(t, []protocol.Verdict{{OK: true, Message: ""}}, f.ingest(t, late2))
	_ = after

	// Deleting the effective version of a replaceable event promotes the previous one.
	p1 := f.event(t, 2, 0, base, nostr.Tags{topic("p")}, "p1")
	p2 := f.event(t, 2, 0, base+5, nostr.Tags{topic("p")}, "p2")
	f.ingest(t, p1, p2)
	_, after = f.rows(t, 0)
	f.ingest(t, f.event(t, 2, 5, base+6, nostr.Tags{{"e", p2.ID}, topic("p")}, ""))
	rows, _ = f.rows(t, after)
	key := "0:" + p1.PubKey
	require.Contains(t, rows, "delete "+p2.ID[:8]+" p "+key+" nip09")
	require.Contains(t, rows, "upsert "+p1.ID[:8]+" p "+key)
	require.Equal(t, []string{p1.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Authors: []string{p1.PubKey}, Limit: 10}))

	// An 'a' deletion covers versions up to its created_at, not later ones.
	pk1, err := nostr.GetPublicKey(f.keys[1])
	require.NoError(t, err)
	addr := fmt.Sprintf("30023:%s:doc", pk1)
	a1 := f.event(t, 1, 30023, base, nostr.Tags{{"d", "doc"}, topic("p")}, "a1")
	f.ingest(t, a1)
	f.ingest(t, f.event(t, 1, 5, base+10, nostr.Tags{{"a", addr}, topic("p")}, ""))
	require.Empty(t, f.query(t, nostr.Filter{Kinds: []int{30023}, Limit: 10}))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: msgDeletedByAuth}}, f.ingest(t, f.event(t, 1, 30023, base+5, nostr.Tags{{"d", "doc"}, topic("p")}, "a2")))
	a3 := f.event(t, 1, 30023, base+20, nostr.Tags{{"d", "doc"}, topic("p")}, "a3")
	require.Equal(t, []protocol.Verdict{{OK: true, Message: ""}}, f.ingest(t, a3))
	require.Equal(t, []string{a3.ID}, f.query(t, nostr.Filter{Kinds: []int{30023}, Limit: 10}))
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := time.Now()
	soon := f.event(t, 0, 1, base, nostr.Tags{topic("e"), {"expiration", fmt.Sprint(now.Unix() + 2)}}, "soon")
	later := f.event(t, 0, 1, base, nostr.Tags{topic("e"), {"expiration", fmt.Sprint(now.Unix() + 3600)}}, "later")
	f.ingest(t, soon, later)
	_, after := f.rows(t, 0)
	require.ElementsMatch(t, []string{soon.ID, later.ID}, f.query(t, nostr.Filter{Limit: 10}))

	f.store.now = func() time.Time { return now.Add(5 * time.Second) }
	require.Equal(t, []string{later.ID}, f.query(t, nostr.Filter{Limit: 10}), "hidden at once, before any sweep")
	n, err := f.store.Sweep(context.Background(), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rows, _ := f.rows(t, after)
	require.Equal(t, []string{"delete " + soon.ID[:8] + " e  expiration"}, rows)
	n, err = f.store.Sweep(context.Background(), 100)
	require.NoError(t, err)
	require.Zero(t, n)

	var c int64
	c, err = f.store.Count(context.Background(), []nostr.Filter{{}, {Authors: []string{later.PubKey}}})
	require.NoError(t, err)
	require.EqualValues(t, 1, c)
}

// TestQueryMatchesReference compares stored-query results with the plain NIP-01
// matcher (protocol.Match) over random events and filters.
func TestQueryMatchesReference(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for range 3 {
		f.keys = append(f.keys, nostr.GeneratePrivateKey())
	}
	topics := []string{"go", "nostr", "日本語"}
	var all []*nostr.Event
	pvals := []string{strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)}
	for i := range 300 {
		kind := []int{1, 1, 1, 7, 0, 10002, 30023}[rng.IntN(7)]
		tags := nostr.Tags{topic(topics[rng.IntN(len(topics))])}
		if rng.IntN(2) == 0 {
			tags = append(tags, topic(topics[rng.IntN(len(topics))]))
		}
		if rng.IntN(2) == 0 {
			tags = append(tags, nostr.Tag{"p", pvals[rng.IntN(len(pvals))]})
		}
		if kind == 30023 {
			tags = append(tags, nostr.Tag{"d", fmt.Sprint(rng.IntN(3))})
		}
		ev := f.event(t, rng.IntN(len(f.keys)), kind, base+nostr.Timestamp(rng.IntN(50)), tags, fmt.Sprint("n", i))
		all = append(all, ev)
	}
	for i := 0; i < len(all); i += 37 {
		f.ingest(t, all[i:min(i+37, len(all))]...)
	}
	visible := reference(all)

	authors := make([]string, len(f.keys))
	for i, k := range f.keys {
		authors[i], _ = nostr.GetPublicKey(k)
	}
	nonEmpty := 0
	for i := range 300 {
		var flt nostr.Filter
		if rng.IntN(3) == 0 {
			flt.Authors = pick(rng, authors, 1+rng.IntN(3))
		}
		if rng.IntN(3) == 0 {
			flt.Kinds = pickInts(rng, []int{0, 1, 7, 10002, 30023}, 1+rng.IntN(2))
		}
		if rng.IntN(2) == 0 {
			flt.Tags = nostr.TagMap{"t": pick(rng, topics, 1+rng.IntN(2))}
		}
		if rng.IntN(4) == 0 {
			if flt.Tags == nil {
				flt.Tags = nostr.TagMap{}
			}
			flt.Tags["p"] = pick(rng, pvals, 1)
		}
		if rng.IntN(4) == 0 {
			s := base + nostr.Timestamp(rng.IntN(50))
			flt.Since = &s
		}
		if rng.IntN(4) == 0 {
			u := base + nostr.Timestamp(rng.IntN(50))
			flt.Until = &u
		}
		if rng.IntN(5) == 0 {
			flt.IDs = []string{visible[rng.IntN(len(visible))].ID, all[rng.IntN(len(all))].ID}
		}
		flt.Limit = 1 + rng.IntN(40)

		var want []string
		for _, ev := range visible {
			if protocol.Match(flt, ev) {
				want = append(want, ev.ID)
			}
		}
		want = want[:min(len(want), flt.Limit)]
		if len(want) > 0 {
			nonEmpty++
		}
		require.Equal(t, nonNil(want), nonNil(f.query(t, flt)), "filter %d: %+v", i, flt)
	}
	require.Greater(t, nonEmpty, 150, "most random filters must match something")
}

// reference computes what a reader may see: every regular event, the effective
// version of each replaceable/addressable key; newest first, ties by lowest id.
func reference(all []*nostr.Event) []*nostr.Event {
	winners := map[string]*nostr.Event{}
	var out []*nostr.Event
	for _, ev := range all {
		k := protocol.EffectiveKey(ev)
		if k == "" {
			out = append(out, ev)
			continue
		}
		if w := winners[k]; w == nil || ev.CreatedAt > w.CreatedAt || (ev.CreatedAt == w.CreatedAt && ev.ID < w.ID) {
			winners[k] = ev
		}
	}
	for _, w := range winners {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func pick(rng *rand.Rand, from []string, n int) []string {
	p := rng.Perm(len(from))
	out := make([]string, 0, n)
	for _, i := range p[:min(n, len(from))] {
		out = append(out, from[i])
	}
	return out
}

func pickInts(rng *rand.Rand, from []int, n int) []int {
	p := rng.Perm(len(from))
	out := make([]int, 0, n)
	for _, i := range p[:min(n, len(from))] {
		out = append(out, from[i])
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
