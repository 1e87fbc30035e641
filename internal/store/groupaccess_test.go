package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
)

// checkGroupReadRule checks, after a random group history (randomGroupHistory),
// that cn_relay.group_access says what the live states say (groups.Access;
// deleted groups included: read by no one),
// and that the SQL engine applies protocol.Viewer.MayReadGroup exactly: for
// an anonymous reader, each user authenticated alone, and a relay admin,
// Query, Count and SyncItems return the stored events the Go rule lets
// them read, over the rule read back from the database. It returns how many
// deleted groups the rule holds.
func checkGroupReadRule(t *testing.T, st *Store, live map[string]*groups.State, pks []string) (deleted int) {
	t.Helper()
	ctx := context.Background()
	rules, err := st.GroupAccess(ctx, nil)
	require.NoError(t, err)
	want := protocol.GroupRules{}
	for id, s := range live {
		if r, ok := groups.Access(s); ok {
			want[id] = r
		}
	}
	require.Equal(t, want, protocol.GroupRules(rules), "group_access follows the states")
	require.NotEmpty(t, rules, "the history made some group private or hidden")
	for id, r := range rules {
		if r.Deleted {
			deleted++
			require.True(t, r.Private && r.Hidden && len(r.Readers) == 0, "deleted group %s: read by no one", id)
		}
	}

	viewers := []protocol.Viewer{{}, {AllGroups: true, Authed: pks[:1]}}
	for _, pk := range pks {
		viewers = append(viewers, protocol.Viewer{Authed: []string{pk}})
	}
	kept := 0
	for _, v := range viewers {
		kept += len(requireSQLReadsAsGo(t, st, want, v))
	}
	require.Positive(t, kept, "some reader was kept from something")
	return deleted
}

// requireSQLReadsAsGo requires that the SQL engine lets v read exactly what
// the Go rule (protocol.Viewer.MayRead, with the groups' rules) lets it
// read among every stored event, on each read path: Query, Count and
// SyncItems (NIP-77). It returns the ids of the events kept from v.
func requireSQLReadsAsGo(t *testing.T, st *Store, rules protocol.GroupRules, v protocol.Viewer) (kept []string) {
	t.Helper()
	ctx := context.Background()
	all := nostr.Filter{Limit: 100_000}
	stored, _, err := st.QuerySnapshot(ctx, []nostr.Filter{all}, protocol.Viewer{Operator: true})
	require.NoError(t, err)
	var exp []string
	goRule := v
	goRule.Groups = rules
	for _, ev := range stored {
		if goRule.MayRead(ev) {
			exp = append(exp, ev.ID)
		} else {
			kept = append(kept, ev.ID)
		}
	}
	got, _, err := st.QuerySnapshot(ctx, []nostr.Filter{all}, v)
	require.NoError(t, err)
	var ids []string
	for _, ev := range got {
		ids = append(ids, ev.ID)
	}
	require.ElementsMatch(t, exp, ids, "viewer %v: REQ", v)
	n, err := st.Count(ctx, []nostr.Filter{all}, v)
	require.NoError(t, err)
	require.EqualValues(t, len(exp), n, "viewer %v: COUNT", v)
	items, err := st.SyncItems(ctx, nostr.Filter{}, v, 100_000, nil)
	require.NoError(t, err)
	ids = ids[:0]
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	require.ElementsMatch(t, exp, ids, "viewer %v: NIP-77", v)
	return kept
}

