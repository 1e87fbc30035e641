package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var base = nostr.Timestamp(time.Now().Add(-time.Hour).Unix())

type node struct {
	db     *pgtest.DB
	store  *store.Store
	limits protocol.Limits
}

func newNode(t *testing.T) *node {
	t.Helper()
	db := pgtest.New(t)
	l := protocol.DefaultLimits()
	return &node{db: db, limits: l, store: store.New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), l.TopicRules)}
}

// importer returns an Importer on n that records refusals into *refused.
func (n *node) importer(t *testing.T, refused *[]Refusal) *Importer {
	t.Helper()
	policy, err := relayadmin.Load(context.Background(), n.db.Pool)
	require.NoError(t, err)
	return &Importer{Store: n.store, Pool: n.db.Pool, Limits: n.limits, Policy: policy, BatchSize: 3,
		OnRefused: func(r Refusal) { *refused = append(*refused, r) }}
}

func jsonLine(t *testing.T, ev *nostr.Event) string {
	t.Helper()
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return string(b)
}

// mixedFile is a file with every kind of line the importer must tell apart.
type mixedFile struct {
	text string
	// stored are the events the importer stores, in the order a relay must
	// receive them (one at a time) to end in the same state.
	stored []*nostr.Event
	// pending are the identity events the importer keeps waiting for their
	// author's first post, which the file does not hold.
	pending []*nostr.Event
	refused []Refusal
	stats   Stats
}

func newMixedFile(t *testing.T) mixedFile {
	t.Helper()
	alice, bob, carol, dave := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	note := testkit.Sign(t, alice, 1, base, nostr.Tags{{"t", "Go"}}, "a note in go")
	badSig := testkit.Sign(t, alice, 1, base+1, nostr.Tags{{"t", "go"}}, "tampered")
	badSig.Sig = strings.Repeat("0", 128)
	noTopic := testkit.Sign(t, alice, 1, base+2, nil, "no topic and nothing to inherit one from")
	profileNew := testkit.Sign(t, alice, 0, base+20, nil, `{"name":"alice v2"}`)
	profileOld := testkit.Sign(t, alice, 0, base+10, nil, `{"name":"alice v1"}`)
	reply := testkit.Sign(t, bob, 1, base+3, nostr.Tags{{"e", note.ID, "", "reply"}, {"p", note.PubKey}}, "a reply inherits go")
	doomed := testkit.Sign(t, bob, 1, base+4, nostr.Tags{{"t", "rust"}}, "deleted below")
	deletion := testkit.Sign(t, bob, 5, base+5, nostr.Tags{{"e", doomed.ID}}, "")
	later := testkit.Sign(t, carol, 1, base+7, nostr.Tags{{"t", "zig"}}, "referenced before it comes")
	early := testkit.Sign(t, bob, 7, base+6, nostr.Tags{{"e", later.ID}, {"p", later.PubKey}}, "+")
	carolProfile := testkit.Sign(t, carol, 0, base+6, nil, `{"name":"carol"}`) // before her first post
	daveProfile := testkit.Sign(t, dave, 0, base+9, nil, `{"name":"dave"}`)    // dave never posts
	expired := testkit.Sign(t, alice, 1, base+8, nostr.Tags{{"t", "go"}, {"expiration", fmt.Sprint(time.Now().Add(-time.Minute).Unix())}}, "gone")
	lines := []string{
		jsonLine(t, note),         // 1 accepted
		`{"id": "not json`,        // 2 refused
		jsonLine(t, badSig),       // 3 refused
		jsonLine(t, noTopic),      // 4 refused
		"",                        // 5 blank
		jsonLine(t, profileNew),   // 6 accepted
		jsonLine(t, profileOld),   // 7 accepted (stored, not effective)
		jsonLine(t, reply),        // 8 accepted, inherits go
		jsonLine(t, doomed),       // 9 accepted
		jsonLine(t, deletion),     // 10 accepted, deletes line 9
		jsonLine(t, note),         // 11 duplicate
		jsonLine(t, early),        // 12 retried after the file, then accepted
		jsonLine(t, carolProfile), // 13 accepted as pending, published when carol's reply is stored
		jsonLine(t, later),        // 14 accepted
		jsonLine(t, expired),      // 15 refused
		jsonLine(t, doomed),       // 16 refused: deleted
		jsonLine(t, daveProfile),  // 17 pending: waits for a first post the file does not hold
	}
	return mixedFile{
		text: strings.Join(lines, "\n") + "\n",
		// (carolProfile is published in the batch that stores later, her first
		// post, after it; early is stored by the retry after the file.)
		stored:  []*nostr.Event{note, profileNew, profileOld, reply, doomed, deletion, later, carolProfile, early},
		pending: []*nostr.Event{daveProfile},
		refused: []Refusal{
			{Line: 2, Reason: "invalid: message is not valid JSON"},
			{Line: 3, ID: badSig.ID, Reason: protocol.ReasonBadSignature},
			{Line: 4, ID: noTopic.ID, Reason: protocol.ReasonMissingTopic},
			{Line: 15, ID: expired.ID, Reason: protocol.ReasonExpired},
			{Line: 16, ID: doomed.ID, Reason: "blocked: this event was deleted"},
		},
		stats: Stats{Lines: 16, Accepted: 9, Pending: 1, Duplicates: 1, Refused: 5, Retried: 1, RetriedAccepted: 1, Reasons: map[string]int64{
			"invalid: message is not valid JSON": 1, protocol.ReasonBadSignature: 1, protocol.ReasonMissingTopic: 1,
			protocol.ReasonExpired: 1, "blocked: this event was deleted": 1,
		}},
	}
}

