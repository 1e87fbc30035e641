package moderation

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

const issueRules = `
rules:
  - name: casino-spam
    kinds: [1]
    content_regex: "(?i)casino"
    label: spam
    action: label
  - name: reported-three-times
    min_reports: 3          # distinct reporters, optionally report_types: [spam]
    label: reported
    action: hide
`

func TestParseFile(t *testing.T) {
	t.Parallel()
	rules, err := ParseFile([]byte(issueRules))
	require.NoError(t, err)
	require.Len(t, rules, 2)
	require.Equal(t, "casino-spam", rules[0].Name)
	require.False(t, rules[0].IsReportRule())
	require.True(t, rules[1].IsReportRule())

	full, err := ParseFile([]byte(`
rules:
  - name: nsfw-warning
    kinds: [1, 1111]
    topics: [" Art ", "PHOTO"]
    authors: ["` + strings.Repeat("ab", 32) + `"]
    keywords: [nude]
    tags: {t: ["*"]}
    content_warning: true
    label: nudity
    action: hold
    expire: 720h
  - name: spam-reports
    min_reports: 2
    report_types: [spam, malware]
    report_window: 24h
    label: spam
    action: hide
`))
	require.NoError(t, err)
	require.Equal(t, []string{"art", "photo"}, full[0].Topics, "topics are normalised")
	require.Equal(t, Duration(24*3600e9), full[1].ReportWindow)
	// The spec survives a JSON round trip (rules are stored as JSON).
	var again Rule
	require.NoError(t, jsonRoundTrip(full[0], &again))
	require.Equal(t, string(full[0].Spec()), string(again.Spec()))
}

func TestParseFileRefusesInvalidRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"bad regex", "rules:\n  - {name: r1, content_regex: '(', label: spam, action: label}", `rule "r1": content_regex: error parsing regexp`},
		{"unknown field", "rules:\n  - {name: r1, colour: red, label: spam, action: label}", "field colour not found"},
		{"unknown action", "rules:\n  - {name: r1, label: spam, action: ban}", `rule "r1": unknown action "ban"`},
		{"no label", "rules:\n  - {name: r1, action: label}", `rule "r1": label must be`},
		{"bad name", "rules:\n  - {name: 'Has Space', label: spam, action: label}", "name must be"},
		{"duplicate", "rules:\n  - {name: r1, label: spam, action: label}\n  - {name: r1, label: spam, action: hide}", `rule "r1": defined twice`},
		{"unknown report type", "rules:\n  - {name: r1, min_reports: 2, report_types: [rude], label: spam, action: hide}", `unknown report type "rude"`},
		{"window without reports", "rules:\n  - {name: r1, report_window: 1h, label: spam, action: hide}", "need min_reports"},
		{"bad duration", "rules:\n  - {name: r1, expire: soon, label: spam, action: label}", `duration "soon"`},
		{"bad author", "rules:\n  - {name: r1, authors: [npub1x], label: spam, action: label}", "not a 64-character hex pubkey"},
		{"not yaml", "rules: [", "rules file"},
	} {
		_, err := ParseFile([]byte(tc.file))
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	// Every invalid rule is named at once; nothing is returned.
	rules, err := ParseFile([]byte("rules:\n  - {name: a, label: spam, action: x}\n  - {name: b, label: spam, action: y}"))
	require.Nil(t, rules)
	require.ErrorContains(t, err, `rule "a"`)
	require.ErrorContains(t, err, `rule "b"`)
}