// TestReadRuleSQLIsGo: who may read an event has one home,
// protocol.Viewer.MayRead (DMs and gift wraps to their parties,
// GroupKeepsFrom for private and hidden groups, GroupRule.ReadBy for their
// members). The SQL engine repeats it (store's filterSQLWith for private
// kinds; schema.GroupReadableSQL and cn_relay.group_keeps for groups).
// Over one private, one hidden and one open group with their messages and
// state, a NIP-04 DM and a gift wrap, and every kind of reader (none, a
// member, a non-member, a relay admin, the DM's sender and recipient), the
// SQL paths return what the Go rule allows, and the Go rule allows what
// NIP-29 and NIP-17 say (checked case by case, so that both copies cannot
// agree on a wrong rule).
func TestReadRuleSQLIsGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	_, st := groupsHost(t, db, groups.Policy{})
	owner, member, outsider, wrapper := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pk := func(sk string) string { p, _ := nostr.GetPublicKey(sk); return p }
	at := nostr.Now() - 100
	sign := func(sk string, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: fmt.Sprint("content ", at)}
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
	ingest(sign(owner, groups.KindCreateGroup, h("priv")), sign(owner, groups.KindCreateGroup, h("hid")), sign(owner, groups.KindCreateGroup, h("open")))
	ingest(sign(owner, groups.KindEditMetadata, h("priv"), nostr.Tag{"private"}), sign(owner, groups.KindEditMetadata, h("hid"), nostr.Tag{"hidden"}))
	ingest(sign(owner, groups.KindPutUser, h("priv"), nostr.Tag{"p", pk(member)}), sign(owner, groups.KindPutUser, h("hid"), nostr.Tag{"p", pk(member)}))
	inPriv, inHid, inOpen := sign(member, 9, h("priv")), sign(member, 9, h("hid")), sign(member, 9, h("open"))
	dm := sign(owner, protocol.KindEncryptedDM, nostr.Tag{"p", pk(member)})
	wrap := sign(wrapper, protocol.KindGiftWrap, nostr.Tag{"p", pk(member)})
	note := sign(outsider, 1, nostr.Tag{"t", "pizza"})
	ingest(inPriv, inHid, inOpen, dm, wrap, note)

	rules, err := st.GroupAccess(ctx, nil)
	require.NoError(t, err)
	require.Len(t, rules, 2, "priv and hid have rules")
	stateOf := func(id string, kind int) string {
		var eid string
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT e.id FROM cn_relay.events e WHERE e.kind = $1 AND e.deleted_at IS NULL
			AND EXISTS (SELECT 1 FROM jsonb_array_elements(e.tags) d WHERE d->>0 = 'd' AND d->>1 = $2)`, kind, id).Scan(&eid))
		return eid
	}
	privMeta, hidMeta, openMeta := stateOf("priv", groups.KindMetadata), stateOf("hid", groups.KindMetadata), stateOf("open", groups.KindMetadata)

	type reader struct {
		name string
		v    protocol.Viewer
	}
	readers := []reader{
		{"no auth", protocol.Viewer{}},
		{"member, DM recipient", protocol.Viewer{Authed: []string{pk(member)}}},
		{"owner (member), DM sender", protocol.Viewer{Authed: []string{pk(owner)}}},
		{"non-member", protocol.Viewer{Authed: []string{pk(outsider)}}},
		{"gift wrap signer", protocol.Viewer{Authed: []string{pk(wrapper)}}},
		{"relay admin", protocol.Viewer{Authed: []string{pk(outsider)}, AllGroups: true}},
		{"non-member and member", protocol.Viewer{Authed: []string{pk(outsider), pk(member)}}},
		{"operator", protocol.Viewer{Operator: true}},
	}
	// What NIP-29 and NIP-17 say each reader gets, case by case.
	reads := map[string]map[string]bool{
		"no auth":                   {inPriv.ID: false, inHid.ID: true, inOpen.ID: true, privMeta: true, hidMeta: false, openMeta: true, dm.ID: false, wrap.ID: false, note.ID: true},
		"member, DM recipient":      {inPriv.ID: true, inHid.ID: true, inOpen.ID: true, privMeta: true, hidMeta: true, openMeta: true, dm.ID: true, wrap.ID: true, note.ID: true},
		"owner (member), DM sender": {inPriv.ID: true, inHid.ID: true, inOpen.ID: true, privMeta: true, hidMeta: true, openMeta: true, dm.ID: true, wrap.ID: false, note.ID: true},
		"non-member":                {inPriv.ID: false, inHid.ID: true, inOpen.ID: true, privMeta: true, hidMeta: false, openMeta: true, dm.ID: false, wrap.ID: false, note.ID: true},
		"gift wrap signer":          {inPriv.ID: false, inHid.ID: true, privMeta: true, hidMeta: false, dm.ID: false, wrap.ID: false},
		"relay admin":               {inPriv.ID: true, inHid.ID: true, inOpen.ID: true, privMeta: true, hidMeta: true, openMeta: true, dm.ID: false, wrap.ID: false, note.ID: true},
		"non-member and member":     {inPriv.ID: true, hidMeta: true, dm.ID: true, wrap.ID: true},
		"operator":                  {inPriv.ID: true, hidMeta: true, dm.ID: true, wrap.ID: true},
	}
	for _, r := range readers {
		kept := requireSQLReadsAsGo(t, st, protocol.GroupRules(rules), r.v)
		for id, want := range reads[r.name] {
			require.Equal(t, want, !slices.Contains(kept, id), "%s reads %s", r.name, id)
		}
	}
}
