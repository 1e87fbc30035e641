//go:build ops

package opscheck

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/nbd-wtf/go-nostr/nip46"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// devNode is `cnctl dev` running as a real process (make run), every daemon on
// a free loopback port, its database an embedded Postgres in a temporary
// directory.
type devNode struct {
	relay   string // ws://host:port
	console string // http://host:port/console/
	db      string // DATABASE_URL, as printed
}

// startDev builds cnctl and runs `cnctl dev` with admins as --admin-pubkeys;
// it returns once the node says it is up, with the console's URL as printed.
func startDev(t *testing.T, admins ...string) devNode {
	t.Helper()
	return startDevWith(t, nil, admins...)
}

// startDevWith is startDev with more flags of `cnctl dev` (--membership invite).
func startDevWith(t *testing.T, extra []string, admins ...string) devNode {
	t.Helper()
	dir := baseDir(t)
	cnctl := filepath.Join(dir, "cnctl")
	build := exec.Command("go", "build", "-o", cnctl, "./cmd/cnctl")
	build.Dir = repoFile(t, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	relay := testkit.FreeAddr(t)
	args := []string{"dev", "--data-dir", filepath.Join(dir, "pg"), "--node-key-file", filepath.Join(dir, "node.key"),
		"--relay-listen", relay, "--relay-metrics-listen", testkit.FreeAddr(t), "--indexer-listen", testkit.FreeAddr(t),
		"--moderator-listen", testkit.FreeAddr(t), "--trust-listen", testkit.FreeAddr(t), "--dashboard-listen", testkit.FreeAddr(t),
		"--no-bridge", "--admin-pubkeys", strings.Join(admins, ",")}
	cmd := exec.Command(cnctl, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "CN_DATABASE_URL=")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 64)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			fmt.Fprintln(os.Stderr, "cnctl dev:", s.Text())
			lines <- s.Text()
		}
		close(lines)
	}()
	n := devNode{relay: "ws://" + relay}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "cnctl dev exited before it was up")
			if rest, found := strings.CutPrefix(line, "DATABASE_URL="); found {
				n.db = rest
			}
			if rest, found := strings.CutPrefix(line, "console: "); found {
				n.console = strings.Fields(rest)[0]
			}
			if strings.HasPrefix(line, "node is up") {
				require.NotEmpty(t, n.console, "cnctl dev did not print the console's URL")
				go func() {
					for range lines {
					}
				}()
				return n
			}
		case <-deadline:
			t.Fatal("cnctl dev did not come up within 2 minutes")
		}
	}
}

// client is the relay's protocol client (testkit.Client, what any app
// sees), with events signed as they are published.
type client struct {
	*testkit.Client
	t *testing.T
}

func dial(t *testing.T, url string) *client {
	t.Helper()
	var c *testkit.Client
	require.Eventually(t, func() bool { // "node is up" comes before every listener is
		var err error
		c, _, err = testkit.Connect(t, url)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the relay at %s does not answer", url)
	return &client{Client: c, t: t}
}

// publish signs ev with sk, sends it and returns the relay's OK.
func (c *client) publish(sk string, ev nostr.Event) (bool, string, nostr.Event) {
	c.t.Helper()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = nostr.Now()
	}
	require.NoError(c.t, ev.Sign(sk))
	ok, reason := c.Publish(&ev)
	return ok, reason, ev
}

// query returns the stored events matching filter (REQ until EOSE).
func (c *client) query(filter nostr.Filter) []nostr.Event {
	c.t.Helper()
	var out []nostr.Event
	for _, ev := range c.Query(filter) {
		out = append(out, *ev)
	}
	return out
}

// groupMembers returns the p tags of the group's newest 39002 (members).
func (c *client) groupMembers(group string) []string {
	evs := c.query(nostr.Filter{Kinds: []int{39002}, Tags: nostr.TagMap{"d": {group}}})
	var out []string
	for _, ev := range evs {
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "p" {
				out = append(out, tag[1])
			}
		}
	}
	return out
}

