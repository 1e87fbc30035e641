package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/schema"
)

// TestGroupOfSQLIsGroupOf: the group of an event has one home,
// protocol.GroupOf. SQL reads it back from the scope rows the store wrote
// (schema.GroupOfSQL), and rules events out of every group by kind and tags
// alone (schema.NotGroupEventSQL). Over every event stored by a history
// that has each case (a group's messages, reactions and deletions, join
// requests, the node's state events and its deletion of a deleted group's
// state by address, an identity event and a deletion with an h tag but no
// group, ordinary notes, a gift wrap), the SQL answers are the Go answers.
func TestGroupOfSQLIsGroupOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	_, st := groupsHost(t, db, groups.Policy{})
	a, b := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bpk, _ := nostr.GetPublicKey(b)
	at := nostr.Now() - 100
	sign := func(sk string, kind int, tags nostr.Tags, content string) *nostr.Event {
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
		require.NoError(t, ev.Sign(sk))
		return ev
	}
	ingest := func(evs ...*nostr.Event) {
		t.Helper()
		res, err := st.Ingest(ctx, evs)
		require.NoError(t, err)
		for i, v := range res {
			require.True(t, v.OK, "kind %d: %s", evs[i].Kind, v.Message)
		}
	}
	h := func(id string) nostr.Tag { return nostr.Tag{"h", id} }
	ingest(sign(a, groups.KindCreateGroup, nostr.Tags{h("g1")}, ""), sign(a, groups.KindCreateGroup, nostr.Tags{h("g2")}, ""))
	msg := sign(a, 9, nostr.Tags{h("g1")}, "hello group")
	note := sign(a, 1, nostr.Tags{{"t", "pizza"}}, "hello topic")
	ingest(msg, note)
	ingest(
		sign(b, 7, nostr.Tags{h("g1"), {"e", msg.ID}}, "+"),
		sign(b, groups.KindJoinRequest, nostr.Tags{h("g1")}, ""),
		sign(a, 0, nostr.Tags{h("g1")}, `{"name":"a"}`), // an identity event: its author's, never a group's
		sign(a, 1059, nostr.Tags{{"p", bpk}}, "sealed"),
	)
	ingest(
		sign(a, nostr.KindDeletion, nostr.Tags{h("g1"), {"e", msg.ID}}, ""),
		sign(a, nostr.KindDeletion, nostr.Tags{{"e", note.ID}}, ""),
		sign(a, groups.KindDeleteGroup, nostr.Tags{h("g2")}, ""), // the node deletes g2's state by address
	)

	rows, err := db.Pool.Query(ctx, "SELECT e.id, e.kind, e.tags, "+schema.GroupOfSQL("e.id")+", "+schema.NotGroupEventSQL+
		" FROM cn_relay.events e ORDER BY e.id")
	require.NoError(t, err)
	defer rows.Close()
	seen := map[string]int{}
	n := 0
	for rows.Next() {
		var id, sqlGroup string
		var kind int32
		var raw []byte
		var notGroup bool
		require.NoError(t, rows.Scan(&id, &kind, &raw, &sqlGroup, &notGroup))
		ev := &nostr.Event{ID: id, Kind: int(kind)}
		require.NoError(t, json.Unmarshal(raw, &ev.Tags))
		goGroup, grouped := protocol.GroupOf(ev)
		require.Equal(t, goGroup, sqlGroup, "event %s kind %d %v: schema.GroupOfSQL is protocol.GroupOf", id, kind, ev.Tags)
		require.False(t, notGroup && grouped, "event %s kind %d %v: schema.NotGroupEventSQL rules out a group event", id, kind, ev.Tags)
		n++
		switch {
		case grouped && groups.IsStateKind(ev.Kind):
			seen["state"]++
		case grouped && ev.Kind == nostr.KindDeletion && ev.Tags.GetFirst([]string{"a"}) != nil:
			seen["state deleted by address"]++
		case grouped && ev.Kind == nostr.KindDeletion:
			seen["deletion in a group"]++
		case grouped:
			seen["group event"]++
		case ev.Tags.GetFirst([]string{"h"}) != nil:
			seen["h tag, no group"]++
		case notGroup:
			seen["no group"]++
		}
	}
	require.NoError(t, rows.Err())
	for _, c := range []string{"state", "state deleted by address", "deletion in a group", "group event", "h tag, no group", "no group"} {
		require.Positive(t, seen[c], "no case %q among the %d events: %v", c, n, seen)
	}
}
