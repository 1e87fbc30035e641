package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny // TestTopics covers the default
	f := &fixture{db: db, store: New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), rules)}
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
	evs, err := f.store.Query(context.Background(), filters, protocol.Viewer{})
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

// topics returns the topics an event is stored under (event_topics scope rows,
// as in the outbox).
func (f *fixture) topics(t *testing.T, id string) []string {
	t.Helper()
	rows, err := f.db.Pool.Query(context.Background(), "SELECT topic_id FROM cn_relay.event_topics WHERE event_id = $1 AND scope", id)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

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

// TestConcurrentDuplicatesAreStoredOnce sends the same events in several
// concurrent batches (clients resending while the first copy is in flight, or
// two relays): each event is answered OK "" exactly once, "duplicate:" otherwise,
// and has exactly one outbox row per topic.
func TestConcurrentDuplicatesAreStoredOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const rounds, writers, perRound = 20, 6, 10
	var all []*nostr.Event
	for r := range rounds {
		evs := make([]*nostr.Event, perRound)
		for i := range evs {
			evs[i] = f.event(t, i%3, 1, base+nostr.Timestamp(r*perRound+i), nostr.Tags{topic("go")}, fmt.Sprint("note ", r, i))
		}
		all = append(all, evs...)
		var wg sync.WaitGroup
		results := make([][]protocol.Verdict, writers)
		errs := make([]error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				batch := slices.Clone(evs)
				rand.New(rand.NewPCG(uint64(r), uint64(w))).Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
				res, err := f.store.Ingest(context.Background(), batch)
				errs[w] = err
				for i, v := range res {
					if i < len(batch) && v.OK && v.Message == "" {
						results[w] = append(results[w], protocol.Verdict{OK: true, Message: batch[i].ID})
					} else if !(v.OK && v.Message == msgDuplicate) {
						results[w] = append(results[w], protocol.Verdict{Message: "unexpected: " + v.Message})
					}
				}
			}()
		}
		wg.Wait()
		stored := map[string]int{}
		for w := range writers {
			require.NoError(t, errs[w])
			for _, v := range results[w] {
				require.True(t, v.OK, v.Message)
				stored[v.Message]++
			}
		}
		for _, ev := range evs {
			require.Equal(t, 1, stored[ev.ID], "event %s answered as newly stored %d times", ev.ID[:8], stored[ev.ID])
		}
	}
	var rows, distinct int
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		"SELECT count(*), count(DISTINCT event_id) FROM cn_relay.events_outbox").Scan(&rows, &distinct))
	require.Equal(t, len(all), distinct)
	require.Equal(t, len(all), rows, "one outbox row per (event, topic)")
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
	require.Equal(t, []string{"upsert " + v1.ID[:8] + " NODE " + key, "upsert " + v2.ID[:8] + " NODE " + key}, rows,
		"an upsert each time the effective version changes, none for the late older one; identity events are node-wide")

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
	require.Contains(t, rows, "delete "+p2.ID[:8]+" NODE "+key+" nip09")
	require.Contains(t, rows, "upsert "+p1.ID[:8]+" NODE "+key)
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
	c, err = f.store.Count(context.Background(), []nostr.Filter{{}, {Authors: []string{later.PubKey}}}, protocol.Viewer{})
	require.NoError(t, err)
	require.EqualValues(t, 1, c)
}

