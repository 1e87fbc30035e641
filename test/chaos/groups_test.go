package chaos_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/textsearch"
)

// The group workload: one client holds an admin key and groupMembers member
// keys; the admin creates the chaos groups (NIP-29, open), then the client
// sends joins (9021), posts with h (kind 1, "group post ..."), the admin's
// delete-events (9005) of acknowledged posts, and leaves (9022), at random,
// each message resent until answered. The relay hosts the groups with the
// node key; a moderation rule scoped to one group (groupRule) labels that
// group's posts that carry groupWord.
var chaosGroups = []string{"chaos-g0", "chaos-g1"}

const (
	groupMembers = 4
	groupWord    = "flagged"
	// groupRule is the chaos rule set's rule scoped to chaosGroups[0].
	groupRule = `  - {name: group-flag, groups: [chaos-g0], keywords: [flagged], label: flagged, action: label}
`
)

// groupWork is what the group client knows when it is done.
type groupWork struct {
	c       *client
	admin   string
	members []string
	deletes map[string]string // 9005 id -> target
}

func newGroupWork(url string, rng *rand.Rand, id int) *groupWork {
	g := &groupWork{c: &client{id: id, url: url, key: nostr.GeneratePrivateKey(),
		rng: rand.New(rand.NewSource(rng.Int63())), sent: map[string]bool{}, acked: map[string]bool{},
		refused: map[string]string{}, deletes: map[string]string{}}, deletes: map[string]string{}}
	g.admin = g.c.key
	for range groupMembers {
		g.members = append(g.members, nostr.GeneratePrivateKey())
	}
	return g
}

// run creates the groups, then sends joins, posts, 9005s and leaves until stop.
func (g *groupWork) run(stop, deadline time.Time) {
	c := g.c
	defer func() {
		if c.conn != nil {
			c.conn.Close()
		}
	}()
	send := func(sk string, kind int, tags nostr.Tags, content string) (*nostr.Event, bool) {
		ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: content}
		_ = ev.Sign(sk)
		ok, why, answered := c.publish(ev, deadline)
		switch {
		case !answered:
			c.unanswered++
		case ok:
			c.acked[ev.ID] = true
		case strings.HasPrefix(why, "duplicate:"):
			// A join resent after its first answer was lost is stored and
			// answered "duplicate: already a member"; a join of a member is
			// refused with the same answer: stored or not, unknown here.
			c.unanswered++
		default:
			c.refused[ev.ID] = why
		}
		return ev, answered && ok
	}
	for _, id := range chaosGroups {
		send(g.admin, groups.KindCreateGroup, nostr.Tags{{"h", id}}, "")
	}
	posts := map[string][]string{} // group -> acknowledged posts not deleted by this client
	// First, whatever the load: a flagged post in each group, and a 9005 of
	// the first, so that every check below has something to check.
	for _, id := range chaosGroups {
		if ev, ok := send(g.members[0], 1, nostr.Tags{{"h", id}}, "group post "+id+" first "+groupWord); ok {
			posts[id] = append(posts[id], ev.ID)
		}
	}
	if first := posts[chaosGroups[0]]; len(first) > 0 {
		ev, _ := send(g.admin, groups.KindDeleteEvent, nostr.Tags{{"h", chaosGroups[0]}, {"e", first[0]}}, "")
		g.deletes[ev.ID] = first[0]
		posts[chaosGroups[0]] = nil
	}
	for n := 0; time.Now().Before(stop); n++ {
		id := pick(c.rng, chaosGroups)
		h := nostr.Tag{"h", id}
		member := pick(c.rng, g.members)
		switch r := c.rng.Intn(100); {
		// Joins and leaves carry their step: two in one second by one key
		// would otherwise be one event (same id), answered once as refused
		// and once as stored.
		case r < 15:
			send(member, groups.KindJoinRequest, nostr.Tags{h}, fmt.Sprint("join ", n))
		case r < 22:
			send(member, groups.KindLeaveRequest, nostr.Tags{h}, fmt.Sprint("leave ", n))
		case r < 35 && len(posts[id]) > 0:
			i := c.rng.Intn(len(posts[id]))
			target := posts[id][i]
			posts[id] = slices.Delete(posts[id], i, i+1)
			ev, _ := send(g.admin, groups.KindDeleteEvent, nostr.Tags{h, {"e", target}}, "")
			g.deletes[ev.ID] = target
		default:
			author := member
			if c.rng.Intn(4) == 0 {
				author = g.admin
			}
			text := fmt.Sprintf("group post %s %d word%d", id, n, c.rng.Intn(100))
			if c.rng.Intn(3) == 0 {
				text += " " + groupWord
			}
			if ev, ok := send(author, 1, nostr.Tags{h}, text); ok {
				posts[id] = append(posts[id], ev.ID)
			}
		}
	}
}

