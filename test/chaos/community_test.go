package chaos_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

// The moderation rules of the chaos run: one label per marker note, and a hide
// for a note that three distinct keys reported.
const chaosRules = `
rules:
  - {name: marker, kinds: [1], content_regex: "^marker note ", label: marked, action: label}
  - {name: reported, min_reports: 3, label: reported, action: hide}
`

const (
	honestKeys   = 12 // the community; the first two are the trust seeds
	sybilKeys    = 8  // a ring that follows itself and one more key, followed by nobody honest
	reportThresh = 3  // min_reports of the rule "reported"
)

// community holds the keys of the moderator's and trust's traffic.
type community struct {
	honest      []string // secret keys
	sybils      []string // secret keys
	sybilTarget string   // a pubkey every Sybil follows
}

func newCommunity() *community {
	cm := &community{sybilTarget: pubOf(nostr.GeneratePrivateKey())}
	for range honestKeys {
		cm.honest = append(cm.honest, nostr.GeneratePrivateKey())
	}
	for range sybilKeys {
		cm.sybils = append(cm.sybils, nostr.GeneratePrivateKey())
	}
	return cm
}

func pubOf(sk string) string { pk, _ := nostr.GetPublicKey(sk); return pk }

// follower is one author's follow lists as a community client knows them.
type follower struct {
	sk       string
	next     int64    // created_at of the next version
	versions []string // acknowledged versions not deleted, oldest first
}

