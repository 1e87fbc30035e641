package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
)

// tagRows counts the event_tags rows of the events of kind, split into those
// of effective (or regular) events and those of versions that are not their
// key's effective version.
func tagRows(t *testing.T, db *pgtest.DB, kind int) (effective, superseded int) {
	t.Helper()
	require.NoError(t, db.Pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE e.effective_key IS NULL OR e.is_effective),
		       count(*) FILTER (WHERE e.effective_key IS NOT NULL AND NOT e.is_effective)
		FROM cn_relay.event_tags g JOIN cn_relay.events e ON e.id = g.event_id
		WHERE e.kind = $1`, kind).Scan(&effective, &superseded))
	return effective, superseded
}

// TestHostileMemberFloodKeepsOneMemberList is the member flood of issue 47:
// one member creates a group, adds many made-up keys with one kind 9000, then
// sends single-key 9000s, each of which makes the node sign a new member list
// (39002) with every p tag. Only the effective list keeps tag rows: the rows
// grow with the group, not with the group times its history.
func TestHostileMemberFloodKeepsOneMemberList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{})
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 1000
	send := func(kind int, tags nostr.Tags) {
		t.Helper()
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", "flood"}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, "kind %d: %s", kind, res[0].Message)
	}
	fake := func() string { pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey()); return pk }
	const first, singles = 300, 40
	send(groups.KindCreateGroup, nil)
	many := nostr.Tags{}
	for range first {
		many = append(many, nostr.Tag{"p", fake()})
	}
	send(groups.KindPutUser, many)
	for range singles {
		send(groups.KindPutUser, nostr.Tags{{"p", fake()}})
	}

	lists, err := st.Query(ctx, []nostr.Filter{{Kinds: []int{groups.KindMembers}, Tags: nostr.TagMap{"d": {"flood"}}}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, lists, 1)
	require.GreaterOrEqual(t, len(lists[0].Tags), first+singles+1, "the effective list names every member")
	effective, superseded := tagRows(t, db, groups.KindMembers)
	require.Zero(t, superseded, "superseded member lists keep no tag rows")
	require.Equal(t, len(lists[0].Tags), effective, "the effective list keeps one row per tag (p and d)")
	var stale int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.event_tags g JOIN cn_relay.events e ON e.id = g.event_id
		WHERE e.effective_key IS NOT NULL AND NOT e.is_effective`).Scan(&stale))
	require.Zero(t, stale, "no superseded version of any kind keeps tag rows")
	// Superseded versions of the node's own state are not kept at all (issue
	// 47: each was ~130 KB of JSON at 1,900 members): one row per key.
	var lists39002, nodeRows, nodeKeys int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = $2), count(*), count(DISTINCT effective_key)
		FROM cn_relay.events WHERE pubkey = $1 AND effective_key IS NOT NULL`, node.PubKey, groups.KindMembers).
		Scan(&lists39002, &nodeRows, &nodeKeys))
	require.Equal(t, 1, lists39002, "exactly one member list remains in cn_relay.events")
	require.Equal(t, nodeKeys, nodeRows, "one version per key of the node's state")
	// A kind 5 from the flooder naming the node's list (by id and by address)
	// deletes nothing: only the author deletes, and there is no older version
	// to promote.
	at++
	del := &nostr.Event{Kind: 5, CreatedAt: at, Tags: nostr.Tags{{"e", lists[0].ID},
		{"a", fmt.Sprintf("%d:%s:flood", groups.KindMembers, node.PubKey)}}}
	require.NoError(t, del.Sign(sk))
	_, err = st.Ingest(ctx, []*nostr.Event{del})
	require.NoError(t, err)
	again, err := st.Query(ctx, []nostr.Filter{{Kinds: []int{groups.KindMembers}, Tags: nostr.TagMap{"d": {"flood"}}}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, lists[0].ID, again[0].ID, "the node's list stays")
	// A #p filter finds the group's list by a member, and only its effective version.
	byMember, err := st.Query(ctx, []nostr.Filter{{Kinds: []int{groups.KindMembers}, Tags: nostr.TagMap{"p": {many[0][1]}}}}, protocol.Viewer{})
	require.NoError(t, err)
	require.Len(t, byMember, 1)
	require.Equal(t, lists[0].ID, byMember[0].ID)
}

// TestSupersededVersionTagRows: a version that stops being effective loses its
// tag rows, one that arrives already superseded never gets any, and one that
// becomes effective again (its successor deleted, or unhidden) gets them back,
// so #x filters find it exactly as before.
func TestSupersededVersionTagRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	x, y, z := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	px, _ := nostr.GetPublicKey(x)
	py, _ := nostr.GetPublicKey(y)
	pz, _ := nostr.GetPublicKey(z)
	v1 := f.event(t, 0, 30000, base, nostr.Tags{{"d", "list"}, {"p", px}, {"p", px}, topic("a")}, "v1")
	v2 := f.event(t, 0, 30000, base+10, nostr.Tags{{"d", "list"}, {"p", py}, topic("a")}, "v2")
	old := f.event(t, 0, 30000, base-10, nostr.Tags{{"d", "list"}, {"p", pz}, topic("a")}, "old")
	byP := func(pk string) []string {
		return f.query(t, nostr.Filter{Kinds: []int{30000}, Tags: nostr.TagMap{"p": {pk}}, Limit: 10})
	}
	f.ingest(t, v1)
	require.Equal(t, []string{v1.ID}, byP(px))
	f.ingest(t, v2)
	require.Empty(t, byP(px))
	require.Equal(t, []string{v2.ID}, byP(py))
	require.Equal(t, []protocol.Verdict{{OK: true, Message: ""}}, f.ingest(t, old), "a late older version is answered as before")
	require.Equal(t, []protocol.Verdict{{OK: true, Message: msgDuplicate}}, f.ingest(t, old), "and is a duplicate when sent again")
	effective, superseded := tagRows(t, f.db, 30000)
	require.Equal(t, 2, effective, "v2's d and p")
	require.Zero(t, superseded)

	// Hiding v2 makes v1 effective again: its rows come back (one per value).
	f.moderate(t, []string{v2.ID}, nil)
	require.Equal(t, []string{v1.ID}, byP(px))
	require.Empty(t, byP(py))
	effective, superseded = tagRows(t, f.db, 30000)
	require.Equal(t, 2, effective, "v1's d and p")
	require.Zero(t, superseded)
	// Unhiding v2 swaps them back.
	f.moderate(t, nil, []string{v2.ID})
	require.Equal(t, []string{v2.ID}, byP(py))
	require.Empty(t, byP(px))

	// Deleting v2 (NIP-09 by id) promotes v1 with its tags.
	f.ingest(t, f.event(t, 0, 5, base+20, nostr.Tags{{"e", v2.ID}, topic("a")}, ""))
	require.Equal(t, []string{v1.ID}, byP(px))
	require.Equal(t, []string{v1.ID}, f.query(t, nostr.Filter{Kinds: []int{30000}, Tags: nostr.TagMap{"d": {"list"}}, Limit: 10}))
	effective, superseded = tagRows(t, f.db, 30000)
	require.Equal(t, 2, effective)
	require.Zero(t, superseded)
}

// TestOwnStateKeepsOneVersion: versions of a key of the node's own state
// (Publisher.SetOwnState: trust's provider) are not kept once superseded, and
// one that arrives superseded is answered as a late version is but not
// stored; a client's versions of the same kind stay, as before.
func TestOwnStateKeepsOneVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	own, _ := nostr.GetPublicKey(f.keys[0])
	client, _ := nostr.GetPublicKey(f.keys[1])
	f.store.pub.SetOwnState(own)
	for _, author := range []int{0, 1} {
		for i, at := range []nostr.Timestamp{base, base + 10, base - 10} {
			ev := f.event(t, author, 30382, at, nostr.Tags{{"d", client}, {"rank", fmt.Sprint(i)}, topic("a")}, "")
			require.Equal(t, []protocol.Verdict{{OK: true}}, f.ingest(t, ev), "author %d version %d", author, i)
		}
	}
	rows := func(pk string) (n int) {
		require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE pubkey = $1`, pk).Scan(&n))
		return n
	}
	require.Equal(t, 1, rows(own), "the node's state: its effective version only")
	require.Equal(t, 3, rows(client), "a client's versions stay")
	got := f.query(t, nostr.Filter{Kinds: []int{30382}, Authors: []string{own}})
	require.Len(t, got, 1)
	_, superseded := tagRows(t, f.db, 30382)
	require.Zero(t, superseded)
}