// bunker runs a NIP-46 remote signer for k (go-nostr's StaticKeySigner) on
// the relay at url until the test ends, and returns its bunker:// URL.
func bunker(t *testing.T, url string, k testkit.Key) string {
	t.Helper()
	signer := nip46.NewStaticKeySigner(k.SK)
	c := dial(t, url)
	sub, err := c.Subscribe("bunker", nostr.Filter{Kinds: []int{nostr.KindNostrConnect}, Tags: nostr.TagMap{"p": {k.PK}}})
	require.NoError(t, err)
	go func() {
		for {
			ev, err := sub.Next(context.Background())
			if err != nil {
				return // the test ended
			}
			_, _, resp, err := signer.HandleRequest(ev)
			if err != nil {
				t.Logf("bunker: %v", err)
				continue
			}
			_ = c.Send("EVENT", resp)
		}
	}()
	return "bunker://" + k.PK + "?relay=" + url + "&secret=ops"
}

// nip07 is the NIP-07 shim: window.nostr in every page, backed by a key held
// in Go (chromedp.ExposeFunc), which the test switches.
type nip07 struct {
	mu  sync.Mutex
	key testkit.Key
}

func (s *nip07) use(k testkit.Key) { s.mu.Lock(); s.key = k; s.mu.Unlock() }

func (s *nip07) call(_ context.Context, args []any) (any, error) {
	s.mu.Lock()
	k := s.key
	s.mu.Unlock()
	if len(args) == 0 {
		return nil, errors.New("no method")
	}
	switch args[0] {
	case "getPublicKey":
		return k.PK, nil
	case "signEvent":
		raw, err := json.Marshal(args[1])
		if err != nil {
			return nil, err
		}
		var ev nostr.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		if err := ev.Sign(k.SK); err != nil {
			return nil, err
		}
		return ev, nil
	}
	return nil, fmt.Errorf("unsupported: %v", args[0])
}

const nip07Shim = `window.nostr = {
  getPublicKey: () => window.cnNip07("getPublicKey"),
  signEvent: (event) => window.cnNip07("signEvent", event),
};`

// consoleSession is headless Chromium on the console of the dev node n, with
// the NIP-07 shim holding first; its helpers act through the page's DOM.
type consoleSession struct {
	ctx         context.Context
	signer      *nip07
	text        func(sel string) string
	waitFor     func(what string, cond func() bool)
	exists      func(sel string) bool
	result      func(prefix string) string
	click       func(sel string)
	fill        func(sel, value string)
	open        func(p string)
	signIn      func(k testkit.Key, want string)
	setSignedIn func(want string)
	reloads     func() int
	check       func(name string)
	checked     map[string]bool
}