// runCommunity is a community client: for the honest keys it owns it
// publishes follow lists in several versions and deletes the newest (NIP-09),
// so that the version before it becomes effective again (the outbox then reads
// `A upsert, B upsert, B delete, A upsert`); marker notes, some deleted by their
// author; plain notes with reactions; report targets with 1 to 4 reports by
// distinct keys (3 reach the hide threshold); and, from client 0, the Sybil
// ring's follow lists. Each event is resent until answered, as run does.
func (c *client) runCommunity(cm *community, own []int, sybils bool, stop, deadline time.Time) {
	defer func() {
		if c.conn != nil {
			c.conn.Close()
		}
	}()
	base := time.Now().Unix() - 100_000
	var authors []*follower
	for _, i := range own {
		authors = append(authors, &follower{sk: cm.honest[i], next: base})
	}
	ring := make([]*follower, len(cm.sybils))
	for i, sk := range cm.sybils {
		ring[i] = &follower{sk: sk, next: base}
	}
	var markers, plain []*nostr.Event // acknowledged, live
	// send signs ev (created now unless set) and publishes it.
	send := func(ev *nostr.Event, sk string) bool {
		if ev.CreatedAt == 0 {
			ev.CreatedAt = nostr.Now()
		}
		_ = ev.Sign(sk)
		ok, why, answered := c.publish(ev, deadline)
		switch {
		case !answered:
			c.unanswered++
		case ok:
			c.acked[ev.ID] = true
		default:
			c.refused[ev.ID] = why
		}
		return answered && ok
	}
	honestPub := func(except string) []string {
		var out []string
		for _, sk := range cm.honest {
			if pk := pubOf(sk); pk != except {
				out = append(out, pk)
			}
		}
		return out
	}
	// sybilList publishes a new version of Sybil i's follow list: the target
	// and up to three other members of the ring.
	sybilList := func(i int) {
		s := ring[i]
		tags := nostr.Tags{{"p", cm.sybilTarget}}
		for _, j := range c.rng.Perm(len(ring))[:3] {
			if j != i {
				tags = append(tags, nostr.Tag{"p", pubOf(ring[j].sk)})
			}
		}
		s.next++
		send(&nostr.Event{Kind: 3, CreatedAt: nostr.Timestamp(s.next), Tags: tags}, s.sk)
	}
	if sybils {
		// One version per Sybil first, so the ring exists whatever the dice
		// and the kills do to the mix below (the check needs its target
		// followed); later versions come from the mix.
		for i := range ring {
			sybilList(i)
		}
	}
	// One come-back first (A, then B, then B deleted: A is effective again),
	// so that the outbox check has one whatever the dice and the machine's
	// load do to the mix below (a loaded machine sends fewer events in the
	// window); more come from the mix.
	if len(authors) > 0 {
		a := authors[0]
		for range 2 {
			a.next++
			ev := &nostr.Event{Kind: 3, CreatedAt: nostr.Timestamp(a.next), Tags: nostr.Tags{{"p", honestPub(pubOf(a.sk))[0]}}}
			if send(ev, a.sk) {
				a.versions = append(a.versions, ev.ID)
			}
		}
		if len(a.versions) == 2 {
			del := &nostr.Event{Kind: 5, Tags: nostr.Tags{{"e", a.versions[1]}, {"k", "3"}}}
			c.deletes[del.ID] = a.versions[1]
			if send(del, a.sk) {
				a.versions = a.versions[:1]
			}
		}
	}
	for n := 0; time.Now().Before(stop); n++ {
		a := authors[c.rng.Intn(len(authors))]
		apk := pubOf(a.sk)
		switch r := c.rng.Intn(100); {
		case r < 28: // a new version of a's follow list
			others := honestPub(apk)
			c.rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
			tags := nostr.Tags{}
			for _, p := range others[:1+c.rng.Intn(4)] {
				tags = append(tags, nostr.Tag{"p", p})
			}
			a.next++
			ev := &nostr.Event{Kind: 3, CreatedAt: nostr.Timestamp(a.next), Tags: tags}
			if send(ev, a.sk) {
				a.versions = append(a.versions, ev.ID)
			}
		case r < 43: // delete a's newest follow list: the one before comes back
			if len(a.versions) < 2 {
				continue
			}
			newest := a.versions[len(a.versions)-1]
			del := &nostr.Event{Kind: 5, Tags: nostr.Tags{{"e", newest}, {"k", "3"}}}
			ok := send(del, a.sk)
			c.deletes[del.ID] = newest
			if ok {
				a.versions = a.versions[:len(a.versions)-1]
			}
		case r < 55: // a marker note
			ev := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "community"}}, Content: fmt.Sprintf("marker note %d of client %d", n, c.id)}
			if send(ev, a.sk) {
				markers = append(markers, ev)
			}
		case r < 61: // its author deletes a marker note: its label is taken back
			if len(markers) == 0 {
				continue
			}
			i := c.rng.Intn(len(markers))
			target := markers[i]
			var sk string
			for _, s := range cm.honest {
				if pubOf(s) == target.PubKey {
					sk = s
				}
			}
			del := &nostr.Event{Kind: 5, Tags: nostr.Tags{{"e", target.ID}}}
			ok := send(del, sk)
			c.deletes[del.ID] = target.ID
			if ok {
				markers = slices.Delete(markers, i, i+1)
			}
		case r < 71: // a plain note
			ev := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "community"}}, Content: fmt.Sprintf("plain note %d of client %d", n, c.id)}
			if send(ev, a.sk) {
				plain = append(plain, ev)
			}
		case r < 83: // a reaction to a plain note, by any honest key
			if len(plain) == 0 {
				continue
			}
			target := plain[c.rng.Intn(len(plain))]
			ev := &nostr.Event{Kind: 7, Tags: nostr.Tags{{"e", target.ID}, {"p", target.PubKey}}, Content: "+"}
			send(ev, cm.honest[c.rng.Intn(len(cm.honest))])
		case r < 93: // a report target and 1-4 reports by distinct keys
			target := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "community"}}, Content: fmt.Sprintf("report target %d of client %d", n, c.id)}
			if !send(target, a.sk) {
				continue
			}
			reporters := slices.Clone(cm.honest)
			c.rng.Shuffle(len(reporters), func(i, j int) { reporters[i], reporters[j] = reporters[j], reporters[i] })
			k := 1 + c.rng.Intn(reportThresh+1)
			for _, sk := range reporters {
				if k == 0 {
					break
				}
				if pubOf(sk) == apk {
					continue
				}
				send(&nostr.Event{Kind: 1984, Tags: nostr.Tags{{"e", target.ID, "spam"}, {"p", apk}}}, sk)
				k--
			}
		default: // a new version of a Sybil's follow list (client 0 only)
			if !sybils {
				continue
			}
			sybilList(c.rng.Intn(len(ring)))
		}
	}
}

