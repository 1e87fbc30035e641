package trust

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const asOf = 1_700_000_000

// env is a test database with a store (identity events from anyone) and the
// trust consumer run on demand.
type env struct {
	db    *pgtest.DB
	store *store.Store
	node  nodekey.Key
	graph *Graph
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	rules := protocol.DefaultTopicRules()
	rules.IdentityWriters = protocol.IdentityWritersAny
	node, err := nodekey.FromSecret(nostr.GeneratePrivateKey())
	require.NoError(t, err)
	w := testkit.RunWriter(t, db.Pool)
	return &env{db: db, store: store.New(db.Pool, w, rules), node: node, graph: &Graph{NodePubKey: node.PubKey}}
}

func (e *env) ingest(t *testing.T, evs ...*nostr.Event) {
	t.Helper()
	for len(evs) > 0 {
		n := min(len(evs), 50)
		res, err := e.store.Ingest(context.Background(), evs[:n])
		require.NoError(t, err)
		for i, v := range res {
			require.True(t, v.OK || strings.HasPrefix(v.Message, "duplicate") || strings.HasPrefix(v.Message, "blocked: "), "%s: %s", evs[i].ID, v.Message)
		}
		evs = evs[n:]
	}
}

// sync runs the trust consumer until it has applied the whole outbox.
func (e *env) sync(t *testing.T, batch int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := consumer.New(e.db.Pool, e.graph, consumer.Config{Name: ConsumerName, LeaseTTL: time.Second, BatchSize: batch, RetryBase: 10 * time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	head, err := outbox.Head(ctx, e.db.Pool)
	require.NoError(t, err)
	testkit.WaitOffset(t, e.db.Pool, ConsumerName, head)
	cancel()
	require.NoError(t, <-done)
	_, err = Fold(context.Background(), e.db.Pool) // as the publisher does before each round
	require.NoError(t, err)
}

func (e *env) recompute(t *testing.T, seeds ...string) Computation {
	t.Helper()
	src := "flag"
	if len(seeds) == 0 {
		src = "uniform"
	}
	run, err := Recompute(context.Background(), e.db.Pool, Seeds{Pubkeys: seeds, Source: src}, DefaultParams(), asOf, 0)
	require.NoError(t, err)
	return run
}

func note(t testing.TB, sk string, at int64) *nostr.Event {
	return testkit.Sign(t, sk, 1, at, nostr.Tags{{"t", "trust"}}, fmt.Sprint("note ", at))
}

// counts reads a subject's counters.
func (e *env) counts(t *testing.T, pubkey string) map[string]int64 {
	t.Helper()
	s, err := explain(e, pubkey)
	if err == ErrUnknown {
		return nil
	}
	require.NoError(t, err)
	return s.Counts
}

func explain(e *env, pubkey string) (*Subject, error) {
	tx, err := e.db.Pool.Begin(context.Background())
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	return Explain(context.Background(), tx, pubkey, true)
}

func TestFollowListsReplaceEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := testkit.SecretKeys(4)
	a, b, c, d := k[0], testkit.Pub(k[1]), testkit.Pub(k[2]), testkit.Pub(k[3])
	e.ingest(t, testkit.Follows(t, a, 100, b, c))
	e.sync(t, 0)
	require.Equal(t, int64(1), e.counts(t, b)["followers"])
	require.Equal(t, int64(1), e.counts(t, c)["followers"])

	// A newer version replaces the edges; an older one arriving later changes nothing.
	e.ingest(t, testkit.Follows(t, a, 200, c, d), testkit.Follows(t, a, 150, b))
	e.sync(t, 1)
	require.Equal(t, int64(0), e.counts(t, b)["followers"])
	require.Equal(t, int64(1), e.counts(t, c)["followers"])
	require.Equal(t, int64(1), e.counts(t, d)["followers"])
	var n int
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM cn_trust.sets`).Scan(&n))
	require.Equal(t, 1, n)

	// Deleting the effective version (NIP-09 by a) falls back to the next one,
	// as the store does: the store re-announces the 150 version.
	var latest string
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT source_id FROM cn_trust.sets`).Scan(&latest))
	e.ingest(t, testkit.Sign(t, a, 5, 300, nostr.Tags{{"e", latest}}, ""))
	e.sync(t, 0)
	require.Equal(t, int64(1), e.counts(t, b)["followers"], "the remaining version follows b")
	require.Equal(t, int64(0), e.counts(t, c)["followers"])
	require.Equal(t, int64(0), e.counts(t, d)["followers"])
}