// checkGroups checks, once every consumer has applied the whole outbox, that
// the groups' live state equals the projection of the stored events, that
// every group post is in its group's scope only, that each acknowledged 9005
// hid its target and nothing else was hidden by the groups, and that the
// index, its group search, the moderator's group-scoped rule and trust's
// graph hold exactly the live group posts.
func checkGroups(t *testing.T, db *pgtest.DB, g *groupWork) {
	t.Helper()
	ctx := context.Background()

	live, err := groups.Live(ctx, db.Pool)
	require.NoError(t, err)
	stored, err := groups.Stored(ctx, db.Pool)
	require.NoError(t, err)
	require.Empty(t, groups.Diff(live, groups.Project(stored)), "the groups' live state equals the projection of their stored events")
	for _, id := range chaosGroups {
		require.True(t, live[id].Exists(), "group %s exists", id)
	}

	type post struct {
		ID, Group, Content, Reason string
		Live                       bool
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, tags->0->>1, content, coalesce(deleted_reason, ''), deleted_at IS NULL
		FROM cn_relay.events WHERE kind = 1 AND content LIKE 'group post %'`)
	require.NoError(t, err)
	posts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[post])
	require.NoError(t, err)

	// Scope: each post's scope rows and outbox rows name its group only.
	var wrongScope int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events e
		JOIN cn_relay.events_outbox o ON o.event_id = e.id
		WHERE e.kind = 1 AND e.content LIKE 'group post %' AND o.topic_id <> 'GROUP:' || (e.tags->0->>1)`).Scan(&wrongScope))
	require.Zero(t, wrongScope, "outbox rows of group posts outside their group's scope")

	// 9005: every acknowledged one hid its target; every hidden post was
	// named by a 9005 sent.
	targets := map[string]bool{}
	for del, target := range g.deletes {
		targets[target] = true
		if g.c.acked[del] {
			i := slices.IndexFunc(posts, func(p post) bool { return p.ID == target })
			require.GreaterOrEqual(t, i, 0, "the target of an acknowledged 9005 is stored")
			require.Equal(t, "moderation", posts[i].Reason, "the target of an acknowledged 9005 is hidden")
		}
	}
	var livePosts, hidden int
	want := map[string][]string{} // group -> live posts
	for _, p := range posts {
		if p.Live {
			livePosts++
			want[p.Group] = append(want[p.Group], p.ID)
		} else {
			hidden++
			require.True(t, targets[p.ID], "hidden group post %s was named by a 9005", p.ID)
		}
	}
	require.Positive(t, livePosts)
	require.Positive(t, hidden, "some group posts were deleted by 9005")

	// The index: each group's search answers exactly its live posts.
	q, err := textsearch.ParseQuery("group post")
	require.NoError(t, err)
	for _, id := range chaosGroups {
		var got []string
		var after *indexer.Cursor
		for {
			hits, next, err := indexer.Search(ctx, db.Pool, indexer.SearchParams{Query: q, Group: id, Limit: indexer.MaxLimit, After: after}, time.Now())
			require.NoError(t, err)
			for _, h := range hits {
				got = append(got, h.EventID)
			}
			if next == nil {
				break
			}
			after = next
		}
		sort.Strings(got)
		sort.Strings(want[id])
		require.Equal(t, want[id], got, "search in group %s finds exactly its live posts", id)
	}

	// The moderator: one live "flagged" label per live post of chaos-g0 with
	// the word, none elsewhere; a hidden one keeps the label it got (a 9005 is
	// a moderation hide), but may have been hidden before the moderator read
	// it (at most one).
	rows, err = db.Pool.Query(ctx, `SELECT tags FROM cn_relay.events WHERE kind = 1985 AND deleted_at IS NULL AND tags @> '[["l", "flagged"]]'`)
	require.NoError(t, err)
	flagged := map[string]int{}
	for rows.Next() {
		var tags nostr.Tags
		require.NoError(t, rows.Scan(&tags))
		flagged[tagValue(tags, "e")]++
	}
	require.NoError(t, rows.Err())
	var labelled int
	for _, p := range posts {
		n := 0
		if p.Group == chaosGroups[0] && strings.Contains(p.Content, groupWord) {
			n = 1
			labelled++
		}
		if p.Live {
			require.Equal(t, n, flagged[p.ID], "live 'flagged' labels of group post %s in %s", p.ID, p.Group)
		} else {
			require.LessOrEqual(t, flagged[p.ID], n, "live 'flagged' labels of hidden group post %s in %s", p.ID, p.Group)
		}
	}
	require.Positive(t, labelled)

	// Trust: exactly the live group posts are in the graph.
	rows, err = db.Pool.Query(ctx, `SELECT s.event_id FROM cn_trust.sources s JOIN cn_relay.events e ON e.id = s.event_id
		WHERE e.kind = 1 AND e.content LIKE 'group post %'`)
	require.NoError(t, err)
	inGraph, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var all []string
	for _, ids := range want {
		all = append(all, ids...)
	}
	sort.Strings(all)
	sort.Strings(inGraph)
	require.Equal(t, all, inGraph, "trust's graph holds exactly the live group posts")
	t.Logf("groups: %d posts (%d live, %d hidden by 9005), %d labelled in %s", len(posts), livePosts, hidden, labelled, chaosGroups[0])
}