// communityState is what the moderator and trust made of the traffic, read
// once every consumer has applied the whole outbox.
type communityState struct {
	followers  map[string]int64     // trust: cn_trust.subjects.followers (non-zero)
	assertions map[string][2]string // NIP-85 by the provider: d -> (rank, followers)
	ranks      map[string]int       // cn_trust.scores (non-zero)
	graph      string               // trust's tables, canonical
}

// readTrust asks trust for a computation as of asOf once every consumer has
// applied the whole outbox, waits until its results are published, and reads
// trust's view.
func readTrust(t *testing.T, db *pgtest.DB, provider string, asOf int64) communityState {
	t.Helper()
	ctx := context.Background()
	quiesce(t, db) // the computation sees the whole graph
	var req int64
	require.NoError(t, db.Pool.QueryRow(ctx, `INSERT INTO cn_trust.requests (requested_by, as_of) VALUES ('chaos', $1) RETURNING id`, asOf).Scan(&req))
	require.Eventually(t, func() bool {
		var run *int64
		err := db.Pool.QueryRow(ctx, `SELECT run_id FROM cn_trust.requests WHERE id = $1`, req).Scan(&run)
		return err == nil && run != nil
	}, 60*time.Second, 20*time.Millisecond, "trust runs the requested computation")
	quiesce(t, db)

	st := communityState{followers: map[string]int64{}, assertions: map[string][2]string{}, ranks: map[string]int{}}
	rows, err := db.Pool.Query(ctx, `SELECT k.pubkey, s.followers FROM cn_trust.subjects s JOIN cn_trust.pubkeys k ON k.id = s.id WHERE s.followers <> 0`)
	require.NoError(t, err)
	for rows.Next() {
		var pk string
		var n int64
		require.NoError(t, rows.Scan(&pk, &n))
		st.followers[pk] = n
	}
	require.NoError(t, rows.Err())
	rows, err = db.Pool.Query(ctx, `SELECT pubkey, rank FROM cn_trust.scores WHERE rank <> 0`)
	require.NoError(t, err)
	for rows.Next() {
		var pk string
		var r int
		require.NoError(t, rows.Scan(&pk, &r))
		st.ranks[pk] = r
	}
	require.NoError(t, rows.Err())
	rows, err = db.Pool.Query(ctx, `SELECT tags FROM cn_relay.events WHERE kind = 30382 AND pubkey = $1 AND is_effective AND deleted_at IS NULL`, provider)
	require.NoError(t, err)
	for rows.Next() {
		var tags nostr.Tags
		require.NoError(t, rows.Scan(&tags))
		st.assertions[tags.GetD()] = [2]string{tagValue(tags, "rank"), tagValue(tags, "followers")}
	}
	require.NoError(t, rows.Err())

	var b strings.Builder
	for _, q := range []string{
		`SELECT k.pubkey, s.kind, s.source_id, s.created_at, s.targets::text FROM cn_trust.sets s JOIN cn_trust.pubkeys k ON k.id = s.author ORDER BY 1, 2`,
		`SELECT event_id, etype, targets::text FROM cn_trust.sources ORDER BY 1`,
		`SELECT k.pubkey, s.followers, s.post_cnt, s.reply_cnt, s.reactions_cnt, s.reports_cnt_recd, s.reports_cnt_sent,
			coalesce(s.first_created_at, 0) FROM cn_trust.subjects s JOIN cn_trust.pubkeys k ON k.id = s.id ORDER BY 1`,
		`SELECT pubkey, rank, score FROM cn_trust.scores ORDER BY 1`,
	} {
		rows, err := db.Pool.Query(ctx, q)
		require.NoError(t, err)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintln(&b, vals...)
		}
		require.NoError(t, rows.Err())
	}
	st.graph = b.String()
	return st
}