// TestHostileMemberListsSpaced: above groups.MemberLists.Above members, a
// change to a group's members takes effect at once (the state: who may read
// and write) but its member list (39002) waits for MemberLists.Every since
// the last one; RenderDueLists signs it when due, once, in one transaction
// with the cleared mark. Smaller groups get a list per change. A group
// deleted while its list waits gets none, and nothing stays due.
func TestHostileMemberListsSpaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	node, st := groupsHost(t, db, groups.Policy{Lists: groups.MemberLists{Every: time.Hour, Above: 3}})
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 1000
	send := func(id string, kind int, tags nostr.Tags) {
		t.Helper()
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: append(nostr.Tags{{"h", id}}, tags...)}
		require.NoError(t, ev.Sign(sk))
		res, err := st.Ingest(ctx, []*nostr.Event{ev})
		require.NoError(t, err)
		require.True(t, res[0].OK, "kind %d: %s", kind, res[0].Message)
	}
	fake := func() string { pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey()); return pk }
	list := func(id string) (names int, versions int) {
		t.Helper()
		lists, err := st.Query(ctx, []nostr.Filter{{Kinds: []int{groups.KindMembers}, Tags: nostr.TagMap{"d": {id}}}}, protocol.Viewer{})
		require.NoError(t, err)
		require.Len(t, lists, 1)
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE kind = $1 AND effective_key = $2`,
			groups.KindMembers, fmt.Sprintf("%d:%s:%s", groups.KindMembers, node.PubKey, id)).Scan(&versions))
		return len(lists[0].Tags) - 1, versions
	}
	due := func(id string) (d *time.Time) {
		t.Helper()
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT list_due FROM cn_relay.groups WHERE id = $1`, id).Scan(&d))
		return d
	}
	isMember := func(id, pk string) bool {
		t.Helper()
		var raw []byte
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT cn_relay.group_state(g) FROM cn_relay.groups g WHERE id = $1`, id).Scan(&raw))
		s, err := groups.Load(raw)
		require.NoError(t, err)
		return s.IsMember(pk)
	}

	send("big", groups.KindCreateGroup, nil)
	send("big", groups.KindPutUser, nostr.Tags{{"p", fake()}, {"p", fake()}})
	n, v := list("big")
	require.Equal(t, 3, n, "at the bound, a list per change")
	require.Equal(t, 1, v)
	require.Nil(t, due("big"))

	late := []string{fake(), fake()}
	for _, pk := range late {
		send("big", groups.KindPutUser, nostr.Tags{{"p", pk}})
		require.True(t, isMember("big", pk), "the addition takes effect at once")
		// The batch wrote the group's row and the one user's row, not a row
		// per member (migration 0036): the rows it wrote carry its xmin.
		var written []string
		rows, err := db.Pool.Query(ctx, `SELECT u.pubkey FROM cn_relay.group_users u JOIN cn_relay.groups g ON g.id = u.group_id
			WHERE g.id = $1 AND u.xmin = g.xmin`, "big")
		require.NoError(t, err)
		written, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{pk}, written, "one user row written")
		var hasMembers bool
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state ? 'members' OR state ? 'requests' FROM cn_relay.groups WHERE id = $1`, "big").Scan(&hasMembers))
		require.False(t, hasMembers, "the group's row keeps no user registers")
	}
	n, _ = list("big")
	require.Equal(t, 3, n, "above the bound, the list waits")
	require.NotNil(t, due("big"))
	require.WithinDuration(t, time.Now().Add(time.Hour), *due("big"), 20*time.Minute)

	looked, err := st.RenderDueLists(ctx, time.Now(), 10)
	require.NoError(t, err)
	require.Zero(t, looked, "not due yet")
	looked, err = st.RenderDueLists(ctx, time.Now().Add(2*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, 1, looked)
	n, v = list("big")
	require.Equal(t, 5, n, "the deferred list names every member")
	require.Equal(t, 1, v, "one version kept")
	require.Nil(t, due("big"))
	looked, err = st.RenderDueLists(ctx, time.Now().Add(2*time.Hour), 10)
	require.NoError(t, err)
	require.Zero(t, looked, "signed once")
	var rows int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(DISTINCT event_id) FROM cn_relay.events_outbox
		WHERE kind = $1 AND op = 'upsert'`, groups.KindMembers).Scan(&rows))
	require.Equal(t, 3, rows, "each list signed (creation, first addition, the deferred one) went to the outbox")

	// Deleted while waiting: nothing signed, nothing left due.
	send("big", groups.KindPutUser, nostr.Tags{{"p", fake()}})
	require.NotNil(t, due("big"))
	send("big", groups.KindDeleteGroup, nil)
	looked, err = st.RenderDueLists(ctx, time.Now().Add(2*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, 1, looked)
	require.Nil(t, due("big"))
	requireProjectEqualsLive(t, db)
}