// TestQueryMatchesReference compares stored-query results with the NIP-01
// reference matcher (protocol.Match) over random events and filters, some of
// which inherit topics through e and a tags (which #t must not match), and
// checks the topics each event was stored under (own, inherited, or NodeTopic).
func TestQueryMatchesReference(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for range 3 {
		f.keys = append(f.keys, nostr.GeneratePrivateKey())
	}
	topics := []string{"go", "nostr", "日本語"}
	var all []*nostr.Event
	stored := map[string][]string{} // id and address -> topics
	pvals := []string{strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)}
	for i := range 300 {
		kind := []int{1, 1, 1, 7, 0, 10002, 30023}[rng.IntN(7)]
		tags := nostr.Tags{topic(topics[rng.IntN(len(topics))])}
		var inherited []string
		if kind == 7 && len(all) > 0 && rng.IntN(2) == 0 {
			// No topic of its own: it inherits from what it references.
			target := all[rng.IntN(len(all))]
			tags = nostr.Tags{{"e", target.ID}}
			inherited = append(inherited, stored[target.ID]...)
			if rng.IntN(2) == 0 {
				if a := all[rng.IntN(len(all))]; a.Kind == 30023 {
					addr := fmt.Sprintf("30023:%s:%s", a.PubKey, a.Tags.GetD())
					tags = append(tags, nostr.Tag{"a", addr})
					inherited = append(inherited, stored[addr]...)
				}
			}
		} else if rng.IntN(2) == 0 {
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
		switch {
		case protocol.IsIdentityKind(kind):
			stored[ev.ID] = []string{protocol.NodeTopic}
		case inherited != nil:
			slices.Sort(inherited)
			stored[ev.ID] = slices.Compact(inherited)
		default:
			stored[ev.ID] = protocol.Topics(ev)
		}
		if kind == 30023 {
			addr := fmt.Sprintf("30023:%s:%s", ev.PubKey, ev.Tags.GetD())
			stored[addr] = append(stored[addr], stored[ev.ID]...)
		}
	}
	for i := 0; i < len(all); i += 37 {
		f.ingest(t, all[i:min(i+37, len(all))]...)
	}
	visible := reference(all)

	authors := make([]string, len(f.keys))
	for i, k := range f.keys {
		authors[i], _ = nostr.GetPublicKey(k)
	}
	nonEmpty, identityByTag := 0, 0
	kindOf := map[string]int{}
	for _, ev := range all {
		kindOf[ev.ID] = ev.Kind
	}
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
		if flt.Tags["t"] != nil && slices.ContainsFunc(want, func(id string) bool { return protocol.IsIdentityKind(kindOf[id]) }) {
			identityByTag++ // NIP-01: #t matches identity events' own t tags too
		}
		require.Equal(t, nonNil(want), nonNil(f.query(t, flt)), "filter %d: %+v", i, flt)
	}
	for _, ev := range visible {
		require.ElementsMatch(t, stored[ev.ID], f.topics(t, ev.ID), "topics of %s", ev.ID)
	}
	require.Greater(t, nonEmpty, 150, "most random filters must match something")
	require.Greater(t, identityByTag, 5, "#t filters must find identity events by their t tags")
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