func tagValue(tags nostr.Tags, name string) string {
	if tag := tags.GetFirst([]string{name, ""}); tag != nil {
		return tag.Value()
	}
	return ""
}

// quiesce waits until index-v1, moderation-v1 and trust-v1 have applied the
// whole outbox, trust has folded and published every change, and the outbox
// head stayed where it was meanwhile (the moderator's labels and trust's
// assertions are outbox rows too).
func quiesce(t *testing.T, db *pgtest.DB) int64 {
	t.Helper()
	ctx := context.Background()
	var head int64
	require.Eventually(t, func() bool {
		var h1, h2, behind, pending int64
		q := func(sql string, into *int64) bool { return db.Pool.QueryRow(ctx, sql).Scan(into) == nil }
		return q(`SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox`, &h1) &&
			q(fmt.Sprintf(`SELECT count(*) FROM cn_relay.consumer_offsets WHERE consumer IN ('index-v1', 'moderation-v1', 'trust-v1') AND last_seq >= %d`, h1), &behind) &&
			behind == 3 &&
			q(`SELECT (SELECT count(*) FROM cn_trust.subject_deltas) + (SELECT count(*) FROM cn_trust.subjects WHERE dirty)`, &pending) &&
			pending == 0 &&
			q(`SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox`, &h2) && h1 == h2 && func() bool { head = h1; return true }()
	}, 90*time.Second, 20*time.Millisecond, "the consumers apply the whole outbox and trust publishes its changes")
	return head
}

