package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/pgtest"
)

// page is a paged list's answer as a client reads it (local types: the test
// reads the HTTP API only).
type page struct {
	Items []struct {
		ID          string `json:"id"`
		Pubkey      string `json:"pubkey"`
		EventID     string `json:"event_id"`
		MemberCount int    `json:"member_count"`
		Members     []struct {
			Pubkey string   `json:"pubkey"`
			Roles  []string `json:"roles"`
		} `json:"members"`
	} `json:"items"`
	Next string `json:"next"`
}

// walk reads every page of a list with limit rows a page and returns the
// key of each row, in order; every page but the last is full.
func walk(t *testing.T, base, path string, limit int, key func(p page, i int) string) []string {
	t.Helper()
	var keys []string
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "the cursor never ends")
		u := fmt.Sprintf("%s%s&limit=%d&after=%s", base, path, limit, url.QueryEscape(after))
		var p page
		require.Equal(t, http.StatusOK, get(t, u, &p), u)
		require.LessOrEqual(t, len(p.Items), limit, u)
		for i := range p.Items {
			keys = append(keys, key(p, i))
		}
		if p.Next == "" {
			return keys
		}
		require.Len(t, p.Items, limit, "a page before the last is full: %s", u)
		after = p.Next
	}
}

// TestConsolePaging: every list of the console comes a page at a time in a
// stable order (groups by id, community members newest first, a group's
// members admins first, the NIP-43 lists, the moderation queue), the pages
// together hold each row once, a search narrows the groups and members, and a
// bad limit, cursor or search is answered 400 with a JSON error (issue 47:
// the old API returned every group at once, 644 KB for 672 groups).
func TestConsolePaging(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	base := serve(t, db)
	q := "?token=" + token

	// 230 groups; "big" has 45 members, 3 of them admins.
	var ids []string
	rows := [][]any{}
	for i := range 230 {
		id := fmt.Sprintf("g%04d", i)
		s := groups.New(id)
		s.Created = groups.Stamp{At: int64(1000 + i), ID: hex64('1')}
		s.Meta = groups.Metadata{Name: fmt.Sprintf("Group number %d", i), AllKinds: true}
		ids = append(ids, id)
		rows = append(rows, []any{id, s.Dump(), time.Now()})
	}
	big := groups.New("big")
	big.Meta.AllKinds = true
	var admins, plain []string
	for i := range 45 {
		pk := fmt.Sprintf("%064x", 1000+i*7919)
		m := groups.Membership{In: true, Stamp: groups.Stamp{At: 5, ID: hex64('2')}}
		if i%15 == 0 {
			m.Roles = []string{"admin"}
			admins = append(admins, pk)
		} else {
			plain = append(plain, pk)
		}
		big.Members[pk] = m
	}
	ids = append(ids, "big")
	_, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "groups"}, []string{"id", "state", "updated_at"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)
	tx, err := db.Pool.Begin(ctx) // a group's users have rows of their own (groups.QueueSave)
	require.NoError(t, err)
	require.NoError(t, groups.Replace(ctx, tx, map[string]*groups.State{"big": big}))
	require.NoError(t, tx.Commit(ctx))
	sort.Strings(ids)
	got := walk(t, base, "/console/api/groups"+q, 17, func(p page, i int) string { return p.Items[i].ID })
	require.Equal(t, ids, got, "every group once, by id")
	got = walk(t, base, "/console/api/groups"+q+"&q=g01", 4, func(p page, i int) string { return p.Items[i].ID })
	require.Len(t, got, 100, "ids that start with g01")
	got = walk(t, base, "/console/api/groups"+q+"&q=NUMBER+22", 3, func(p page, i int) string { return p.Items[i].ID })
	require.Equal(t, []string{"g0022", "g0220", "g0221", "g0222", "g0223", "g0224", "g0225", "g0226", "g0227", "g0228", "g0229"}, got, "names that hold the search")
	got = walk(t, base, "/console/api/groups"+q+"&q=50%25_", 5, func(p page, i int) string { return p.Items[i].ID })
	require.Empty(t, got, "% and _ are matched as themselves")

	// A group in the list carries its first members; its own view pages
	// through them, admins first.
	var one page
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/groups"+q+"&limit=1", &one))
	require.Equal(t, "big", one.Items[0].ID)
	require.Equal(t, 45, one.Items[0].MemberCount)
	require.Len(t, one.Items[0].Members, 20, "a preview of the members")
	sort.Strings(admins)
	sort.Strings(plain)
	var members []string
	after := ""
	for {
		var g struct {
			Members []struct {
				Pubkey string `json:"pubkey"`
			} `json:"members"`
			Next  string `json:"members_next"`
			Count int    `json:"member_count"`
		}
		require.Equal(t, http.StatusOK, get(t, base+"/console/api/groups"+q+"&group=big&limit=10&members_after="+url.QueryEscape(after), &g))
		require.Equal(t, 45, g.Count)
		require.LessOrEqual(t, len(g.Members), 10)
		for _, m := range g.Members {
			members = append(members, m.Pubkey)
		}
		if after = g.Next; after == "" {
			break
		}
	}
	require.Equal(t, append(admins, plain...), members, "admins first, then by pubkey, each once")

	// 1,000 community members, 300 of them joined in the same microsecond:
	// newest first, ties by pubkey, each once.
	_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.members (pubkey, first_event_id, joined_at)
		SELECT lpad(to_hex(i * 7919), 64, '0'), lpad(to_hex(i), 64, '0'),
		       CASE WHEN i % 10 < 3 THEN timestamptz '2026-01-01 00:00:00.123456+00' ELSE timestamptz '2026-01-01' + i * interval '1 ms' END
		FROM generate_series(1, 1000) i`)
	require.NoError(t, err)
	var want []string
	r, err := db.Pool.Query(ctx, `SELECT pubkey FROM cn_relay.members ORDER BY joined_at DESC, pubkey DESC`)
	require.NoError(t, err)
	want, err = pgx.CollectRows(r, pgx.RowTo[string])
	require.NoError(t, err)
	got = walk(t, base, "/console/api/members"+q, 33, func(p page, i int) string { return p.Items[i].Pubkey })
	require.Equal(t, want, got)
	got = walk(t, base, "/console/api/members"+q+"&q="+want[0][:6], 50, func(p page, i int) string { return p.Items[i].Pubkey })
	require.Contains(t, got, want[0])
	for _, pk := range got {
		require.True(t, strings.HasPrefix(pk, want[0][:6]))
	}

	// NIP-43: members, pending requests and invites.
	_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.nip43_members (pubkey, member, at, event_id)
		SELECT lpad(to_hex(i), 64, '0'), i % 4 <> 0, i, lpad(to_hex(i), 64, '0') FROM generate_series(1, 40) i`)
	require.NoError(t, err)
	got = walk(t, base, "/console/api/nip43/members"+q, 7, func(p page, i int) string { return p.Items[i].Pubkey })
	require.Len(t, got, 30, "members only")
	require.True(t, sort.StringsAreSorted(got))
	_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.membership_pending (pubkey, event_id, event, requested_at)
		SELECT lpad(to_hex(i), 64, '0'), lpad(to_hex(i), 64, '0'), '{}', timestamptz '2026-01-01' + (i % 5) * interval '1 s' FROM generate_series(1, 23) i`)
	require.NoError(t, err)
	got = walk(t, base, "/console/api/nip43/pending"+q, 4, func(p page, i int) string { return p.Items[i].Pubkey })
	r, err = db.Pool.Query(ctx, `SELECT pubkey FROM cn_relay.membership_pending ORDER BY requested_at, pubkey`)
	require.NoError(t, err)
	want, err = pgx.CollectRows(r, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.membership_claims (id, hash, issuer, issued_at, expires_at)
		SELECT 'inv' || i, 'h' || i, $1, timestamptz '2026-01-01' + (i % 3) * interval '1 s', now() + interval '1 day' FROM generate_series(1, 19) i`, hex64('a'))
	require.NoError(t, err)
	got = walk(t, base, "/console/api/nip43/invites"+q, 5, func(p page, i int) string { return p.Items[i].ID })
	r, err = db.Pool.Query(ctx, `SELECT id FROM cn_relay.membership_claims ORDER BY issued_at DESC, id DESC`)
	require.NoError(t, err)
	want, err = pgx.CollectRows(r, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, want, got)

	// The moderation queue: 9 reported events, 4 of them reported at the same second.
	for i := range 9 {
		id := fmt.Sprintf("%064x", 0xe0+i)
		_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig)
			VALUES ($1, $2, 1, 200, '[]', 'x', $3)`, id, hex64('b'), strings.Repeat("0", 128))
		require.NoError(t, err)
		_, err = db.Pool.Exec(ctx, `INSERT INTO cn_moderation.reports (report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq, reporter_rank)
			VALUES ($1, $2, 'event', $3, $4, 'spam', $5, 1, 7)`, fmt.Sprintf("%064x", 0xa0+i), id, hex64('b'), hex64('c'), 300+max(i-4, 0))
		require.NoError(t, err)
	}
	got = walk(t, base, "/console/api/reports"+q, 2, func(p page, i int) string { return p.Items[i].EventID })
	require.Equal(t, []string{fmt.Sprintf("%064x", 0xe8), fmt.Sprintf("%064x", 0xe7), fmt.Sprintf("%064x", 0xe6), fmt.Sprintf("%064x", 0xe5),
		fmt.Sprintf("%064x", 0xe0), fmt.Sprintf("%064x", 0xe1), fmt.Sprintf("%064x", 0xe2), fmt.Sprintf("%064x", 0xe3), fmt.Sprintf("%064x", 0xe4)}, got,
		"the newest report first, then by event id")

	// Bad input: 400 with a JSON error, for every list.
	for _, path := range []string{"groups", "members", "nip43/members", "nip43/pending", "nip43/invites", "reports"} {
		for _, bad := range []string{"limit=0", "limit=201", "limit=ten", "limit=-1", "after=" + url.QueryEscape("../x y"), "after=" + strings.Repeat("z", 70), "q=" + strings.Repeat("a", 200)} {
			if bad[0] == 'q' && strings.HasPrefix(path, "nip43") || bad[0] == 'q' && path == "reports" {
				continue // no search there
			}
			var e struct{ Error string }
			u := base + "/console/api/" + path + q + "&" + bad
			resp, err := http.Get(u)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, u)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"), u)
			require.NoError(t, jsonDecode(resp, &e), u)
			require.NotEmpty(t, e.Error, u)
		}
	}
	for _, bad := range []string{"group=big&members_after=1.nothex", "group=big&members_after=x", "group=big&limit=0", "group=no%20such"} {
		require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/groups"+q+"&"+bad, nil), bad)
	}
	require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/members"+q+"&q=npub1xyz", nil), "a member search is hex")
	require.Equal(t, http.StatusNotFound, get(t, base+"/console/api/groups"+q+"&group=nosuch", nil))
}