func TestDeletingAReactionOrReportRemovesItsEffect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := testkit.SecretKeys(3)
	seed, a, b := k[0], k[1], k[2]
	n := note(t, b, 100)
	e.ingest(t, testkit.Follows(t, seed, 100, testkit.Pub(a), testkit.Pub(b)), n)
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(seed))
	s0, err := explain(e, testkit.Pub(b))
	require.NoError(t, err)
	reaction := testkit.Sign(t, a, 7, 110, nostr.Tags{{"e", n.ID}, {"p", testkit.Pub(b)}}, "+")
	report := testkit.Sign(t, a, 1984, 120, nostr.Tags{{"e", n.ID, "spam"}, {"p", testkit.Pub(b)}}, "")
	e.ingest(t, reaction, report)
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(seed))
	s, err := explain(e, testkit.Pub(b))
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Counts["reactions_cnt"])
	require.NotEqual(t, s0.Score, s.Score, "the reaction and the report moved the score")
	require.Equal(t, int64(1), s.Counts["reports_cnt_recd"])
	require.Equal(t, map[string]int64{"spam": 1}, s.Reports)
	require.Greater(t, s.Risk, 0.0, "a ranked reporter's report is a risk")
	require.Equal(t, int64(1), e.counts(t, testkit.Pub(a))["reports_cnt_sent"])

	e.ingest(t, testkit.Sign(t, a, 5, 130, nostr.Tags{{"e", reaction.ID}, {"e", report.ID}}, ""))
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(seed))
	s, err = explain(e, testkit.Pub(b))
	require.NoError(t, err)
	require.Equal(t, int64(0), s.Counts["reactions_cnt"])
	require.Equal(t, int64(0), s.Counts["reports_cnt_recd"])
	require.Empty(t, s.Reports)
	require.Equal(t, 0.0, s.Risk)
	require.Equal(t, s0.Score, s.Score, "withdrawn, they leave the score exactly as before")
	require.Equal(t, s0.Rank, s.Rank)
	require.Equal(t, int64(0), e.counts(t, testkit.Pub(a))["reports_cnt_sent"])
	var sources int
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM cn_trust.sources WHERE etype <> 1`).Scan(&sources))
	require.Equal(t, 0, sources)
}

// corpus is a random community: follow lists (with replacements), posts,
// reactions, replies, reports, zaps and deletions.
func corpus(t testing.TB, rng *rand.Rand, users []string, n int) []*nostr.Event {
	var out []*nostr.Event
	var notes []*nostr.Event
	for i := 0; i < n; i++ {
		at := int64(1000 + i)
		u := users[rng.IntN(len(users))]
		switch x := rng.IntN(10); {
		case x < 3:
			var tg []string
			for j := 0; j < 1+rng.IntN(6); j++ {
				tg = append(tg, testkit.Pub(users[rng.IntN(len(users))]))
			}
			out = append(out, testkit.Follows(t, u, at-int64(rng.IntN(300)), tg...))
		case x < 5 || len(notes) == 0:
			ev := note(t, u, at)
			notes = append(notes, ev)
			out = append(out, ev)
		case x < 7:
			target := notes[rng.IntN(len(notes))]
			out = append(out, testkit.Sign(t, u, 7, at, nostr.Tags{{"e", target.ID}, {"p", target.PubKey}}, "+"))
		case x < 8:
			target := notes[rng.IntN(len(notes))]
			out = append(out, testkit.Sign(t, u, 1984, at, nostr.Tags{{"e", target.ID, "spam"}, {"p", target.PubKey}}, ""))
		case x < 9:
			target := notes[rng.IntN(len(notes))]
			out = append(out, testkit.Sign(t, u, 1, at, nostr.Tags{{"e", target.ID, "", "reply"}, {"p", target.PubKey}}, "re"))
		default:
			// Deletes one of the author's earlier events, if any.
			for j := len(out) - 1; j >= 0; j-- {
				if out[j].PubKey == testkit.Pub(u) && out[j].Kind != 5 {
					out = append(out, testkit.Sign(t, u, 5, at, nostr.Tags{{"e", out[j].ID}}, ""))
					break
				}
			}
		}
	}
	return out
}

// dump is the canonical state of the trust tables: by pubkey, never by id.
func (e *env) dump(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	for _, q := range []string{
		`SELECT k.pubkey, s.followers, s.post_cnt, s.reply_cnt, s.reactions_cnt, s.reports_cnt_recd, s.reports_cnt_sent,
			s.zap_cnt_recd, s.zap_amt_recd, s.zap_cnt_sent, s.zap_amt_sent, coalesce(s.first_created_at, 0)
			FROM cn_trust.subjects s JOIN cn_trust.pubkeys k ON k.id = s.id
			WHERE (s.followers, s.post_cnt, s.reply_cnt, s.reactions_cnt, s.reports_cnt_recd, s.reports_cnt_sent) <> (0, 0, 0, 0, 0, 0)
			   OR s.first_created_at IS NOT NULL ORDER BY 1`,
		`SELECT a.pubkey, s.kind, s.source_id, s.created_at, ARRAY(SELECT k.pubkey FROM cn_trust.pubkeys k WHERE k.id = ANY(s.targets) ORDER BY 1)
			FROM cn_trust.sets s JOIN cn_trust.pubkeys a ON a.id = s.author ORDER BY 1, 2`,
		`SELECT s.event_id, a.pubkey, s.etype, s.created_at, s.amount_msat, coalesce(s.report_type, ''),
			ARRAY(SELECT k.pubkey FROM cn_trust.pubkeys k WHERE k.id = ANY(s.targets) ORDER BY 1)
			FROM cn_trust.sources s JOIN cn_trust.pubkeys a ON a.id = s.author ORDER BY 1`,
		`SELECT pubkey, rank, score::text, risk::text FROM cn_trust.scores ORDER BY 1`,
	} {
		rows, err := e.db.Pool.Query(ctx, q)
		require.NoError(t, err)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintln(&sb, vals...)
		}
		require.NoError(t, rows.Err())
		sb.WriteString("--\n")
	}
	return sb.String()
}

// TestReplayEquivalence: live scores equal the scores after a replay from the
// earliest offset into emptied tables, and equal those of a node that received
// the same events in another order, in other batches.
func TestReplayEquivalence(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	users := testkit.SecretKeys(30)
	evs := corpus(t, rng, users, 600)
	seeds := []string{testkit.Pub(users[0]), testkit.Pub(users[1])}

	live := newEnv(t)
	// The node's member lists, re-signed per added member and removed when
	// superseded (issue 47): upsert rows whose events are gone on replay.
	testkit.HostGroups(t, live.store, testkit.GroupOpts{Node: live.node})
	testkit.GroupFlood(t, live.store, "flood", 5, nostr.Now()-100_000)
	for i := 0; i < len(evs); i += 97 { // the consumer follows along in small steps
		live.ingest(t, evs[i:min(i+97, len(evs))]...)
		live.sync(t, 7)
	}
	live.recompute(t, seeds...)
	want := live.dump(t)
	require.Contains(t, want, " 3 ", "the corpus has follow sets")

	// Replay from the earliest offset into empty tables.
	ctx := context.Background()
	_, err := live.db.Pool.Exec(ctx, `TRUNCATE cn_trust.sets, cn_trust.sources, cn_trust.subjects, cn_trust.scores, cn_trust.pubkeys;
		UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'trust-v1'`)
	require.NoError(t, err)
	live.graph = &Graph{NodePubKey: live.node.PubKey} // its id cache belonged to the old tables
	live.sync(t, 500)
	live.recompute(t, seeds...)
	require.Equal(t, want, live.dump(t), "replay from the earliest offset")

	// Replaying again over the tables as they are changes nothing.
	_, err = live.db.Pool.Exec(ctx, `UPDATE cn_relay.consumer_offsets SET last_seq = 0 WHERE consumer = 'trust-v1'`)
	require.NoError(t, err)
	live.sync(t, 13)
	live.recompute(t, seeds...)
	require.Equal(t, want, live.dump(t), "replay over applied rows")

	// Another node, events in another order and other batches: follow list
	// versions shuffled (older after newer), reactions, reports and replies
	// shuffled after the notes they need for a topic, deletions last. The
	// same stored events give the same graph and bit-identical scores.
	other := newEnv(t)
	stage := func(ev *nostr.Event) int {
		switch {
		case ev.Kind == 1 && ev.Tags.GetFirst([]string{"e", ""}) == nil:
			return 0
		case ev.Kind == 5:
			return 2
		}
		return 1
	}
	shuffled := slices.Clone(evs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	slices.SortStableFunc(shuffled, func(a, b *nostr.Event) int { return stage(a) - stage(b) })
	other.ingest(t, shuffled...)
	other.sync(t, 0)
	other.recompute(t, seeds...)
	got := other.dump(t)
	require.Equal(t, scoresOf(want), scoresOf(got), "scores do not depend on arrival order")
}

// scoresOf keeps the scores section of a dump.
func scoresOf(dump string) string {
	parts := strings.Split(dump, "--\n")
	return parts[3]
}

// TestSybilResistance: a ring of 1,000 fresh keys that follow each other and
// one target, with no edge from the seeded component, leaves the target at the
// floor, and their reports neither raise a well-ranked user's risk nor lower
// their rank.
func TestSybilResistance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	honest := testkit.SecretKeys(20)
	var evs []*nostr.Event
	for i, sk := range honest { // a small, well-connected community
		evs = append(evs, testkit.Follows(t, sk, 100, testkit.Pub(honest[(i+1)%len(honest)]), testkit.Pub(honest[(i+3)%len(honest)]), testkit.Pub(honest[0])))
	}
	victim := honest[5]
	victimNote := note(t, victim, 100)
	evs = append(evs, victimNote)
	target := nostr.GeneratePrivateKey()
	ring := testkit.SecretKeys(1000)
	for i, sk := range ring {
		evs = append(evs, testkit.Follows(t, sk, 100, testkit.Pub(ring[(i+1)%len(ring)]), testkit.Pub(ring[(i+7)%len(ring)]), testkit.Pub(target)))
	}
	e.ingest(t, evs...)
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(honest[0]))
	before, err := explain(e, testkit.Pub(victim))
	require.NoError(t, err)
	require.Greater(t, before.Rank, 50)

	var reports []*nostr.Event
	for _, sk := range ring {
		reports = append(reports, testkit.Sign(t, sk, 1984, 200, nostr.Tags{{"e", victimNote.ID, "spam"}, {"p", testkit.Pub(victim)}}, ""))
	}
	e.ingest(t, reports...)
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(honest[0]))

	tgt, err := explain(e, testkit.Pub(target))
	require.NoError(t, err)
	require.Equal(t, 0, tgt.Rank, "a ring with no edge from the seeds stays at the floor")
	require.Equal(t, int64(1000), tgt.Counts["followers"])
	for _, sk := range ring[:10] {
		s, err := explain(e, testkit.Pub(sk))
		require.NoError(t, err)
		require.Equal(t, 0, s.Rank)
	}
	after, err := explain(e, testkit.Pub(victim))
	require.NoError(t, err)
	require.Equal(t, int64(1000), after.Counts["reports_cnt_recd"])
	require.Equal(t, 0.0, after.Risk, "reports from unranked keys carry no weight")
	require.Equal(t, before.Rank, after.Rank)
}

// TestComputeIsDeterministic: the same graph gives bit-identical results
// whatever the order of its rows and the number of workers.
func TestComputeIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 50_000 // several chunks
	in := &Input{Pubkeys: make([]string, n), Follows: make([][]int32, n), Mutes: make([][]int32, n)}
	for v := range in.Pubkeys {
		in.Pubkeys[v] = fmt.Sprintf("%064d", v)
		var ts []int32
		for j := 0; j < rng.IntN(20); j++ {
			ts = append(ts, int32(rng.IntN(n)))
		}
		slices.Sort(ts)
		in.Follows[v] = slices.Compact(ts)
	}
	for i := 0; i < 20_000; i++ {
		in.Interactions = append(in.Interactions, Interaction{From: int32(rng.IntN(n)), To: int32(rng.IntN(n)), Count: 1})
		in.Reports = append(in.Reports, Report{EventID: strconv.Itoa(i), Reporter: int32(rng.IntN(n)), Subject: int32(rng.IntN(n)), CreatedAt: int64(rng.IntN(asOf))})
	}
	in.Mutes[3] = []int32{4, 5}
	in.Seeds = []int32{0, 1, 2}
	want := Compute(in, DefaultParams(), asOf)
	require.Greater(t, want.Iterations, 5)

	shuffled := *in
	shuffled.Interactions = slices.Clone(in.Interactions)
	shuffled.Reports = slices.Clone(in.Reports)
	rng.Shuffle(len(shuffled.Interactions), func(i, j int) {
		shuffled.Interactions[i], shuffled.Interactions[j] = shuffled.Interactions[j], shuffled.Interactions[i]
	})
	rng.Shuffle(len(shuffled.Reports), func(i, j int) { shuffled.Reports[i], shuffled.Reports[j] = shuffled.Reports[j], shuffled.Reports[i] })
	prev := runtime.GOMAXPROCS(1)
	got := Compute(&shuffled, DefaultParams(), asOf)
	runtime.GOMAXPROCS(prev)
	require.Equal(t, want.Score, got.Score)
	require.Equal(t, want.Rank, got.Rank)
	require.Equal(t, want.Risk, got.Risk)
}

func TestClaimTagsAndProfile(t *testing.T) {
	t.Parallel()
	first := int64(42)
	s := &pending{subject: strings.Repeat("a", 64), rank: 7, counts: [10]int64{1, 2, 3, 4, 5, 6, 7, 8000, 9, 10000}, first: &first}
	tags := claimTags(s)
	raw, _ := json.Marshal(tags)
	require.Equal(t, `[["d","`+s.subject+`"],["rank","7"],["followers","1"],["post_cnt","2"],["reply_cnt","3"],["reactions_cnt","4"],`+
		`["reports_cnt_recd","5"],["reports_cnt_sent","6"],["zap_cnt_recd","7"],["zap_amt_recd","8"],["zap_cnt_sent","9"],`+
		`["zap_amt_sent","10"],["first_created_at","42"]]`, string(raw))
	var profile map[string]string
	require.NoError(t, json.Unmarshal([]byte(ProviderProfile("Test node")), &profile))
	require.Contains(t, profile["name"], "trust-v1")
}

// TestOlderSetVersionNeverReplacesNewer: rows naming an older version after a
// newer one (not what the store announces, but what a handler must survive)
// leave the newer version in place.
func TestOlderSetVersionNeverReplacesNewer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := testkit.SecretKeys(3)
	newer, older := testkit.Follows(t, k[0], 200, testkit.Pub(k[1])), testkit.Follows(t, k[0], 100, testkit.Pub(k[2]))
	e.ingest(t, newer, older) // both stored, the newer effective
	ctx := context.Background()
	tx, err := e.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	rows := []outbox.Row{{Seq: 1, Op: outbox.OpUpsert, EventID: newer.ID, Kind: 3}, {Seq: 2, Op: outbox.OpUpsert, EventID: older.ID, Kind: 3}}
	require.NoError(t, e.graph.Handle(ctx, tx, rows))
	require.NoError(t, e.graph.Handle(ctx, tx, rows[1:]))
	var source string
	require.NoError(t, tx.QueryRow(ctx, `SELECT source_id FROM cn_trust.sets`).Scan(&source))
	require.Equal(t, newer.ID, source)
}

// TestFollowListThatComesBackInOneBatch: follow list A, a newer list B that
// replaces it, B deleted (NIP-09), so the store makes A effective again. The
// outbox reads `A upsert, B upsert, B delete, A upsert`; applied in one batch
// (as after a restart or on every replay) or row by row, A's edges must end in
// the graph.
func TestFollowListThatComesBackInOneBatch(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 1} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			k := testkit.SecretKeys(4)
			author, x, y := k[0], testkit.Pub(k[1]), testkit.Pub(k[2])
			a := testkit.Follows(t, author, 100, x)
			b := testkit.Follows(t, author, 200, x, y)
			e.ingest(t, a)
			e.ingest(t, b)
			e.ingest(t, testkit.Sign(t, author, 5, 300, nostr.Tags{{"e", b.ID}}, ""))

			ctx := context.Background()
			rows, err := outbox.ReadAfter(ctx, e.db.Pool, 0, 100, nil)
			require.NoError(t, err)
			var shape []string
			for _, r := range rows {
				if r.Kind == 3 {
					name := map[string]string{a.ID: "A", b.ID: "B"}[r.EventID]
					shape = append(shape, name+" "+string(r.Op))
				}
			}
			require.Equal(t, []string{"A upsert", "B upsert", "B delete", "A upsert"}, shape, "the outbox shape under test")

			e.sync(t, batch)
			require.Equal(t, int64(1), e.counts(t, x)["followers"], "A follows x")
			require.Zero(t, e.counts(t, y)["followers"], "only the deleted B followed y")
			var source string
			require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT source_id FROM cn_trust.sets`).Scan(&source))
			require.Equal(t, a.ID, source, "A is the effective follow list again")
		})
	}
}