func newConsoleSession(t *testing.T, n devNode, first testkit.Key) *consoleSession {
	t.Helper()
	browser := chromium(t)
	shots := os.Getenv("CN_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if os.Getenv("CN_UPDATE_SCREENSHOT") == "1" {
		shots = repoFile(t, "ops")
	}
	t.Logf("console screenshots in %s", shots)
	axe, err := os.ReadFile(repoFile(t, "test/opscheck/testdata/axe/axe.min.js"))
	require.NoError(t, err)

	ctx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()))...)
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	signer := &nip07{key: first}
	require.NoError(t, chromedp.Do(ctx, chromedp.ExposeFunc("cnNip07", signer.call)))
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: nip07Shim})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
	require.NoError(t, err)
	ctx, cancel = context.WithTimeout(ctx, 6*time.Minute)
	t.Cleanup(cancel)

	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		require.NoError(t, err)
		return strings.Join(strings.Fields(s), " ")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s (the page says: %q)", what, text("#result"))
			}
			time.Sleep(100 * time.Millisecond) // polling the page's DOM
		}
	}
	exists := func(sel string) bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector(%q)`, sel)))
		require.NoError(t, err)
		return ok
	}
	// result waits until the page states the result of the action it runs
	// (not "…"), and returns it.
	result := func(prefix string) string {
		t.Helper()
		var got string
		waitFor("a result for "+prefix, func() bool {
			got = text("#result")
			return strings.HasPrefix(got, prefix) && !strings.HasSuffix(got, "…")
		})
		return got
	}
	// click and fill act through the DOM at once: a list the page re-renders
	// when the stream says it changed replaces the nodes a CDP query found.
	click := func(sel string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(e => { if (!e) return false; e.click(); return true })(document.querySelector(%q))`, sel)))
		require.NoError(t, err)
		require.True(t, ok, "nothing to click: %s", sel)
	}
	fill := func(sel, value string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(e => { if (!e) return false; e.value = %q; return true })(document.querySelector(%q))`, value, sel)))
		require.NoError(t, err)
		require.True(t, ok, "nothing to fill: %s", sel)
	}
	signedIn := ""
	open := func(p string) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(n.console+p)))
		waitFor("the page's list", func() bool { return exists("#page > *") })
		if signedIn != "" { // the page signs in again with the key of this session
			waitFor("signed in again", func() bool {
				who := text("#who")
				return strings.Contains(who, signedIn) && (signedIn == "group roles only" || !strings.Contains(who, "group roles only"))
			})
		}
	}
	signIn := func(k testkit.Key, want string) {
		t.Helper()
		signer.use(k)
		signedIn = want
		if exists("#signout:not([hidden])") {
			click("#signout")
		}
		click("#signin-nip07")
		waitFor("signed in: "+want, func() bool {
			who := text("#who")
			return strings.Contains(who, want) && (want == "group roles only" || !strings.Contains(who, "group roles only"))
		})
	}
	reloads := func() int {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation").length`))
		require.NoError(t, err)
		return v
	}
	checked := map[string]bool{}
	check := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, "console-"+name+".png"), png, 0o644))
		csp, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.cnCSPViolations)`))
		require.NoError(t, err)
		require.Equal(t, "[]", csp, "the %s page works under its Content-Security-Policy", name)
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](string(axe)+"; true"))
		require.NoError(t, err)
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document).then(r => JSON.stringify({passes: r.passes.length, violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5)}))}))`, chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		var res struct {
			Passes     int
			Violations []struct {
				ID, Impact, Help string
				Nodes            []string
			}
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &res))
		require.Greater(t, res.Passes, 10, "axe ran its rules")
		t.Logf("axe %s: %d rules passed, %d violated", name, res.Passes, len(res.Violations))
		for _, v := range res.Violations {
			t.Logf("axe %s: %s [%s] %s on %v", name, v.ID, v.Impact, v.Help, v.Nodes)
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Errorf("axe: the %s page has a %s violation: %s (%s) on %v", name, v.Impact, v.ID, v.Help, v.Nodes)
			}
		}
		checked[name] = true
	}

	return &consoleSession{ctx: ctx, signer: signer, text: text, waitFor: waitFor, exists: exists, result: result, click: click, fill: fill,
		open: open, signIn: signIn, setSignedIn: func(want string) { signedIn = want }, reloads: reloads, check: check, checked: checked}
}

