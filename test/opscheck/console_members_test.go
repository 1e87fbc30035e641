//go:build ops

package opscheck

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// nip43 sends a NIP-43 request (kind 28934 join, with claim when not "") as k
// on a connection of its own, answering the relay's NIP-42 challenge when the
// protected event (the "-" tag) needs it, and returns the relay's OK.
func nip43Join(t *testing.T, url string, k testkit.Key, claim string) (bool, string) {
	t.Helper()
	c := testkit.Dial(t, url)
	defer c.Close()
	tags := nostr.Tags{{"-"}}
	if claim != "" {
		tags = append(tags, nostr.Tag{"claim", claim})
	}
	ev := testkit.SignNow(t, k.SK, 28934, tags, "")
	ok, reason := c.Publish(ev)
	if ok || !strings.HasPrefix(reason, "auth-required:") {
		return ok, reason
	}
	c.AuthAnswer(k.SK) // the join's OK below says whether it took
	return c.Publish(ev)
}

// TestConsoleMembersInBrowser drives the members page of `cnctl dev
// --membership invite` (NIP-43 on, only members write) in headless Chromium:
// the admin lists the members, mints an invite (a Go client joins with its
// claim), admits a pending join request and removes a member, and a plain
// Nostr client sees each effect (the node's 13534 member list; who may post).
// A key that is no admin is refused on each of those actions, word for word
// as the relay answers, and nothing changes on the relay. The page passes
// axe-core with no serious or critical violation; its screenshot is
// ops/console-members.png (CN_UPDATE_SCREENSHOT=1).
func TestConsoleMembersInBrowser(t *testing.T) {
	admin, outsider := testkit.NewKey(t), testkit.NewKey(t)
	n := startDevWith(t, []string{"--membership", "invite"}, admin.PK)
	c := dial(t, n.relay)
	s := newConsoleSession(t, n, admin)
	text, waitFor, exists, result, click, fill, open, signIn := s.text, s.waitFor, s.exists, s.result, s.click, s.fill, s.open, s.signIn

	post := func(k testkit.Key, content string) (bool, string) {
		t.Helper()
		ok, reason, _ := c.publish(k.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: content})
		return ok, reason
	}
	// listed is the node's newest 13534 (NIP-43 member list) as a reader sees it.
	listed := func() []string {
		t.Helper()
		var out []string
		for _, ev := range c.query(nostr.Filter{Kinds: []int{13534}}) {
			for _, tag := range ev.Tags {
				if len(tag) >= 2 && tag[0] == "member" {
					out = append(out, tag[1])
				}
			}
		}
		return out
	}
	memberRow := func(pk string) string { return fmt.Sprintf(`tr[data-nip43-member=%q]`, pk) }
	pendingRow := func(pk string) string { return fmt.Sprintf(`tr[data-nip43-pending=%q]`, pk) }

	// Invite mode: a stranger may not post.
	newcomer, waiter := testkit.NewKey(t), testkit.NewKey(t)
	ok, reason := post(newcomer, "hello?")
	require.False(t, ok)
	require.Contains(t, reason, "restricted: this relay is invite-only")

	// The admin lists the members: the admin is one (the node adds its admins).
	open("members")
	waitFor("live", func() bool { return text("#conn-state") == "live" })
	signIn(admin, "relay admin")
	loads := s.reloads()
	waitFor("the admin listed", func() bool { return exists(memberRow(admin.PK)) })
	require.Contains(t, text(memberRow(admin.PK)), "operator")
	require.Eventually(t, func() bool { return slices.Contains(listed(), admin.PK) }, 10*time.Second, 100*time.Millisecond, "13534 lists the admin")

	// Mint an invite; a newcomer joins with its claim and may post.
	click("#mintinvite")
	require.Contains(t, result("Mint a membership invite"), "minted invite")
	claim := regexp.MustCompile(`claim \(shown once\): ([0-9a-f]+)`).FindStringSubmatch(text("#member-invite"))
	require.Len(t, claim, 2, "the page shows the claim once: %q", text("#member-invite"))
	ok, reason = nip43Join(t, n.relay, newcomer, claim[1])
	require.True(t, ok, "a join with the minted claim: %s", reason)
	ok, reason = post(newcomer, "hello, members")
	require.True(t, ok, "a member posts: %s", reason)
	require.Contains(t, listed(), newcomer.PK, "13534 lists the newcomer")
	waitFor("the newcomer listed, via claim, without a reload", func() bool {
		return exists(memberRow(newcomer.PK)) && strings.Contains(text(memberRow(newcomer.PK)), "claim")
	})
	waitFor("the invite used", func() bool { return strings.Contains(text(`tr[data-invite]`), "used") })

	// A join request without a claim waits; the admin sees it without a
	// reload and admits it; the key may then post.
	ok, reason = nip43Join(t, n.relay, waiter, "")
	require.False(t, ok)
	require.Contains(t, reason, "pending review")
	ok, _ = post(waiter, "let me in")
	require.False(t, ok, "pending is not a member")
	waitFor("the pending request, without a reload", func() bool { return exists(pendingRow(waiter.PK)) })
	click(pendingRow(waiter.PK) + ` button[data-act="admitmember"]`)
	require.Contains(t, result("Admit "), "admitted")
	ok, reason = post(waiter, "thanks")
	require.True(t, ok, "the admitted key posts: %s", reason)
	require.Contains(t, listed(), waiter.PK)
	waitFor("the admitted key listed", func() bool { return exists(memberRow(waiter.PK)) && !exists(pendingRow(waiter.PK)) })

	// Roles (NIP-43 33534): define one, give it to the admitted key (the
	// 13534 lists it after the key), take it back by removing the role.
	roleOf := func(pk string) []string {
		t.Helper()
		for _, ev := range c.query(nostr.Filter{Kinds: []int{13534}}) {
			for _, tag := range ev.Tags {
				if len(tag) >= 2 && tag[0] == "member" && tag[1] == pk {
					return tag[2:]
				}
			}
		}
		return nil
	}
	fill(`form[data-form="setrole"] input[name="id"]`, "night")
	fill(`form[data-form="setrole"] input[name="label"]`, "Night owl")
	fill(`form[data-form="setrole"] input[name="color"]`, "240")
	click(`form[data-form="setrole"] button[type="submit"]`)
	require.Contains(t, result("Define role night"), "published")
	defs := c.query(nostr.Filter{Kinds: []int{33534}, Tags: nostr.TagMap{"d": {"night"}}})
	require.Len(t, defs, 1, "the relay publishes the role")
	require.NotNil(t, defs[0].Tags.GetFirst([]string{"-"}), "33534 carries the NIP-70 tag")
	require.Equal(t, "Night owl", defs[0].Tags.GetFirst([]string{"label"}).Value())
	require.Equal(t, "240", defs[0].Tags.GetFirst([]string{"color"}).Value())
	waitFor("the role listed and offered", func() bool {
		return exists(`tr[data-role="night"]`) && exists(memberRow(waiter.PK)+` form[data-form="assignrole"]`)
	})
	fill(memberRow(waiter.PK)+` select[name="role"]`, "night")
	click(memberRow(waiter.PK) + ` form[data-form="assignrole"] button[type="submit"]`)
	require.Contains(t, result("Give role night"), "given")
	require.Equal(t, []string{"night"}, roleOf(waiter.PK), "13534 lists the role after the member")
	waitFor("the role on the member's row", func() bool {
		return strings.Contains(text(memberRow(waiter.PK)+` [data-field="roles"]`), "Night owl")
	})

	// Remove the newcomer: their next post is refused.
	click(memberRow(newcomer.PK) + ` button[data-act="removemember"]`)
	require.Contains(t, result("Remove "), "removed")
	ok, reason = post(newcomer, "still here?")
	require.False(t, ok, "a removed member's post is refused")
	require.Contains(t, reason, "restricted: this relay is invite-only")
	require.NotContains(t, listed(), newcomer.PK)
	waitFor("the newcomer gone from the list", func() bool { return !exists(memberRow(newcomer.PK)) })

	// An open invite for the outsider to try to revoke, and a second pending request.
	click("#mintinvite")
	require.Contains(t, result("Mint a membership invite"), "minted invite")
	open2 := regexp.MustCompile(`claim \(shown once\): ([0-9a-f]+)`).FindStringSubmatch(text("#member-invite"))
	require.Len(t, open2, 2)
	second := testkit.NewKey(t)
	ok, _ = nip43Join(t, n.relay, second, "")
	require.False(t, ok)
	waitFor("the second pending request", func() bool { return exists(pendingRow(second.PK)) })
	waitFor("the open invite listed", func() bool { return exists(`tr[data-invite] button[data-act="revokeinvite"]`) })
	require.Equal(t, loads, s.reloads(), "no page reloaded itself after an action")
	s.check("members")

	// A key that is no admin: refused on each action, and the relay shows no effect.
	db, err := pgx.Connect(context.Background(), n.db)
	require.NoError(t, err)
	defer db.Close(context.Background())
	claims := func() (n int) {
		require.NoError(t, db.QueryRow(context.Background(), "SELECT count(*) FROM cn_relay.membership_claims").Scan(&n))
		return n
	}
	before := claims()
	signIn(outsider, "group roles only")
	forbidden := "failed: forbidden: " + outsider.PK + " is not an admin of this relay (HTTP 403)"

	click("#mintinvite")
	require.Contains(t, result("Mint a membership invite"), forbidden)
	require.False(t, exists(`#member-invite:not([hidden])`), "no claim shown")
	require.Equal(t, before, claims(), "no invite was minted")

	click(`tr[data-invite] button[data-act="revokeinvite"]`)
	require.Contains(t, result("Revoke invite"), forbidden)

	click(pendingRow(second.PK) + ` button[data-act="admitmember"]`)
	require.Contains(t, result("Admit "), forbidden)
	ok, _ = post(second, "am I in?")
	require.False(t, ok, "not admitted")
	click(pendingRow(second.PK) + ` button[data-act="denymember"]`)
	require.Contains(t, result("Deny "), forbidden)
	require.True(t, exists(pendingRow(second.PK)), "still pending")

	click(memberRow(waiter.PK) + ` button[data-act="removemember"]`)
	require.Contains(t, result("Remove "), forbidden)
	ok, reason = post(waiter, "still a member")
	require.True(t, ok, "not removed: %s", reason)

	added := testkit.NewKey(t)
	fill(`form[data-form="addmember"] input[name="pubkey"]`, added.PK)
	click(`form[data-form="addmember"] button[type="submit"]`)
	require.Contains(t, result("Add member"), forbidden)
	ok, _ = post(added, "added?")
	require.False(t, ok, "not added")
	require.NotContains(t, listed(), added.PK)

	fill(`form[data-form="setrole"] input[name="id"]`, "intruder")
	click(`form[data-form="setrole"] button[type="submit"]`)
	require.Contains(t, result("Define role intruder"), forbidden)
	require.Empty(t, c.query(nostr.Filter{Kinds: []int{33534}, Tags: nostr.TagMap{"d": {"intruder"}}}), "no role published")
	click(memberRow(waiter.PK) + ` button[data-act="unassignrole"]`)
	require.Contains(t, result("Take role night"), forbidden)
	click(`tr[data-role="night"] button[data-act="removerole"]`)
	require.Contains(t, result("Remove role night"), forbidden)
	require.Equal(t, []string{"night"}, roleOf(waiter.PK), "the member keeps the role")

	// The invite the outsider tried to revoke still admits.
	third := testkit.NewKey(t)
	ok, reason = nip43Join(t, n.relay, third, open2[1])
	require.True(t, ok, "the invite was not revoked: %s", reason)

	// The admin again: removing the role takes it from the member and
	// deletes its 33534.
	signIn(admin, "relay admin")
	waitFor("the role listed", func() bool { return exists(`tr[data-role="night"] button[data-act="removerole"]`) })
	click(`tr[data-role="night"] button[data-act="removerole"]`)
	require.Contains(t, result("Remove role night"), "removed from every member")
	require.Empty(t, roleOf(waiter.PK), "13534 lists the member without the role")
	require.Empty(t, c.query(nostr.Filter{Kinds: []int{33534}, Tags: nostr.TagMap{"d": {"night"}}}), "the role's 33534 is deleted")
	waitFor("the role gone from the page", func() bool { return !exists(`tr[data-role="night"]`) })
}