// TestTopics covers where events land: own topics, topics inherited from
// referenced events (stored or earlier in the batch; by e, a and q), identity
// events under NodeTopic from members only, the allow-list on inherited topics,
// and deletions of inherited-topic events.
func TestTopics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rules := protocol.DefaultTopicRules() // identity writers: members
	f.store.SetRules(rules)
	ok := protocol.Verdict{OK: true}
	refused := func(reason string) []protocol.Verdict { return []protocol.Verdict{{OK: false, Message: reason}} }

	// A newcomer's profile waits until they have posted in a topic.
	profile := f.event(t, 0, 0, base, nostr.Tags{topic("interests")}, `{"name":"a"}`)
	require.Equal(t, []protocol.Verdict{{OK: true, Message: MsgPending}}, f.ingest(t, profile))
	rows, _ := f.rows(t, 0)
	require.Empty(t, rows, "a pending profile is not in the outbox")
	require.Empty(t, f.query(t, nostr.Filter{Kinds: []int{0}}), "nor served")
	note := f.event(t, 0, 1, base, nostr.Tags{topic("go"), topic("nostr")}, "hello")
	require.Equal(t, []protocol.Verdict{ok, ok}, f.ingest(t, note, profile), "the note makes its author a member within the batch, which publishes the profile")
	rows, after := f.rows(t, 0)
	require.Equal(t, []string{
		"upsert " + note.ID[:8] + " go", "upsert " + note.ID[:8] + " nostr",
		"upsert " + profile.ID[:8] + " NODE 0:" + profile.PubKey,
	}, rows, "identity events are node-wide whatever their t tags say")
	var members int
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_relay.members WHERE pubkey = $1 AND first_event_id = $2", note.PubKey, note.ID).Scan(&members))
	require.Equal(t, 1, members)

	// Replies, reactions and quotes inherit; one outbox row per inherited topic.
	reaction := f.event(t, 1, 7, base+1, nostr.Tags{{"e", note.ID}, {"p", note.PubKey}}, "+")
	article := f.event(t, 2, 30023, base, nostr.Tags{{"d", "doc"}, topic("rust")}, "long")
	comment := f.event(t, 1, 1111, base+2, nostr.Tags{{"A", "30023:" + article.PubKey + ":doc"}, {"K", "30023"}}, "nice")
	quote := f.event(t, 2, 1, base+3, nostr.Tags{{"q", reaction.ID}}, "quoting a reaction")
	require.Equal(t, []protocol.Verdict{ok, ok, ok, ok}, f.ingest(t, reaction, article, comment, quote))
	rows, after = f.rows(t, after)
	require.ElementsMatch(t, []string{ // (versioned events' rows come when the batch settles its keys)
		"upsert " + reaction.ID[:8] + " go", "upsert " + reaction.ID[:8] + " nostr",
		"upsert " + article.ID[:8] + " rust 30023:" + article.PubKey + ":doc",
		"upsert " + comment.ID[:8] + " rust",
		"upsert " + quote.ID[:8] + " go", "upsert " + quote.ID[:8] + " nostr",
	}, rows)
	require.Empty(t, f.query(t, nostr.Filter{Kinds: []int{7}, Tags: nostr.TagMap{"t": {"go"}}, Limit: 10}),
		"#t matches own t tags only (NIP-01)")
	require.Equal(t, []string{note.ID}, f.query(t, nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}, Authors: []string{note.PubKey}, Limit: 10}))
	require.Equal(t, []string{reaction.ID}, f.query(t, nostr.Filter{Kinds: []int{7}, Tags: nostr.TagMap{"e": {note.ID}}, Limit: 10}))

	// Nothing to inherit from: refused with a reason that says what would do.
	orphan := f.event(t, 1, 1, base, nostr.Tags{{"e", strings.Repeat("ab", 32)}}, "reply to the unknown")
	require.Equal(t, refused(protocol.ReasonMissingTopic), f.ingest(t, orphan))
	require.Contains(t, protocol.ReasonMissingTopic, "restricted: missing topic", "a missing topic is policy, not a malformed event")
	// A reaction to a profile is node-wide, and does not make its author a member.
	outsider := f.event(t, 2, 7, base, nostr.Tags{{"e", profile.ID}}, "+")
	require.Equal(t, []protocol.Verdict{ok}, f.ingest(t, outsider))
	rows, after = f.rows(t, after)
	require.Equal(t, []string{"upsert " + outsider.ID[:8] + " NODE"}, rows)

	// The allow-list applies to inherited topics: disabled ones are dropped, and
	// an event left with none is refused.
	onlyGoRules := f.store.Rules()
	onlyGoRules.AllowedTopics = map[string]bool{"go": true}
	f.store.SetRules(onlyGoRules)
	onlyGo := f.event(t, 2, 7, base+5, nostr.Tags{{"e", note.ID}}, "+")
	require.Equal(t, []protocol.Verdict{ok}, f.ingest(t, onlyGo))
	rows, after = f.rows(t, after)
	require.Equal(t, []string{"upsert " + onlyGo.ID[:8] + " go"}, rows)
	require.Equal(t, refused(protocol.ReasonTopicNotEnabled), f.ingest(t, f.event(t, 2, 7, base+6, nostr.Tags{{"e", article.ID}}, "+")))
	onlyGoRules.AllowedTopics = nil
	f.store.SetRules(onlyGoRules)

	// Deleting an inherited-topic event: delete rows in the inherited topics; the
	// deletion itself inherits them too.
	del := f.event(t, 1, 5, base+9, nostr.Tags{{"e", reaction.ID}, {"k", "7"}}, "")
	require.Equal(t, []protocol.Verdict{ok}, f.ingest(t, del))
	rows, after = f.rows(t, after)
	require.Equal(t, []string{
		"upsert " + del.ID[:8] + " go", "upsert " + del.ID[:8] + " nostr",
		"delete " + reaction.ID[:8] + " go  nip09", "delete " + reaction.ID[:8] + " nostr  nip09",
	}, rows)
	// A deletion whose target is not here is accepted (exempt) in the person
	// scope: it has outbox rows like every other event.
	early := f.event(t, 1, 5, base+9, nostr.Tags{{"e", strings.Repeat("cd", 32)}}, "")
	require.Equal(t, []protocol.Verdict{ok}, f.ingest(t, early))
	rows, _ = f.rows(t, after)
	require.Equal(t, []string{"upsert " + early.ID[:8] + " " + protocol.NodeTopic}, rows)

	// Without the topic rule an orphan is stored without a topic.
	noTopicRules := f.store.Rules()
	noTopicRules.RequireTopic = false
	f.store.SetRules(noTopicRules)
	require.Equal(t, []protocol.Verdict{ok}, f.ingest(t, orphan))
	require.Equal(t, []string{orphan.ID}, f.query(t, nostr.Filter{IDs: []string{orphan.ID}, Limit: 1}))
	require.Empty(t, f.topics(t, orphan.ID))
}

// moderate runs ModerateTx in a transaction of its own.
func (f *fixture) moderate(t *testing.T, hide, unhide []string) map[string]Outcome {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	p, err := f.store.Publisher().ModerateTx(ctx, tx, hide, unhide)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	return p.Outcomes
}