// TestConsoleInBrowser drives the console of `cnctl dev` in headless Chromium
// with a NIP-07 shim: an admin signs in, creates a closed group, approves a
// pending join, mints an invite, hides a reported event and bans a key; a
// plain Nostr client sees each effect on the relay. A key that is no admin is
// refused on every one of those actions, and the relay shows no effect. Each
// page passes axe-core with no serious or critical violation, and its
// screenshot is kept (ops/console-*.png when CN_UPDATE_SCREENSHOT=1).
func TestConsoleInBrowser(t *testing.T) {
	admin, outsider := testkit.NewKey(t), testkit.NewKey(t)
	n := startDev(t, admin.PK)
	c := dial(t, n.relay)

	s := newConsoleSession(t, n, admin)
	ctx, text, waitFor, exists, result, click, fill, open, signIn, reloads, check, checked := s.ctx, s.text, s.waitFor, s.exists, s.result, s.click, s.fill, s.open, s.signIn, s.reloads, s.check, s.checked

	// Sign in as the admin.
	open("groups")
	waitFor("live", func() bool { return text("#conn-state") == "live" })
	signIn(admin, "relay admin")
	loads := reloads()

	// What the admin types into a search box survives the page reading itself
	// again (the live stream re-reads the list whenever anything changes):
	// before, a re-read that landed between typing and pressing Search emptied
	// the box, and the search went out empty.
	fill(`form[data-form="search"] input[name="q"]`, "ops")
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(e => { e.setAttribute("data-stale", ""); return true })(document.querySelector("#page > *"))`))
	require.NoError(t, err)
	ok, reason, _ := c.publish(admin.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "on call tonight"})
	require.True(t, ok, reason)
	waitFor("the page read again", func() bool { return !exists("[data-stale]") })
	typed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('form[data-form="search"] input[name="q"]').value`))
	require.NoError(t, err)
	require.Equal(t, "ops", typed, "the typed search survives a re-render")
	fill(`form[data-form="search"] input[name="q"]`, "")

	// Create a closed group.
	fill(`#create-group input[name="id"]`, "ops-crew")
	fill(`#create-group input[name="name"]`, "Ops crew")
	fill(`#create-group input[name="about"]`, "the people on call")
	click(`#create-group input[name="closed"]`)
	click(`#create-group button[type="submit"]`)
	require.Contains(t, result("Create group ops-crew"), "created")
	meta := c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"ops-crew"}}})
	require.Len(t, meta, 1, "the relay publishes the group's metadata")
	require.Equal(t, "Ops crew", meta[0].Tags.GetFirst([]string{"name"}).Value())
	require.NotNil(t, meta[0].Tags.GetFirst([]string{"closed"}), "the group is closed")
	waitFor("the group on the page", func() bool { return exists("#group-ops-crew") })

	// Edit its metadata: the name changes, the closed flag stays.
	fill(`form[data-form="meta"][data-group="ops-crew"] input[name="name"]`, "Ops crew (on call)")
	click(`form[data-form="meta"][data-group="ops-crew"] button[type="submit"]`)
	require.Contains(t, result("Save metadata of ops-crew"), "saved")
	var last []nostr.Event
	require.Eventually(t, func() bool {
		last = c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"ops-crew"}}})
		return len(last) == 1 && last[0].Tags.GetFirst([]string{"name"}).Value() == "Ops crew (on call)" && last[0].Tags.GetFirst([]string{"closed"}) != nil
	}, 10*time.Second, 100*time.Millisecond, "39000 has the new name and is still closed: %v", &last)

	// A group the page first shows before its metadata (a 9007 alone), then
	// with it (a 9002 with closed): an edit of its name keeps closed. The
	// form rendered first held an unchecked box; a re-render must show the
	// state read, not keep what the user never touched.
	ok, reason, _ = c.publish(admin.SK, nostr.Event{Kind: 9007, Tags: nostr.Tags{{"h", "late-meta"}}})
	require.True(t, ok, reason)
	waitFor("the group without metadata on the page", func() bool { return exists("#group-late-meta") })
	ok, reason, _ = c.publish(admin.SK, nostr.Event{Kind: 9002, Tags: nostr.Tags{{"h", "late-meta"}, {"name", "Late"}, {"closed"}}})
	require.True(t, ok, reason)
	waitFor("its metadata on the page", func() bool { return strings.Contains(text("#group-late-meta h3"), "closed") })
	fill(`form[data-form="meta"][data-group="late-meta"] input[name="name"]`, "Late metadata")
	click(`form[data-form="meta"][data-group="late-meta"] button[type="submit"]`)
	require.Contains(t, result("Save metadata of late-meta"), "saved")
	require.Eventually(t, func() bool {
		last = c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"late-meta"}}})
		return len(last) == 1 && last[0].Tags.GetFirst([]string{"name"}).Value() == "Late metadata" && last[0].Tags.GetFirst([]string{"closed"}) != nil
	}, 10*time.Second, 100*time.Millisecond, "39000 has the new name and is still closed: %v", &last)

	// A private subgroup of it: created with its flags and parent, then
	// edited; neither edit may drop a flag, the parent or the child list (a
	// 9002 replaces every field, and NIP-29 refuses one that leaves out a
	// child).
	fill(`#create-group input[name="id"]`, "ops-night")
	fill(`#create-group input[name="name"]`, "Night shift")
	click(`#create-group input[name="private"]`)
	fill(`#create-group input[name="parent"]`, "ops-crew")
	click(`#create-group button[type="submit"]`)
	require.Contains(t, result("Create group ops-night"), "created")
	waitFor("the subgroup on the page", func() bool {
		return exists("#group-ops-night") && strings.Contains(text("#group-ops-crew [data-tree]"), "ops-night")
	})
	fill(`form[data-form="meta"][data-group="ops-night"] input[name="about"]`, "after midnight")
	click(`form[data-form="meta"][data-group="ops-night"] button[type="submit"]`)
	require.Contains(t, result("Save metadata of ops-night"), "saved")
	fill(`form[data-form="meta"][data-group="ops-crew"] input[name="about"]`, "the people on call, day and night")
	click(`form[data-form="meta"][data-group="ops-crew"] button[type="submit"]`)
	require.Contains(t, result("Save metadata of ops-crew"), "saved")
	require.Eventually(t, func() bool {
		night := c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"ops-night"}}})
		crew := c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"ops-crew"}}})
		last = append(night, crew...)
		return len(night) == 1 && len(crew) == 1 &&
			night[0].Tags.GetFirst([]string{"about"}).Value() == "after midnight" &&
			night[0].Tags.GetFirst([]string{"private"}) != nil &&
			night[0].Tags.GetFirst([]string{"parent"}).Value() == "ops-crew" &&
			crew[0].Tags.GetFirst([]string{"about"}).Value() == "the people on call, day and night" &&
			crew[0].Tags.GetFirst([]string{"child"}).Value() == "ops-night" &&
			crew[0].Tags.GetFirst([]string{"closed"}) != nil
	}, 10*time.Second, 100*time.Millisecond, "the subgroup is private under ops-crew after both edits: %v", &last)

	// A join request waits; the admin approves it.
	joiner := testkit.NewKey(t)
	ok, reason, _ = c.publish(joiner.SK, nostr.Event{Kind: 9021, Tags: nostr.Tags{{"h", "ops-crew"}}})
	require.False(t, ok)
	require.Contains(t, reason, "pending review")
	pendingRow := fmt.Sprintf(`#group-ops-crew tr[data-pending=%q]`, joiner.PK)
	waitFor("the pending join, without a reload", func() bool { return exists(pendingRow) })
	click(pendingRow + ` button[data-act="approve"]`)
	require.Contains(t, result("Approve"), "approved")
	require.Contains(t, c.groupMembers("ops-crew"), joiner.PK, "39002 lists the approved member")
	waitFor("the member on the page", func() bool { return exists(fmt.Sprintf(`#group-ops-crew tr[data-member=%q]`, joiner.PK)) })

	// Mint an invite code; a newcomer joins with it at once.
	click(`button[data-act="invite"][data-group="ops-crew"]`)
	require.Contains(t, result("Mint an invite code for ops-crew"), "minted")
	code := regexp.MustCompile(`code for ops-crew: ([0-9a-f]+)`).FindStringSubmatch(text("#invite-ops-crew"))
	require.Len(t, code, 2, "the page shows the new code once")
	invited := testkit.NewKey(t)
	ok, reason, _ = c.publish(invited.SK, nostr.Event{Kind: 9021, Tags: nostr.Tags{{"h", "ops-crew"}, {"code", code[1]}}})
	require.True(t, ok, "a join with the minted code: %s", reason)
	require.Contains(t, c.groupMembers("ops-crew"), invited.PK)
	waitFor("the invite listed, masked", func() bool { return strings.Contains(text("#group-ops-crew ul"), code[1][:4]+"…") })
	require.NotContains(t, text("#group-ops-crew ul"), code[1][4:], "the listed code is masked")
	waitFor("the invited member on the page", func() bool { return exists(fmt.Sprintf(`#group-ops-crew tr[data-member=%q]`, invited.PK)) })
	check("groups")

	// A reported note: the admin hides it from the reports page.
	author, reporter := testkit.NewKey(t), testkit.NewKey(t)
	ok, reason, note := c.publish(author.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "buy cheap watches"})
	require.True(t, ok, reason)
	ok, reason, _ = c.publish(reporter.SK, nostr.Event{Kind: 1984, Tags: nostr.Tags{{"e", note.ID, "spam"}, {"p", author.PK}}})
	require.True(t, ok, reason)
	open("reports")
	reportSel := fmt.Sprintf(`article[data-report=%q]`, note.ID)
	waitFor("the report in the queue", func() bool { return exists(reportSel) })
	require.Contains(t, text(reportSel), "buy cheap watches")
	require.Contains(t, text(reportSel), "spam")
	check("reports")
	click(reportSel + ` button[data-act="hide"]`)
	require.Contains(t, result("Hide event"), "hidden")
	require.Empty(t, c.query(nostr.Filter{IDs: []string{note.ID}}), "the hidden note is gone for readers")
	waitFor("the report leaves the queue", func() bool { return !exists(reportSel) })

	// Ban a key (given as an npub) from the policy page.
	spammer := testkit.NewKey(t)
	ok, reason, _ = c.publish(spammer.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "first post"})
	require.True(t, ok, reason)
	open("policy")
	npub, err := nip19.EncodePublicKey(spammer.PK)
	require.NoError(t, err)
	fill(`form[data-method="banpubkey"] input[name="arg"]`, npub)
	fill(`form[data-method="banpubkey"] input[name="reason"]`, "spam")
	click(`form[data-method="banpubkey"] button[type="submit"]`)
	require.Contains(t, result("banpubkey"), "done")
	require.Empty(t, c.query(nostr.Filter{Authors: []string{spammer.PK}}), "the banned key's events are hidden")
	waitFor("the ban form emptied", func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('form[data-method="banpubkey"] input[name="arg"]').value`))
		require.NoError(t, err)
		return v == ""
	})
	waitFor("the banned key listed", func() bool { return exists(fmt.Sprintf(`tr[data-listed=%q]`, spammer.PK)) })
	require.Eventually(t, func() bool { // every relay process applies the new state within a second
		ok, _, _ := c.publish(spammer.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "again"})
		return !ok
	}, 10*time.Second, 200*time.Millisecond, "the banned key can no longer publish")
	check("policy")

	// Members: NIP-43 management when the relay offers it, else a clear answer.
	open("members")
	waitFor("the membership section answers", func() bool {
		s := text("#nip43-h + *")
		return s != "" && !strings.Contains(s, "Sign in")
	})
	require.Contains(t, text("#page"), "Pending admissions", "the dev node keeps NIP-43 (open mode)")
	require.True(t, exists(fmt.Sprintf(`tr[data-community=%q]`, author.PK)), "the author is a community member")
	// TestConsoleMembersInBrowser checks and pictures this page in invite mode.

	// Backlog: the consumers, live, and a replay whose confirmation states
	// what it replays.
	open("backlog")
	waitFor("the consumers", func() bool { return exists(`#consumer-index-v1`) })
	replay := func(want string) string {
		t.Helper()
		var got string
		waitFor("a replay's result", func() bool { // a preview goes stale when the consumer moves on: preview again
			fill(`form[data-form="plan"] select[name="consumer"]`, "index-v1")
			fill(`form[data-form="plan"] input[name="seq"]`, "1")
			click(`form[data-form="plan"] button[type="submit"]`)
			waitFor("the preview", func() bool { return exists("#reset-confirm") })
			require.Regexp(t, `^Reset index-v1 from seq \d+ to seq 1: \d+ retained row\(s\), seq 2 to \d+, will be applied again\.( \S+ runs the consumer now: it takes the new offset at its next commit\.)?$`, text("#reset-text"))
			if want == "" {
				check("backlog")
			}
			click("#reset-confirm")
			got = result("Replay index-v1")
			return !strings.Contains(got, "preview again")
		})
		return got
	}
	require.Regexp(t, `^Replay index-v1: index-v1 moved back from seq \d+ to seq 1: \d+ row\(s\) will be applied again$`, replay(""))
	db, err := pgx.Connect(context.Background(), n.db)
	require.NoError(t, err)
	defer db.Close(context.Background())
	resets := func() (n int) {
		require.NoError(t, db.QueryRow(context.Background(), "SELECT count(*) FROM cn_relay.consumer_offset_resets WHERE consumer = 'index-v1' AND requested_by = $1", "nip86:"+admin.PK).Scan(&n))
		return n
	}
	require.Equal(t, 1, resets(), "the relay recorded the admin's replay")
	require.Equal(t, loads, reloads(), "no page reloaded itself after an action")

	// Signing in with a NIP-46 bunker that holds the admin's key works as the
	// extension does: the admin bans a key.
	open("policy")
	click("#signout")
	s.setSignedIn("")
	waitFor("signed out", func() bool { return strings.HasPrefix(text("#who"), "Not signed in") })
	fill("#bunker-url", bunker(t, n.relay, admin))
	click("#signin-nip46")
	waitFor("signed in through the bunker", func() bool {
		who := text("#who")
		return strings.Contains(who, "(NIP-46)") && strings.Contains(who, "relay admin") && !strings.Contains(who, "group roles only")
	})
	s.setSignedIn("(NIP-46)")
	troll := testkit.NewKey(t)
	fill(`form[data-method="banpubkey"] input[name="arg"]`, troll.PK)
	click(`form[data-method="banpubkey"] button[type="submit"]`)
	require.Contains(t, result("banpubkey"), "done")
	require.Eventually(t, func() bool {
		ok, _, _ := c.publish(troll.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "hi"})
		return !ok
	}, 10*time.Second, 200*time.Millisecond, "the key the bunker's admin banned can no longer publish")
	click("#signout")
	s.setSignedIn("")

	// A key that is no admin: refused on every action, and nothing changes on the relay.
	open("groups")
	signIn(outsider, "group roles only")
	fill(`#create-group input[name="id"]`, "intruders")
	click(`#create-group button[type="submit"]`)
	require.Contains(t, result("Create group intruders"), "failed: the relay refused it: restricted:")
	require.Empty(t, c.query(nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {"intruders"}}}))

	waiting := testkit.NewKey(t)
	ok, _, _ = c.publish(waiting.SK, nostr.Event{Kind: 9021, Tags: nostr.Tags{{"h", "ops-crew"}}})
	require.False(t, ok)
	pendingRow = fmt.Sprintf(`#group-ops-crew tr[data-pending=%q]`, waiting.PK)
	waitFor("the second pending join", func() bool { return exists(pendingRow) })
	click(pendingRow + ` button[data-act="approve"]`)
	require.Contains(t, result("Approve"), "failed: the relay refused it: restricted:")
	require.NotContains(t, c.groupMembers("ops-crew"), waiting.PK)

	invitesBefore := text(`#group-ops-crew h4:nth-of-type(3)`)
	click(`button[data-act="invite"][data-group="ops-crew"]`)
	require.Contains(t, result("Mint an invite code for ops-crew"), "failed: the relay refused it: restricted:")
	require.Equal(t, invitesBefore, text(`#group-ops-crew h4:nth-of-type(3)`), "no invite was added")

	ok, reason, note2 := c.publish(author.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "more watches"})
	require.True(t, ok, reason)
	ok, reason, _ = c.publish(reporter.SK, nostr.Event{Kind: 1984, Tags: nostr.Tags{{"e", note2.ID, "spam"}, {"p", author.PK}}})
	require.True(t, ok, reason)
	open("reports")
	reportSel = fmt.Sprintf(`article[data-report=%q]`, note2.ID)
	waitFor("the second report", func() bool { return exists(reportSel) })
	click(reportSel + ` button[data-act="hide"]`)
	require.Contains(t, result("Hide event"), "failed: forbidden:")
	click(reportSel + ` button[data-act="ban-author"]`)
	require.Contains(t, result("Ban "), "failed: forbidden:")
	require.Len(t, c.query(nostr.Filter{IDs: []string{note2.ID}}), 1, "the note is still there")

	open("policy")
	fill(`form[data-method="banpubkey"] input[name="arg"]`, author.PK)
	click(`form[data-method="banpubkey"] button[type="submit"]`)
	require.Contains(t, result("banpubkey"), "failed: forbidden:")
	ok, reason, _ = c.publish(author.SK, nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "ops"}}, Content: "still here"})
	require.True(t, ok, "the author is not banned: %s", reason)

	open("backlog")
	waitFor("the consumers", func() bool { return exists(`#consumer-index-v1`) })
	require.Contains(t, replay("refused"), "failed: forbidden:")
	require.Equal(t, 1, resets(), "no replay by the outsider")

	require.Equal(t, []string{"backlog", "groups", "policy", "reports"}, slices.Sorted(maps.Keys(checked)), "every page was checked")
}
