package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/console"
	"github.com/kukuri/communitynode/internal/dashboard"
	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const token = "0123456789abcdef-console"

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

// serve runs the console on the dashboard's handler with a token, on db.
func serve(t *testing.T, db *pgtest.DB) string {
	t.Helper()
	c := console.New(console.Config{Pool: db.Pool, RelayURL: "ws://127.0.0.1:7777"})
	d := dashboard.New(dashboard.Config{Pool: db.Pool, Listen: "127.0.0.1:0", Console: c.Handler("/console/")})
	srv := httptest.NewServer(d.Handler(token))
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, out), "%s", body)
	}
	return resp.StatusCode
}

// TestConsoleReadViews: the read views need the status page's token, show a
// group's members, pending joins and invites (codes masked), and the
// moderation queue with the reported event, its reporters and a group filter.
func TestConsoleReadViews(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	base := serve(t, db)
	q := "?token=" + token

	require.Equal(t, http.StatusUnauthorized, get(t, base+"/console/groups", nil), "the console needs the token")
	require.Equal(t, http.StatusUnauthorized, get(t, base+"/console/api/groups", nil))
	require.Equal(t, http.StatusOK, get(t, base+"/console/groups"+q, nil))
	require.Equal(t, http.StatusNotFound, get(t, base+"/console/nothing"+q, nil))

	// A group with an admin, a member, a pending request and an invite.
	admin, member, asking := hex64('a'), hex64('b'), hex64('c')
	s := groups.New("crew")
	s.Created, s.Creator = groups.Stamp{At: 100, ID: hex64('1')}, admin
	s.Meta = groups.Metadata{Name: "Crew", Closed: true, AllKinds: true}
	s.Members[admin] = groups.Membership{In: true, Roles: []string{"admin"}, Stamp: groups.Stamp{At: 100, ID: hex64('2')}}
	s.Members[member] = groups.Membership{In: true, Stamp: groups.Stamp{At: 110, ID: hex64('3')}}
	s.Requests[asking] = groups.Stamp{At: 120, ID: hex64('4')}
	s.Invites["supersecretcode"] = groups.Invite{Stamp: groups.Stamp{At: 130, ID: hex64('5')}}
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, groups.Replace(ctx, tx, map[string]*groups.State{"crew": s}))
	require.NoError(t, tx.Commit(ctx))
	_, err = db.Pool.Exec(ctx, "INSERT INTO cn_trust.scores (pubkey, rank, score, risk, run_id) VALUES ($1, 42, 0.1, 0, 1)", asking)
	require.NoError(t, err)
	var gs console.Page[console.Group]
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/groups"+q, &gs))
	require.Len(t, gs.Items, 1)
	require.Empty(t, gs.Next)
	g := gs.Items[0]
	require.Equal(t, "Crew", g.Name)
	require.True(t, g.Closed)
	require.Nil(t, g.Kinds, "every kind (no supported_kinds)")
	require.Equal(t, []string{admin, member}, []string{g.Members[0].Pubkey, g.Members[1].Pubkey}, "admins first")
	require.Equal(t, 2, g.MemberCount)
	require.Equal(t, 1, g.PendingCount)
	require.Equal(t, 1, g.InviteCount)
	require.Len(t, g.Pending, 1)
	require.Equal(t, asking, g.Pending[0].Pubkey)
	require.Equal(t, 42, *g.Pending[0].Rank)
	require.Equal(t, []console.Invite{{Masked: "supe…", CreatedAt: 130}}, g.Invites)
	raw, err := http.Get(base + "/console/api/groups" + q)
	require.NoError(t, err)
	body, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	require.NotContains(t, string(body), "secretcode", "an invite code never leaves the server whole")

	// A reported event in the group and one outside groups, each with the
	// scope row the store gives it (its group's, or its topic's).
	for _, e := range []struct{ id, tags, scope string }{{hex64('e'), `[["h","crew"]]`, groups.Scope("crew")}, {hex64('f'), `[["t","x"]]`, "x"}} {
		_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig)
			VALUES ($1, $2, 1, 200, $3, 'bad words', $4)`, e.id, member, e.tags, strings.Repeat("0", 128))
		require.NoError(t, err)
		_, err = db.Pool.Exec(ctx, `INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at, pubkey, kind)
			VALUES ($1, $2, 200, $3, 1)`, e.id, e.scope, member)
		require.NoError(t, err)
		_, err = db.Pool.Exec(ctx, `INSERT INTO cn_moderation.reports (report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq, reporter_rank)
			VALUES ($1, $2, 'event', $3, $4, 'spam', 210, 1, 7)`, hex64('9')[:63]+string(e.id[0]), e.id, member, asking)
		require.NoError(t, err)
	}
	var page console.Page[console.Report]
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/reports"+q, &page))
	require.Len(t, page.Items, 2)
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/reports"+q+"&group=crew", &page))
	require.Len(t, page.Items, 1)
	reports := page.Items
	r := reports[0]
	require.Equal(t, hex64('e'), r.EventID)
	require.Equal(t, "crew", r.Group)
	require.Equal(t, "bad words", r.Event.Content)
	require.Len(t, r.Reporters, 1)
	require.Equal(t, console.Reporter{Pubkey: asking, Type: "spam", At: 210, RankThen: 7, RankNow: r.Reporters[0].RankNow, ReportID: r.Reporters[0].ReportID}, r.Reporters[0])
	require.Equal(t, 42, *r.Reporters[0].RankNow)
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/reports"+q+"&group=node", &page))
	require.Len(t, page.Items, 1)
	require.Equal(t, hex64('f'), page.Items[0].EventID)
	require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/reports"+q+"&group=no%20such", nil))

	var nip43 console.NIP43View
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/nip43"+q, &nip43))
	require.NotNil(t, nip43.Roles, "lists are [] when empty")
	var nip43Members console.Page[membership.Member]
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/nip43/members"+q, &nip43Members))
	require.NotNil(t, nip43Members.Items, "lists are [] when empty")

	var pol console.PolicyView
	require.Equal(t, http.StatusOK, get(t, base+"/console/api/policy"+q, &pol))
	require.Empty(t, pol.BannedPubkeys)
	require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/reset-plan"+q+"&consumer=nobody&seq=0", nil))
	require.Equal(t, http.StatusBadRequest, get(t, base+"/console/api/reset-plan"+q+"&consumer=index-v1&seq=-1", nil))
}

// TestConsoleChangeMarkers: with the console served, every snapshot carries
// the change markers that tell its pages to read a list again.
func TestConsoleChangeMarkers(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	c := console.New(console.Config{Pool: db.Pool, RelayURL: "ws://127.0.0.1:7777"})
	d := dashboard.New(dashboard.Config{Pool: db.Pool, Listen: "127.0.0.1:0", Interval: 20 * time.Millisecond, Console: c.Handler("/console/")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- dashboard.Serve(ctx, ln, d, "") }()
	latest := func() dashboard.Snapshot { s, _ := d.Latest(); return s }
	require.Eventually(t, func() bool { _, ok := d.Latest(); return ok }, 10*time.Second, 10*time.Millisecond)
	v := latest().AdminVersion
	_, err = db.Pool.Exec(ctx, "UPDATE cn_admin.state SET version = version + 1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return latest().AdminVersion == v+1 }, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, latest().GroupsChangedAt)
	_, err = db.Pool.Exec(ctx, "INSERT INTO cn_relay.groups (id, state, updated_at) VALUES ('g', $1, now())", groups.New("g").Dump())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return latest().GroupsChangedAt > 0 }, 10*time.Second, 10*time.Millisecond)
	// A NIP-43 join request waiting for an admin stores no event: its own marker moves.
	mark := latest().MembersMark
	require.NotEmpty(t, mark)
	_, err = db.Pool.Exec(ctx, "INSERT INTO cn_relay.membership_pending (pubkey, event_id, event, requested_at) VALUES ($1, $2, '{}', now())", hex64('a'), hex64('b'))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return latest().MembersMark != mark }, 10*time.Second, 10*time.Millisecond)
	nip43, err := c.NIP43(ctx)
	require.NoError(t, err)
	require.Equal(t, console.NIP43View{Roles: []membership.Role{}, PendingCount: 1}, nip43)
	pending, err := c.NIP43Pending(ctx, console.PageQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, pending.Items, 1)
	require.Equal(t, hex64('a'), pending.Items[0].Pubkey)
	cancel()
	require.NoError(t, <-done)
}

// TestHostileFramingHeaders: every page, asset and JSON answer of the status
// page and the console (errors included) forbids framing (X-Frame-Options:
// DENY, CSP frame-ancestors 'none') and inline script (script-src 'self', no
// 'unsafe-inline'); the console's policy lets it reach the relay (NIP-86 over
// its http origin, WebSockets for the relay and NIP-46 bunkers). Issue 47: a
// page on another origin framed /console/policy with the ban form live.
func TestHostileFramingHeaders(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	base := serve(t, db)
	q := "?token=" + token
	paths := []string{"/" + q, "/assets/app.js" + q, "/api/history" + q, "/api/status" + q, "/console/" + q,
		"/console/assets/console.js" + q, "/console/api/groups" + q, "/console/api/members" + q, "/console/api/nip43" + q,
		"/console/api/reports" + q, "/console/api/policy" + q, "/console/api/backlog" + q,
		"/console/api/groups" + q + "&limit=0", "/console/nothing" + q, "/console/groups", "/api/status"}
	for _, p := range console.Pages {
		paths = append(paths, "/console/"+p.Path+q)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range paths {
		resp, err := client.Get(base + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), "%s (HTTP %d)", p, resp.StatusCode)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'", p)
		require.Contains(t, csp, "script-src 'self';", p)
		require.NotContains(t, csp, "unsafe-eval", p)
		require.NotContains(t, csp, "unsafe-inline", p)
		if strings.HasPrefix(p, "/console/") && !strings.HasPrefix(p, "/console/groups") && !strings.HasPrefix(p, "/console/nothing") {
			require.Contains(t, csp, "connect-src 'self' ws: wss: http://127.0.0.1:7777;", p)
		}
	}
	// No page holds an inline script or an inline event handler (the policy
	// would block it, and the page would break).
	scripts := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)
	handlers := regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	for _, p := range append([]string{"/" + q}, "/console/groups"+q, "/console/members"+q, "/console/reports"+q, "/console/policy"+q, "/console/backlog"+q) {
		resp, err := http.Get(base + p)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NotRegexp(t, handlers, string(body), p)
		tags := scripts.FindAllStringSubmatch(string(body), -1)
		require.NotEmpty(t, tags, p)
		for _, m := range tags {
			require.Contains(t, m[1], `src="assets/`, "%s: an inline <script>", p)
			require.Empty(t, strings.TrimSpace(m[2]), "%s: an inline <script>", p)
		}
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
