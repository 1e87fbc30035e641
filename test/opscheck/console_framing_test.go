//go:build ops

package opscheck

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
)

// cspWatch collects, in every page, the Content-Security-Policy violations
// the browser reports (window.cnCSPViolations): a page that works under its
// policy reports none.
const cspWatch = `window.cnCSPViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.cnCSPViolations.push(e.violatedDirective + " " + e.blockedURI));`

// TestHostileFramingInBrowser (issue 47: a page on another origin framed
// /console/policy with the ban form live): a page of another origin frames
// the console's policy page and the status page; Chromium refuses to show
// either (the frame holds Chromium's error page, not the form). In the
// console itself, an inline script a page would inject does not run and is
// reported as a violation, while the console's own script runs with none.
func TestHostileFramingInBrowser(t *testing.T) {
	admin := testkit.NewKey(t)
	n := startDev(t, admin.PK)
	dash := strings.TrimSuffix(n.console, "console/")
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>hostile</title><iframe id="policy" src="%spolicy" width="800" height="600"></iframe><iframe id="status" src="%s" width="800" height="600"></iframe>`, n.console, dash)
	}))
	defer hostile.Close()

	s := newConsoleSession(t, n, admin) // with cspWatch

	require.NoError(t, chromedp.Do(s.ctx, chromedp.Navigate(hostile.URL)))
	// Each frame ends on Chromium's error page (it refuses the frame) and
	// never on the framed page.
	var frames []string
	require.Eventually(t, func() bool {
		frames = nil
		res, err := chromedp.Call(s.ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil || len(res.FrameTree.ChildFrames) != 2 {
			return false
		}
		ft := res.FrameTree
		for _, c := range ft.ChildFrames {
			frames = append(frames, c.Frame.URL+" unreachable="+c.Frame.UnreachableURL)
		}
		return !strings.Contains(frames[0], "about:blank") && !strings.Contains(frames[1], "about:blank")
	}, 20*time.Second, 100*time.Millisecond)
	t.Logf("frames: %v", frames)
	for _, f := range frames {
		require.True(t, strings.HasPrefix(f, "chrome-error://"), "the frame was refused: %s", f)
	}

	// The console works under its policy: its list renders with no violation;
	// an injected inline script is refused and reported.
	s.open("policy")
	s.waitFor("the ban form", func() bool { return s.exists(`form[data-method="banpubkey"]`) })
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[string](`JSON.stringify(window.cnCSPViolations)`))
	require.NoError(t, err)
	require.Equal(t, "[]", v, "the console's own page breaks no rule of its policy")
	ran, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](`(() => { const e = document.createElement("script"); e.textContent = "window.cnInline = true"; document.body.append(e); return window.cnInline === true })()`))
	require.NoError(t, err)
	require.False(t, ran, "an inline script does not run")
	s.waitFor("the inline script reported", func() bool {
		v, err := chromedp.Run(s.ctx, chromedp.Evaluate[string](`JSON.stringify(window.cnCSPViolations)`))
		require.NoError(t, err)
		return strings.Contains(v, "script-src")
	})
}