func TestModerate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	note := f.event(t, 0, 1, base, nostr.Tags{topic("a"), topic("b")}, "rude")
	p1 := f.event(t, 1, 0, base, nil, "p1")
	p2 := f.event(t, 1, 0, base+5, nil, "p2")
	f.ingest(t, note, p1, p2)
	_, after := f.rows(t, 0)
	key := "0:" + p1.PubKey

	require.Equal(t, map[string]Outcome{note.ID: Hidden, p2.ID: Hidden}, f.moderate(t, []string{note.ID, p2.ID}, nil))
	rows, after := f.rows(t, after)
	require.ElementsMatch(t, []string{
		"delete " + note.ID[:8] + " a  moderation", "delete " + note.ID[:8] + " b  moderation",
		"delete " + p2.ID[:8] + " NODE " + key + " moderation", "upsert " + p1.ID[:8] + " NODE " + key,
	}, rows, "hiding the effective version promotes the previous one")
	require.Empty(t, f.query(t, nostr.Filter{IDs: []string{note.ID}, Limit: 10}))
	require.Equal(t, []string{p1.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Limit: 10}))
	require.Equal(t, []protocol.Verdict{{OK: false, Message: msgDeleted}}, f.ingest(t, note), "re-submitted, it stays hidden")
	require.Equal(t, map[string]Outcome{note.ID: Unchanged}, f.moderate(t, []string{note.ID}, nil), "already hidden")
	missing := strings.Repeat("ef", 32)
	require.Equal(t, map[string]Outcome{missing: NotFound}, f.moderate(t, []string{missing}, []string{missing}))

	require.Equal(t, map[string]Outcome{note.ID: Unhidden, p2.ID: Unhidden}, f.moderate(t, nil, []string{note.ID, p2.ID}))
	rows, after = f.rows(t, after)
	require.ElementsMatch(t, []string{
		"upsert " + note.ID[:8] + " a", "upsert " + note.ID[:8] + " b",
		"upsert " + p2.ID[:8] + " NODE " + key, // (an upsert with the key replaces p1, as a newer version does)
	}, rows)
	require.Equal(t, []string{note.ID}, f.query(t, nostr.Filter{IDs: []string{note.ID}, Limit: 10}))
	require.Equal(t, []string{p2.ID}, f.query(t, nostr.Filter{Kinds: []int{0}, Limit: 10}))
	require.Equal(t, map[string]Outcome{note.ID: Unchanged}, f.moderate(t, nil, []string{note.ID}), "not hidden")

	// Moderation never undoes an author's deletion.
	f.moderate(t, []string{note.ID}, nil)
	f.ingest(t, f.event(t, 0, 5, base+1, nostr.Tags{{"e", note.ID}}, ""))
	require.Equal(t, map[string]Outcome{note.ID: Unchanged}, f.moderate(t, nil, []string{note.ID}))
	require.Empty(t, f.query(t, nostr.Filter{IDs: []string{note.ID}, Limit: 10}))
}

// TestEventRowChecks: the table refuses malformed ids, pubkeys and signatures
// whoever writes them (schema 0015 made the checks cheaper, not weaker).
func TestEventRowChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hex64, hex128 := strings.Repeat("ab", 32), strings.Repeat("cd", 64)
	insert := func(id, pubkey, sig string) error {
		_, err := f.db.Pool.Exec(context.Background(), `INSERT INTO cn_relay.events (id, pubkey, kind, created_at, content, sig)
			VALUES ($1, $2, 1, 0, '', $3)`, id, pubkey, sig)
		return err
	}
	for name, row := range map[string][3]string{
		"id upper case":  {strings.ToUpper(hex64), hex64, hex128},
		"id short":       {hex64[:63], hex64, hex128},
		"id long":        {hex64 + "a", hex64, hex128},
		"id not hex":     {"g" + hex64[1:], hex64, hex128},
		"id multibyte":   {"é" + hex64[2:], hex64, hex128},
		"pubkey short":   {hex64, hex64[:62], hex128},
		"pubkey not hex": {hex64, hex64[:63] + "-", hex128},
		"sig short":      {hex64, hex64, hex128[:127]},
		"sig upper case": {hex64, hex64, strings.ToUpper(hex128)},
		"sig newline":    {hex64, hex64, hex128[:127] + "\n"},
	} {
		var pgErr *pgconn.PgError
		require.ErrorAs(t, insert(row[0], row[1], row[2]), &pgErr, name)
		require.Equal(t, "23514", pgErr.Code, name)
	}
	require.NoError(t, insert(hex64, hex64, hex128))

	for _, bad := range []string{"", "Index-v1", "-x", strings.Repeat("a", 64), "a b"} {
		_, err := f.db.Pool.Exec(context.Background(), "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ($1, 0)", bad)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, bad)
		require.Equal(t, "23514", pgErr.Code, bad)
	}
	_, err := f.db.Pool.Exec(context.Background(), "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ($1, 0)", strings.Repeat("a", 63))
	require.NoError(t, err)
}