func TestMatchesEvent(t *testing.T) {
	t.Parallel()
	rules, err := ParseFile([]byte(`
rules:
  - {name: casino, kinds: [1], content_regex: "(?i)casino", label: spam, action: label}
  - {name: words, keywords: [Viagra, "cheap pills"], label: spam, action: label}
  - {name: art-cw, topics: [art], content_warning: true, label: nudity, action: hold}
  - {name: no-cw, topics: [art], content_warning: false, tags: {p: ["*"]}, label: other, action: label}
`))
	require.NoError(t, err)
	cs := make([]*compiled, len(rules))
	for i, r := range rules {
		cs[i], err = compile(r, 1)
		require.NoError(t, err)
	}
	ev := func(kind int, content string, topics []string, tags ...nostr.Tag) *target {
		return &target{Event: &nostr.Event{Kind: kind, Content: content, Tags: tags}, topics: topics}
	}
	match := func(tg *target) []string {
		var out []string
		for _, c := range cs {
			if c.matchesEvent(tg, &text{content: tg.Content}) {
				out = append(out, c.Name)
			}
		}
		return out
	}
	require.Equal(t, []string{"casino"}, match(ev(1, "Best CASINO in town", nil)))
	require.Empty(t, match(ev(1111, "Best CASINO in town", nil)), "kinds")
	require.Equal(t, []string{"words"}, match(ev(7, "buy CHEAP pills now", nil)))
	require.Equal(t, []string{"art-cw"}, match(ev(1, "a painting", []string{"art"}, nostr.Tag{"content-warning", "nudity"})))
	require.Equal(t, []string{"no-cw"}, match(ev(1, "a painting", []string{"art"}, nostr.Tag{"p", strings.Repeat("ab", 32)})))
	require.Empty(t, match(ev(1, "a painting", []string{"music"}, nostr.Tag{"content-warning", ""})), "topics")
}

func TestThresholdIgnoresArrivalOrder(t *testing.T) {
	t.Parallel()
	met := func(c *compiled, rs []report) bool { ok, _ := c.thresholdMet(rs); return ok }
	c, err := compile(Rule{Name: "r", MinReports: 3, ReportWindow: Duration(200e9), Label: "spam", Action: "hide"}, 1)
	require.NoError(t, err)
	rs := []report{{reporter: "a", createdAt: 100}, {reporter: "b", createdAt: 200}, {reporter: "c", createdAt: 300}}
	require.True(t, met(c, rs))
	require.True(t, met(c, []report{rs[2], rs[0], rs[1]}))
	rs[2].createdAt = 301 // a, b, c no longer fit one 200 s window
	require.False(t, met(c, rs))
	require.False(t, met(c, []report{rs[0], rs[0], rs[1]}), "distinct reporters")

	typed, err := compile(Rule{Name: "t", MinReports: 2, ReportTypes: []string{"spam"}, Label: "spam", Action: "hide"}, 1)
	require.NoError(t, err)
	require.False(t, met(typed, []report{{reporter: "a", typ: "spam"}, {reporter: "b", typ: "nudity"}}))
	require.True(t, met(typed, []report{{reporter: "a", typ: "spam"}, {reporter: "b", typ: "spam"}}))
}

// TestMinReporterRank: reports from keys ranked below min_reporter_rank do not
// count (a ring of fresh keys cannot reach the threshold); a rule that fires
// tells the lowest rank it relied on.
func TestMinReporterRank(t *testing.T) {
	t.Parallel()
	c, err := compile(Rule{Name: "r", MinReports: 2, MinReporterRank: 20, Label: "spam", Action: "hide"}, 1)
	require.NoError(t, err)
	var sybils []report
	for i := range 1000 {
		sybils = append(sybils, report{reporter: fmt.Sprint("sybil", i), rank: 0})
	}
	ok, _ := c.thresholdMet(sybils)
	require.False(t, ok, "1,000 unranked reporters count for nothing")
	ok, _ = c.thresholdMet(append(sybils, report{reporter: "a", rank: 55}, report{reporter: "b", rank: 19}))
	require.False(t, ok, "one reporter at or above the minimum")
	ok, lowest := c.thresholdMet(append(sybils, report{reporter: "a", rank: 55}, report{reporter: "b", rank: 20}))
	require.True(t, ok)
	require.Equal(t, int16(20), lowest)

	_, err = ParseFile([]byte("rules:\n  - {name: r, min_reporter_rank: 10, label: spam, action: hide}\n"))
	require.ErrorContains(t, err, "need min_reports")
	_, err = ParseFile([]byte("rules:\n  - {name: r, min_reports: 2, min_reporter_rank: 101, label: spam, action: hide}\n"))
	require.ErrorContains(t, err, "min_reporter_rank must be 0-100")
}