// checkCommunity checks the moderator's and trust's results against the
// stored events: one live label per live marker note (none for deleted ones),
// exactly the notes with reportThresh distinct reporters hidden (each with
// one live "reported" label), each key's followers equal to the number of
// effective follow lists naming it, and the Sybil keys unranked.
func checkCommunity(t *testing.T, db *pgtest.DB, cm *community, node string, st communityState) {
	t.Helper()
	ctx := context.Background()

	// Labels.
	labels := map[string]map[string]int{} // target -> label -> live labels
	rows, err := db.Pool.Query(ctx, `SELECT tags FROM cn_relay.events WHERE kind = 1985 AND pubkey = $1 AND deleted_at IS NULL`, node)
	require.NoError(t, err)
	for rows.Next() {
		var tags nostr.Tags
		require.NoError(t, rows.Scan(&tags))
		target, l := tagValue(tags, "e"), tagValue(tags, "l")
		if labels[target] == nil {
			labels[target] = map[string]int{}
		}
		labels[target][l]++
	}
	require.NoError(t, rows.Err())
	type note struct {
		ID, Content, Reason string
		Live                bool
	}
	rows, err = db.Pool.Query(ctx, `SELECT id, content, coalesce(deleted_reason, ''), deleted_at IS NULL FROM cn_relay.events
		WHERE kind = 1 AND (content LIKE 'marker note %' OR content LIKE 'report target %')`)
	require.NoError(t, err)
	notes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[note])
	require.NoError(t, err)
	var liveMarkers, deletedMarkers int
	for _, n := range notes {
		if strings.HasPrefix(n.Content, "marker note ") {
			want := 0
			if n.Live {
				want = 1
				liveMarkers++
			} else {
				deletedMarkers++
			}
			require.Equal(t, want, labels[n.ID]["marked"], "live labels of marker note %s (live %v)", n.ID, n.Live)
		}
	}
	require.Positive(t, liveMarkers)
	require.Positive(t, deletedMarkers)

	// Hides: exactly the report targets with reportThresh distinct reporters.
	rows, err = db.Pool.Query(ctx, `SELECT e.id, count(DISTINCT r.pubkey) FROM cn_relay.events e
		JOIN cn_relay.event_tags g ON g.name = 'e' AND g.value = e.id
		JOIN cn_relay.events r ON r.id = g.event_id AND r.kind = 1984
		WHERE e.kind = 1 AND e.content LIKE 'report target %' GROUP BY e.id`)
	require.NoError(t, err)
	reporters := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		reporters[id] = n
	}
	require.NoError(t, rows.Err())
	var wantHidden, hidden []string
	var below int
	for _, n := range notes {
		if !strings.HasPrefix(n.Content, "report target ") {
			continue
		}
		if reporters[n.ID] >= reportThresh {
			wantHidden = append(wantHidden, n.ID)
		} else if reporters[n.ID] > 0 {
			below++
		}
		if n.Reason == "moderation" {
			hidden = append(hidden, n.ID)
		}
		want := 0
		if reporters[n.ID] >= reportThresh {
			want = 1
		}
		require.Equal(t, want, labels[n.ID]["reported"], "live 'reported' labels of %s (%d reporters)", n.ID, reporters[n.ID])
	}
	var others int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE deleted_reason = 'moderation'
		AND NOT (kind = 1 AND content LIKE 'report target %') AND NOT (kind = 1 AND content LIKE 'group post %')`).Scan(&others))
	require.Zero(t, others, "hidden events that are not report targets (or group posts: checkGroups)")
	sort.Strings(wantHidden)
	sort.Strings(hidden)
	require.Equal(t, wantHidden, hidden, "exactly the notes that reached the report threshold are hidden")
	require.NotEmpty(t, hidden)
	require.Positive(t, below, "some reported notes stay below the threshold")

	// Followers: the effective, undeleted follow list of each author.
	rows, err = db.Pool.Query(ctx, `SELECT pubkey, tags FROM cn_relay.events WHERE kind = 3 AND is_effective AND deleted_at IS NULL`)
	require.NoError(t, err)
	truth := map[string]int64{}
	for rows.Next() {
		var author string
		var tags nostr.Tags
		require.NoError(t, rows.Scan(&author, &tags))
		seen := map[string]bool{}
		for _, tag := range tags {
			if len(tag) >= 2 && tag[0] == "p" && len(tag[1]) == 64 && tag[1] != author && !seen[tag[1]] {
				seen[tag[1]] = true
				truth[tag[1]]++
			}
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, truth, st.followers, "trust's followers of every key equal the current follow lists naming it")
	require.Positive(t, truth[cm.sybilTarget], "the Sybils follow their target")

	// Ranks: the Sybil ring and its target unranked, the community ranked.
	for _, sk := range cm.sybils {
		require.Zero(t, st.ranks[pubOf(sk)], "Sybil %s is unranked", pubOf(sk))
	}
	require.Zero(t, st.ranks[cm.sybilTarget], "the Sybils' target is unranked")
	var ranked int
	for _, sk := range cm.honest {
		if st.ranks[pubOf(sk)] > 0 {
			ranked++
		}
	}
	require.Positive(t, ranked, "honest keys are ranked")

	// The NIP-85 assertions: ranked subjects only, with their rank and true
	// followers; every ranked key that has followers has one.
	for pk, a := range st.assertions {
		require.Positive(t, st.ranks[pk], "asserted subject %s is ranked", pk)
		require.Equal(t, strconv.Itoa(st.ranks[pk]), a[0], "asserted rank of %s", pk)
		require.Equal(t, strconv.FormatInt(truth[pk], 10), a[1], "asserted followers of %s", pk)
	}
	for pk := range st.ranks {
		if truth[pk] > 0 {
			require.Contains(t, st.assertions, pk, "ranked %s with followers has an assertion", pk)
		}
	}
	require.NotEmpty(t, st.assertions)
}

// communityClients returns n clients for the community traffic, after the
// note clients' ids.
func communityClients(url string, rng *rand.Rand, first, n int) []*client {
	out := make([]*client, n)
	for i := range out {
		out[i] = &client{id: first + i, url: url, key: nostr.GeneratePrivateKey(),
			rng: rand.New(rand.NewSource(rng.Int63())), sent: map[string]bool{}, acked: map[string]bool{},
			refused: map[string]string{}, deletes: map[string]string{}}
	}
	return out
}