// counts keeps only the counts of s.
func counts(s Stats) Stats {
	return Stats{DryRun: s.DryRun, Lines: s.Lines, Accepted: s.Accepted, Pending: s.Pending, Duplicates: s.Duplicates, Refused: s.Refused,
		Retried: s.Retried, RetriedAccepted: s.RetriedAccepted, Reasons: s.Reasons}
}

// dump describes everything the store wrote that a reader or consumer can
// tell apart, independent of ingest timing and batching: events with their state, topics, tags, tombstones, members, and
// the outbox rows as a sorted multiset.
func dump(t *testing.T, db *pgtest.DB) string {
	t.Helper()
	var out []string
	for _, q := range []string{
		// (is_effective of a deleted event depends on whether it was deleted in
		// the batch that stored it; no reader looks at it.)
		`SELECT 'event ' || id || ' ' || kind || ' ' || coalesce(effective_key, '-') || ' ' ||
			CASE WHEN deleted_reason IS NULL THEN is_effective::text ELSE 'deleted ' || deleted_reason END ||
			' ' || md5(tags::text || content || sig) FROM cn_relay.events`,
		`SELECT 'topic ' || event_id || ' ' || topic_id || ' ' || own FROM cn_relay.event_topics`,
		`SELECT 'tag ' || event_id || ' ' || name || ' ' || value FROM cn_relay.event_tags`,
		`SELECT 'tomb ' || target || ' ' || pubkey || ' ' || deletion_id FROM cn_relay.deletion_targets`,
		`SELECT 'member ' || pubkey || ' ' || first_event_id FROM cn_relay.members`,
		`SELECT 'outbox ' || op || ' ' || event_id || ' ' || topic_id || ' ' || coalesce(effective_key, '-') || ' ' || coalesce(reason, '-') FROM cn_relay.events_outbox`,
	} {
		rows, err := db.Pool.Query(context.Background(), q)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		out = append(out, lines...)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// rows describes every row of the tables the store writes, every column but
// the clock's (ingested_at, deleted_at, joined_at, received_at, and
// is_effective of a deleted event, see dump), each table in its key's order,
// and the outbox rows in seq order (without the seq values): what an import
// must write exactly as the relay does, COPY or not.
func rows(t *testing.T, db *pgtest.DB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT (to_jsonb(e) - 'ingested_at' - 'deleted_at' - CASE WHEN deleted_reason IS NULL THEN '' ELSE 'is_effective' END)::text
			FROM cn_relay.events e ORDER BY id`,
		`SELECT to_jsonb(x)::text FROM cn_relay.event_topics x ORDER BY event_id, topic_id, scope`,
		`SELECT to_jsonb(x)::text FROM cn_relay.event_tags x ORDER BY event_id, name, value`,
		`SELECT to_jsonb(x)::text FROM cn_relay.deletion_targets x ORDER BY target, pubkey, deletion_id`,
		`SELECT (to_jsonb(x) - 'joined_at')::text FROM cn_relay.members x ORDER BY pubkey`,
		`SELECT (to_jsonb(x) - 'received_at')::text FROM cn_relay.pending_events x ORDER BY id`,
		`SELECT (to_jsonb(x) - 'seq' - 'ingested_at')::text FROM cn_relay.events_outbox x ORDER BY seq`,
	} {
		r, err := db.Pool.Query(context.Background(), q)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err, q)
		out = append(append(out, q), lines...)
	}
	return out
}

func TestImportMixedFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := newMixedFile(t)

	imported := newNode(t)
	var refused []Refusal
	st, err := imported.importer(t, &refused).Run(ctx, strings.NewReader(file.text))
	require.NoError(t, err)
	require.Equal(t, file.stats, counts(st))
	require.Equal(t, file.refused, refused)
	require.Positive(t, st.HeadSeq)

	// A relay given the stored events one by one ends in the same state.
	relayed := newNode(t)
	for _, ev := range file.stored {
		v, err := relayed.store.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.Equal(t, protocol.Verdict{OK: true}, v[0], ev.Content)
	}
	for _, ev := range file.pending {
		v, err := relayed.store.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, v[0].OK && strings.HasPrefix(v[0].Message, "pending:"), "%+v", v[0])
	}
	got := dump(t, imported.db)
	require.Equal(t, dump(t, relayed.db), got)
	// Row for row, column for column, and the outbox in the same seq order:
	// the import's COPY writes what the relay's INSERTs write.
	require.Equal(t, rows(t, relayed.db), rows(t, imported.db))
	require.Contains(t, got, "outbox upsert "+file.stored[3].ID+" go", "the reply inherited its topic")
	require.Contains(t, got, "outbox delete "+file.stored[4].ID+" rust - nip09", "the deletion wrote its delete row")
}

func TestImportAnnouncesTheHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := newNode(t)
	conn := n.db.Conn(t)
	_, err := conn.Exec(ctx, "LISTEN "+outbox.Channel)
	require.NoError(t, err)

	var refused []Refusal
	st, err := n.importer(t, &refused).Run(ctx, strings.NewReader(newMixedFile(t).text))
	require.NoError(t, err)
	head, err := outbox.Head(ctx, n.db.Pool)
	require.NoError(t, err)
	require.Equal(t, head, st.HeadSeq)

	// The store's writer is not running here, so the one NOTIFY is the importer's.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	note, err := conn.WaitForNotification(wctx)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(head), note.Payload)
}

func TestImportDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := newMixedFile(t)
	n := newNode(t)
	empty := dump(t, n.db)

	var refused []Refusal
	im := n.importer(t, &refused)
	im.DryRun = true
	st, err := im.Run(ctx, strings.NewReader(file.text))
	require.NoError(t, err)
	want := file.stats
	want.DryRun = true
	require.Equal(t, want, counts(st), "a dry run decides as the import would")
	require.Equal(t, file.refused, refused)
	require.Positive(t, st.OutboxRows)
	require.Zero(t, st.HeadSeq)
	require.Equal(t, empty, dump(t, n.db), "nothing written")
}

func TestImportRefusesByPolicyAndNeverStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := newNode(t)
	spammer, alice := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	spam := testkit.Sign(t, spammer, 1, base, nostr.Tags{{"t", "go"}}, "spam")
	_, err := n.db.Pool.Exec(ctx, "INSERT INTO cn_admin.pubkeys (pubkey, status, reason, actor, at) VALUES ($1, 'banned', 'spam', 'test', now())", spam.PubKey)
	require.NoError(t, err)
	protected := testkit.Sign(t, alice, 1, base, nostr.Tags{{"t", "go"}, {"-"}}, "mine only")
	ephemeral := testkit.Sign(t, alice, 20001, base, nostr.Tags{{"t", "go"}}, "now")
	ok := testkit.Sign(t, alice, 1, base+1, nostr.Tags{{"t", "go"}}, "fine")
	text := strings.Join([]string{jsonLine(t, spam), jsonLine(t, protected), jsonLine(t, ephemeral), `[]`, jsonLine(t, ok)}, "\r\n")

	var refused []Refusal
	st, err := n.importer(t, &refused).Run(ctx, strings.NewReader(text))
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Accepted)
	require.Equal(t, []Refusal{
		{Line: 1, ID: spam.ID, Reason: "blocked: this pubkey is banned from this relay"},
		{Line: 2, ID: protected.ID, Reason: ReasonProtected},
		{Line: 3, ID: ephemeral.ID, Reason: ReasonEphemeral},
		{Line: 4, Reason: "invalid: EVENT needs an event object"},
	}, refused)
}

func TestImportLongLines(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	n.limits.MaxMessageBytes = 600
	alice := nostr.GeneratePrivateKey()
	short := testkit.Sign(t, alice, 1, base, nostr.Tags{{"t", "go"}}, "short")
	long := testkit.Sign(t, alice, 1, base, nostr.Tags{{"t", "go"}}, strings.Repeat("x", 2<<20)) // longer than the read buffer
	text := jsonLine(t, long) + "\n" + jsonLine(t, short) + "\n" + jsonLine(t, long)

	var refused []Refusal
	st, err := n.importer(t, &refused).Run(context.Background(), strings.NewReader(text))
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Accepted)
	require.Equal(t, []Refusal{
		{Line: 1, Reason: "invalid: message too large (limit 600 bytes)"},
		{Line: 3, Reason: "invalid: message too large (limit 600 bytes)"},
	}, refused)
	require.Equal(t, map[string]int64{"invalid: message too large": 2}, st.Reasons)
}

func TestImportStopsOnDatabaseErrors(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	file := newMixedFile(t)
	var refused []Refusal
	im := n.importer(t, &refused)
	n.db.Pool.Close()
	st, err := im.Run(context.Background(), strings.NewReader(file.text))
	require.ErrorContains(t, err, "closed pool")
	require.Zero(t, st.Accepted)
}

func exportAll(t *testing.T, st *store.Store, f nostr.Filter) string {
	t.Helper()
	var buf bytes.Buffer
	_, err := Export(context.Background(), st.Reader, f, &buf)
	require.NoError(t, err)
	return buf.String()
}

func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newNode(t)
	var refused []Refusal
	_, err := src.importer(t, &refused).Run(ctx, strings.NewReader(newMixedFile(t).text))
	require.NoError(t, err)

	exported := exportAll(t, src.store, nostr.Filter{})
	// Visible events only: no deleted note, no superseded profile.
	lines := strings.Split(strings.TrimSuffix(exported, "\n"), "\n")
	require.Len(t, lines, 7)
	var prev *nostr.Event
	for _, l := range lines {
		var ev nostr.Event
		require.NoError(t, json.Unmarshal([]byte(l), &ev))
		ok, err := ev.CheckSignature()
		require.NoError(t, err)
		require.True(t, ok)
		if prev != nil {
			require.True(t, prev.CreatedAt < ev.CreatedAt || (prev.CreatedAt == ev.CreatedAt && prev.ID < ev.ID), "oldest first")
		}
		prev = &ev
	}

	dst := newNode(t)
	refused = nil
	st, err := dst.importer(t, &refused).Run(ctx, strings.NewReader(exported))
	require.NoError(t, err)
	require.Empty(t, refused)
	require.Equal(t, int64(7), st.Accepted)
	require.Equal(t, exported, exportAll(t, dst.store, nostr.Filter{}), "export, import, export gives the same file")

	// A filter exports what a REQ returns, oldest first.
	for _, f := range []nostr.Filter{
		{Tags: nostr.TagMap{"t": {"go"}}},
		{Kinds: []int{0}},
		{Kinds: []int{1}, Limit: 2},
		{Since: &[]nostr.Timestamp{base + 4}[0], Until: &[]nostr.Timestamp{base + 7}[0]},
	} {
		var want []string
		req := f
		if req.Limit == 0 {
			req.Limit = 1000
		}
		evs, err := src.store.Query(ctx, []nostr.Filter{req}, protocol.Viewer{Operator: true})
		require.NoError(t, err)
		slices.SortFunc(evs, func(a, b *nostr.Event) int {
			if a.CreatedAt != b.CreatedAt {
				return int(a.CreatedAt - b.CreatedAt)
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, ev := range evs {
			want = append(want, ev.ID)
		}
		var got []string
		require.NoError(t, src.store.Export(ctx, f, func(ev *nostr.Event) error {
			got = append(got, ev.ID)
			return nil
		}))
		require.Equal(t, want, got, "%+v", f)
		require.NotEmpty(t, got, "%+v", f)
	}
}

func TestImportKeepsStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := newNode(t)
	var file bytes.Buffer
	require.NoError(t, writeCorpus(&file, 1500, 20, time.Now().Add(-time.Minute)))

	var refused []Refusal
	var analyzed []string
	im := n.importer(t, &refused)
	im.BatchSize = 500
	im.OnAnalyzed = func(a store.Analyzed) { analyzed = append(analyzed, a.Table) }
	st, err := im.Run(ctx, &file)
	require.NoError(t, err)
	require.Empty(t, refused, "the corpus is valid under the relay's rules")
	require.Equal(t, int64(1500), st.Accepted)
	require.Contains(t, analyzed, "cn_relay.events")
	var last *time.Time
	require.NoError(t, n.db.Pool.QueryRow(ctx,
		"SELECT last_analyze FROM pg_stat_all_tables WHERE relid = 'cn_relay.events'::regclass").Scan(&last))
	require.NotNil(t, last, "REQs after the import have statistics")
}

// TestImportStoresWhileStatisticsAreChecked: a statistics check during the
// import runs alongside the batches, which do not wait for it. The check is
// held up (a lock on cn_relay.events that ANALYZE waits for, for at most its
// lock_timeout of 2 s) until every batch is stored; batches that waited for it
// would never get there, and the check would fail the import.
func TestImportStoresWhileStatisticsAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := newNode(t)
	var file bytes.Buffer
	require.NoError(t, writeCorpus(&file, 500, 10, time.Now().Add(-time.Minute)))
	lines := strings.SplitAfter(file.String(), "\n")
	first, rest := strings.Join(lines[:200], ""), strings.Join(lines[200:], "")

	// The first 200 events make cn_relay.events stale (never analysed, more
	// than 100 rows changed), once the backends published their counters.
	var refused []Refusal
	im := n.importer(t, &refused)
	im.BatchSize, im.StatsEvery = 200, -1
	_, err := im.Run(ctx, strings.NewReader(first))
	require.NoError(t, err)
	flushStats(ctx, n.db.Pool)

	lock, err := n.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, "LOCK TABLE cn_relay.events IN SHARE UPDATE EXCLUSIVE MODE")
	require.NoError(t, err)

	var analyzed []string
	im = n.importer(t, &refused)
	im.BatchSize, im.StatsEvery = 50, time.Nanosecond
	im.OnAnalyzed = func(a store.Analyzed) { analyzed = append(analyzed, a.Table) }
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := im.Run(ctx, strings.NewReader(rest))
		done <- result{st, err}
	}()
	// Every event stored and ANALYZE waiting for the lock: the batches went
	// on while the check was held up.
	require.Eventually(t, func() bool {
		select {
		case r := <-done:
			done <- r
			return true // the import ended first: checked below
		default:
		}
		var stored int
		var waiting bool
		require.NoError(t, n.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM cn_relay.events),
			EXISTS (SELECT FROM pg_locks WHERE relation = 'cn_relay.events'::regclass AND NOT granted)`).Scan(&stored, &waiting))
		return stored == 500 && waiting
	}, time.Minute, 10*time.Millisecond)
	select {
	case r := <-done:
		require.NoError(t, r.err, "the import ended before the check was let go")
		t.Fatal("the import ended before the check was let go")
	default:
	}
	require.NoError(t, lock.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, refused, "the corpus is valid under the relay's rules")
	require.Equal(t, int64(300), r.st.Accepted)
	require.Contains(t, analyzed, "cn_relay.events")
}