func TestParseReport(t *testing.T) {
	t.Parallel()
	pk, id := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	r := parseReport(&nostr.Event{ID: "r", PubKey: "me", CreatedAt: 5, Tags: nostr.Tags{{"e", id, "spam"}, {"p", pk}}})
	require.Equal(t, []report{{id: "r", target: id, targetKind: "event", targetPubkey: pk, reporter: "me", typ: "spam", createdAt: 5}}, r)
	r = parseReport(&nostr.Event{ID: "r", PubKey: "me", Tags: nostr.Tags{{"p", pk, "impersonation"}}})
	require.Equal(t, []report{{id: "r", target: pk, targetKind: "pubkey", targetPubkey: pk, reporter: "me", typ: "impersonation"}}, r)
	r = parseReport(&nostr.Event{ID: "r", PubKey: "me", Tags: nostr.Tags{{"e", id, "weird"}, {"p", pk}}})
	require.Equal(t, "other", r[0].typ)
	require.Empty(t, parseReport(&nostr.Event{Tags: nostr.Tags{{"e", id, "spam"}}}), "NIP-56 needs a p tag")
}

func jsonRoundTrip(r Rule, into *Rule) error {
	return json.Unmarshal(r.Spec(), into)
}

// TestOpenAt: report rules count what was open as of the row they run on, so a
// replay (which sees reports the live run got later) decides the same way.
func TestOpenAt(t *testing.T) {
	t.Parallel()
	all := []report{
		{reporter: "a", seq: 10},
		{reporter: "b", seq: 20, withdrawn: 25},
		{reporter: "c", seq: 30},
	}
	who := func(rs []report) (out []string) {
		for _, r := range rs {
			out = append(out, r.reporter)
		}
		return out
	}
	require.Equal(t, []string{"a"}, who(openAt(all, 10)))
	require.Equal(t, []string{"a", "b"}, who(openAt(all, 24)))
	require.Equal(t, []string{"a"}, who(openAt(all, 25)), "withdrawn from its row on")
	require.Equal(t, []string{"a", "c"}, who(openAt(all, 30)))
}

// TestPrefilterNeverHidesAMatch: for ASCII texts, whenever an expression
// matches, the lower-cased text contains one of its prefilter literals.
func TestPrefilterNeverHidesAMatch(t *testing.T) {
	t.Parallel()
	exprs := []string{`(?i)casino`, `(?i)\b(casino|jackpot)\b`, `buy\s+now`, `(?i)free (money|bitcoin)+`, `ab{2,}c`,
		`x*casino`, `(?i)c[a@]sino`, `(?i)(spam|eggs)\d{3}`, `^hello`, `(?i)(?:win|won) big`, `a|b*`}
	alphabet := []string{"casino", "CASINO", "CaSiNo", "jackpot", "JACKPOT", "buy", "now", " ", "\t", "free", "MONEY",
		"bitcoin", "abbc", "abc", "x", "c@sino", "spam123", "eggs", "hello", "win big", "WON BIG", "a", "b", "z"}
	rng := rand.New(rand.NewPCG(9, 9))
	withFilter := 0
	for _, expr := range exprs {
		re := regexp.MustCompile(expr)
		lits, ok := prefilter(expr)
		if !ok {
			continue
		}
		withFilter++
		for range 3000 {
			var b strings.Builder
			for range 1 + rng.IntN(6) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			s := b.String()
			if !re.MatchString(s) {
				continue
			}
			lower := strings.ToLower(s)
			require.True(t, slices.ContainsFunc(lits, func(l string) bool { return strings.Contains(lower, l) }),
				"%q matches %q but none of %q is in it", expr, s, lits)
		}
	}
	require.GreaterOrEqual(t, withFilter, 8, "most expressions get a prefilter")
	lits, ok := prefilter(`(?i)\b(casino0|jackpot0)\b`)
	require.True(t, ok)
	require.Equal(t, []string{"casino0", "jackpot0"}, lits)
	_, ok = prefilter(`(?i)カジノ`)
	require.False(t, ok, "non-ASCII literals: no prefilter")
}
