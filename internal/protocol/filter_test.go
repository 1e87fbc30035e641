package protocol_test

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// parseFilter decodes a filter as it arrives on the wire.
func parseFilter(t *testing.T, js string) nostr.Filter {
	t.Helper()
	var f nostr.Filter
	require.NoError(t, f.UnmarshalJSON([]byte(js)), js)
	return f
}

func TestValidateFilter(t *testing.T) {
	t.Parallel()
	many := func(n int, v string) string {
		return `["` + strings.TrimSuffix(strings.Repeat(v+`","`, n), `","`) + `"]`
	}
	for _, tc := range []struct {
		name   string
		in     string
		limits func(*protocol.Limits)
		want   string                         // reason
		check  func(*testing.T, nostr.Filter) // on success
	}{
		{name: "topic normalised, default limit", in: `{"#t":["Go"]}`, check: func(t *testing.T, f nostr.Filter) {
			require.Equal(t, []string{"go"}, f.Tags["t"])
			require.Equal(t, 100, f.Limit)
			require.False(t, f.LimitZero)
		}},
		{name: "topics deduplicated, empty dropped", in: `{"#t":["ＮＯＳＴＲ","nostr"," ","日本語"]}`, check: func(t *testing.T, f nostr.Filter) {
			require.Equal(t, []string{"nostr", "日本語"}, f.Tags["t"])
		}},
		{name: "limit 0 means live only", in: `{"#t":["go"],"limit":0}`, check: func(t *testing.T, f nostr.Filter) {
			require.True(t, f.LimitZero)
			require.Zero(t, f.Limit)
		}},
		{name: "limit kept", in: `{"#t":["go"],"limit":7}`, check: func(t *testing.T, f nostr.Filter) {
			require.Equal(t, 7, f.Limit)
		}},
		{name: "limit capped", in: `{"#t":["go"],"limit":100000}`, check: func(t *testing.T, f nostr.Filter) {
			require.Equal(t, 500, f.Limit)
		}},
		{name: "everything valid", in: `{"#t":["go"],"ids":["` + hex64('1') + `"],"authors":["` + hex64('2') + `"],"kinds":[0,65535],"since":5,"until":5,"#e":["` + hex64('3') + `"],"#p":["` + hex64('4') + `"],"#r":["wss://x"],"#T":["Go"]}`,
			check: func(t *testing.T, f nostr.Filter) {
				require.Equal(t, []string{"Go"}, f.Tags["T"], "only #t is a topic")
				require.Equal(t, []int{0, 65535}, f.Kinds)
			}},
		{name: "no topic needed when not required", in: `{"kinds":[1]}`, check: func(t *testing.T, f nostr.Filter) {
			require.Nil(t, f.Tags)
		}},
		{name: "empty topic list kept, matches nothing", in: `{"#t":[]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = false }, check: func(t *testing.T, f nostr.Filter) {
			require.NotNil(t, f.Tags["t"])
			require.Empty(t, f.Tags["t"])
		}},
		{name: "enabled topic", in: `{"#t":["GO"]}`, limits: func(l *protocol.Limits) { l.AllowedTopics = map[string]bool{"go": true} }},
		{name: "max values", in: `{"#t":["go"],"kinds":[` + strings.TrimSuffix(strings.Repeat("1,", 500), ",") + `]}`},

		{name: "no #t needed by default", in: `{"kinds":[7],"#e":["` + hex64('1') + `"]}`},
		{name: "strict: identity kinds need no #t", in: `{"kinds":[0,3,10002],"authors":["` + hex64('2') + `"]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, check: func(t *testing.T, f nostr.Filter) {
			require.Nil(t, f.Tags)
		}},
		{name: "strict: no #t", in: `{"kinds":[1]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, want: protocol.ReasonTopicFilterRequired},
		{name: "strict: identity and other kinds without #t", in: `{"kinds":[0,1]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, want: protocol.ReasonTopicFilterRequired},
		{name: "strict: no kinds, no #t", in: `{"authors":["` + hex64('2') + `"]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, want: protocol.ReasonTopicFilterRequired},
		{name: "strict: #t without a topic", in: `{"#t":[" ",""]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, want: protocol.ReasonTopicFilterRequired},
		{name: "strict: empty #t", in: `{"#t":[]}`, limits: func(l *protocol.Limits) { l.RequireTopicInREQ = true }, want: protocol.ReasonTopicFilterRequired},
		{name: "topic not enabled", in: `{"#t":["go","rust"]}`, limits: func(l *protocol.Limits) { l.AllowedTopics = map[string]bool{"go": true} }, want: protocol.ReasonTopicNotEnabled},
		{name: "short id", in: `{"#t":["go"],"ids":["abcd"]}`, want: protocol.ReasonFilterBadID},
		{name: "upper-case id", in: `{"#t":["go"],"ids":["` + strings.ToUpper(hex64('a')) + `"]}`, want: protocol.ReasonFilterBadID},
		{name: "bad author", in: `{"#t":["go"],"authors":["npub1"]}`, want: protocol.ReasonFilterBadAuthor},
		{name: "negative kind", in: `{"#t":["go"],"kinds":[-1]}`, want: protocol.ReasonFilterBadKind},
		{name: "kind too large", in: `{"#t":["go"],"kinds":[65536]}`, want: protocol.ReasonFilterBadKind},
		{name: "since after until", in: `{"#t":["go"],"since":6,"until":5}`, want: protocol.ReasonFilterSinceAfter},
		{name: "negative limit", in: `{"#t":["go"],"limit":-1}`, want: protocol.ReasonFilterNegativeLimit},
		{name: "search", in: `{"#t":["go"],"search":"nostr"}`},
		{name: "search disabled", in: `{"#t":["go"],"search":"nostr"}`, limits: func(l *protocol.Limits) { l.Search = false }, want: protocol.ReasonFilterSearch},
		{name: "search too long", in: `{"#t":["go"],"search":"` + strings.Repeat("a", 257) + `"}`, want: protocol.ReasonFilterSearchTooLong},
		{name: "multi-letter tag", in: `{"#t":["go"],"#tt":["x"]}`, want: protocol.ReasonFilterTagName},
		{name: "digit tag", in: `{"#t":["go"],"#1":["x"]}`, want: protocol.ReasonFilterTagName},
		{name: "bad #e", in: `{"#t":["go"],"#e":["abc"]}`, want: protocol.ReasonFilterBadTagValue},
		{name: "bad #p", in: `{"#t":["go"],"#p":["` + strings.ToUpper(hex64('a')) + `"]}`, want: protocol.ReasonFilterBadTagValue},
		{name: "tag value too long", in: `{"#t":["go"],"#r":["` + strings.Repeat("x", 1025) + `"]}`, want: protocol.ReasonFilterTagTooLong},
		{name: "topic too long once normalised", in: `{"#t":["` + strings.Repeat("\ufdfa", 300) + `"]}`, want: protocol.ReasonFilterTagTooLong},
		{name: "NUL in tag value", in: `{"#t":["go"],"#r":["a\u0000b"]}`, want: protocol.ReasonFilterBadText},
		{name: "too many authors", in: `{"#t":["go"],"authors":` + many(501, hex64('a')) + `}`, want: protocol.ReasonFilterTooManyValues},
		{name: "too many topics", in: `{"#t":` + many(501, "go") + `}`, want: protocol.ReasonFilterTooManyValues},
		{name: "too many kinds", in: `{"#t":["go"],"kinds":[` + strings.TrimSuffix(strings.Repeat("1,", 501), ",") + `]}`, want: protocol.ReasonFilterTooManyValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := protocol.DefaultLimits()
			if tc.limits != nil {
				tc.limits(&l)
			}
			in := parseFilter(t, tc.in)
			before := in.Clone()
			out, reason := protocol.ValidateFilter(in, l)
			require.Equal(t, tc.want, reason)
			require.Equal(t, before, in, "input modified")
			if reason != "" {
				ev := signed(t, nostr.GeneratePrivateKey(), nil)
				require.False(t, protocol.Match(out, ev), "a refused filter must match nothing")
				require.True(t, out.LimitZero)
				return
			}
			if tc.check != nil {
				tc.check(t, out)
			}
			again, reason := protocol.ValidateFilter(out, l)
			require.Equal(t, "", reason)
			require.True(t, nostr.FilterEqual(out, again) && out.Limit == again.Limit, "not idempotent: %v -> %v", out, again)
		})
	}
}

func TestValidateFilterLimitsDisabled(t *testing.T) {
	t.Parallel()
	f, reason := protocol.ValidateFilter(nostr.Filter{}, protocol.Limits{})
	require.Equal(t, "", reason)
	require.Zero(t, f.Limit)
	require.False(t, f.LimitZero)

	f, reason = protocol.ValidateFilter(nostr.Filter{}, protocol.Limits{MaxLimit: 20})
	require.Equal(t, "", reason)
	require.Equal(t, 20, f.Limit, "no default: the cap")
}

func TestMatch(t *testing.T) {
	t.Parallel()
	ev := &nostr.Event{
		ID: hex64('1'), PubKey: hex64('2'), CreatedAt: 100, Kind: 1,
		Tags: nostr.Tags{
			{"t", "ＧＯ"}, {"t", " "}, {"p", hex64('3'), "wss://relay"}, {"e"}, {"r", "x", hex64('9')}, {"T", "Big"},
		},
	}
	for _, tc := range []struct {
		name string
		f    nostr.Filter
		want bool
	}{
		{"empty filter", nostr.Filter{}, true},
		{"id", nostr.Filter{IDs: []string{hex64('0'), hex64('1')}}, true},
		{"other id", nostr.Filter{IDs: []string{hex64('0')}}, false},
		{"empty ids", nostr.Filter{IDs: []string{}}, false},
		{"author", nostr.Filter{Authors: []string{hex64('2')}}, true},
		{"other author", nostr.Filter{Authors: []string{hex64('3')}}, false},
		{"kind", nostr.Filter{Kinds: []int{0, 1}}, true},
		{"other kind", nostr.Filter{Kinds: []int{7}}, false},
		{"empty kinds", nostr.Filter{Kinds: []int{}}, false},
		{"since inclusive", nostr.Filter{Since: ts(100)}, true},
		{"since after", nostr.Filter{Since: ts(101)}, false},
		{"until inclusive", nostr.Filter{Until: ts(100)}, true},
		{"until before", nostr.Filter{Until: ts(99)}, false},
		{"topic normalised on the event side", nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}}, true},
		{"filter topic taken as given", nostr.Filter{Tags: nostr.TagMap{"t": {"GO"}}}, false},
		{"one of several topics", nostr.Filter{Tags: nostr.TagMap{"t": {"rust", "go"}}}, true},
		{"other topic", nostr.Filter{Tags: nostr.TagMap{"t": {"rust"}}}, false},
		{"empty event topic never matches", nostr.Filter{Tags: nostr.TagMap{"t": {""}}}, false},
		{"empty topic list", nostr.Filter{Tags: nostr.TagMap{"t": {}}}, false},
		{"nil tag list is no condition", nostr.Filter{Tags: nostr.TagMap{"t": nil}}, true},
		{"p by first value", nostr.Filter{Tags: nostr.TagMap{"p": {hex64('3')}}}, true},
		{"only the first value counts", nostr.Filter{Tags: nostr.TagMap{"r": {hex64('9')}}}, false},
		{"tag without value", nostr.Filter{Tags: nostr.TagMap{"e": {""}}}, false},
		{"upper-case tag is another tag", nostr.Filter{Tags: nostr.TagMap{"T": {"big"}}}, false},
		{"upper-case tag exact", nostr.Filter{Tags: nostr.TagMap{"T": {"Big"}}}, true},
		{"absent tag", nostr.Filter{Tags: nostr.TagMap{"d": {"x"}}}, false},
		{"all conditions", nostr.Filter{
			IDs: []string{hex64('1')}, Authors: []string{hex64('2')}, Kinds: []int{1}, Since: ts(1), Until: ts(200),
			Tags: nostr.TagMap{"t": {"go"}, "p": {hex64('3')}},
		}, true},
		{"all but one condition", nostr.Filter{
			IDs: []string{hex64('1')}, Authors: []string{hex64('2')}, Kinds: []int{1}, Since: ts(1), Until: ts(200),
			Tags: nostr.TagMap{"t": {"go"}, "p": {hex64('4')}},
		}, false},
		{"limit plays no part", nostr.Filter{Limit: 1, LimitZero: true}, true},
	} {
		require.Equal(t, tc.want, protocol.Match(tc.f, ev), tc.name)
		lf := protocol.NewLiveFilter(tc.f)
		require.Equal(t, tc.want, lf.Match(ev), "%s (LiveFilter)", tc.name)
	}
	require.False(t, protocol.Match(nostr.Filter{}, nil))
	lf := protocol.NewLiveFilter(nostr.Filter{})
	require.False(t, lf.Match(nil))
}

// TestValidatedFilterMatchesNormalisedTopics ties ValidateFilter and Match together:
// whatever spelling of a topic the client sends, it finds events tagged with any
// spelling of the same topic.
func TestValidatedFilterMatchesNormalisedTopics(t *testing.T) {
	t.Parallel()
	spellings := []string{"nostr", "NOSTR", " Nostr ", "ＮＯＳＴＲ", "ｎｏｓｔｒ"}
	for _, tagged := range spellings {
		ev := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", tagged}}}
		for _, asked := range spellings {
			f, reason := protocol.ValidateFilter(nostr.Filter{Tags: nostr.TagMap{"t": {asked}}}, protocol.DefaultLimits())
			require.Equal(t, "", reason)
			require.True(t, protocol.Match(f, ev), "tagged %q, asked %q", tagged, asked)
		}
	}
}
