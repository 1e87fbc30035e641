package protocol_test

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

func TestNormalizeTopic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"ＮＯＳＴＲ", "nostr"},             // full-width Latin
		{" Go ", "go"},                 // trim, lower
		{"日本語", "日本語"},                 // no case: unchanged
		{"\u3000ニュース\u3000", "ニュース"},   // ideographic space becomes a space, then trimmed
		{"ﾆｭｰｽ", "ニュース"},               // half-width katakana
		{"ｇｏ ｌａｎｇ", "go lang"},         // inner space kept
		{"\tNostr\n", "nostr"},         // any white space trimmed
		{"Ⅻ", "xii"},                   // roman numeral compatibility form
		{"①", "1"},                     // circled digit
		{"\u212a", "k"},                // Kelvin sign
		{"\u1d2c", "a"},                // modifier capital A: NFKC before lowering
		{"Straße", "straße"},           // lower-casing is not case folding
		{"STRASSE", "strasse"},         // ... so these two stay different
		{"e\u0301", "\u00e9"},          // composed by NFKC
		{"nostr\u200b", "nostr\u200b"}, // zero-width space is not removed
		{"", ""},                       // empty
		{"  \u3000 ", ""},              // only white space
	} {
		got := protocol.NormalizeTopic(tc.in)
		require.Equal(t, tc.want, got, "NormalizeTopic(%q)", tc.in)
		require.Equal(t, got, protocol.NormalizeTopic(got), "not idempotent for %q", tc.in)
	}
}

func TestTopics(t *testing.T) {
	t.Parallel()
	ev := &nostr.Event{Tags: nostr.Tags{
		{"t", "Go"}, {"p", hex64('1')}, {"t", "go"}, {"t", " "}, {"t"}, {"T", "rust"},
		{"t", "ＮＯＳＴＲ"}, {"t", "nostr"}, {"t", "日本語"},
	}}
	require.Equal(t, []string{"go", "nostr", "日本語"}, protocol.Topics(ev))
	require.Nil(t, protocol.Topics(&nostr.Event{Tags: nostr.Tags{{"p", hex64('1')}}}))
	require.Nil(t, protocol.Topics(nil))
}

func TestDTag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tags   nostr.Tags
		want   string
		wantOK bool
	}{
		{"none", nostr.Tags{{"t", "go"}}, "", false},
		{"value", nostr.Tags{{"d", "abc"}}, "abc", true},
		{"first wins", nostr.Tags{{"t", "go"}, {"d", "one"}, {"d", "two"}}, "one", true},
		{"empty value", nostr.Tags{{"d", ""}}, "", true},
		{"no value", nostr.Tags{{"d"}}, "", true},
		{"upper case D is another tag", nostr.Tags{{"D", "x"}}, "", false},
	} {
		got, ok := protocol.DTag(&nostr.Event{Tags: tc.tags})
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.wantOK, ok, tc.name)
	}
	_, ok := protocol.DTag(nil)
	require.False(t, ok)
}

func TestEffectiveKey(t *testing.T) {
	t.Parallel()
	pk := hex64('a')
	for _, tc := range []struct {
		kind int
		tags nostr.Tags
		want string
	}{
		{1, nil, ""},
		{5, nil, ""},
		{0, nil, "0:" + pk},
		{3, nostr.Tags{{"d", "ignored"}}, "3:" + pk},
		{10002, nil, "10002:" + pk},
		{19999, nil, "19999:" + pk},
		{20001, nil, ""},
		{30023, nostr.Tags{{"d", "slug"}}, "30023:" + pk + ":slug"},
		{30023, nostr.Tags{{"d", "a:b"}}, "30023:" + pk + ":a:b"},
		{30023, nostr.Tags{{"d", ""}}, "30023:" + pk + ":"},
		{39999, nil, "39999:" + pk + ":"},
		{40000, nil, ""},
	} {
		ev := &nostr.Event{Kind: tc.kind, PubKey: pk, Tags: tc.tags}
		require.Equal(t, tc.want, protocol.EffectiveKey(ev), "kind %d tags %v", tc.kind, tc.tags)
	}
	require.Equal(t, "", protocol.EffectiveKey(nil))
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tags   nostr.Tags
		want   int64
		wantOK bool
	}{
		{"none", nostr.Tags{{"t", "go"}}, 0, false},
		{"valid", nostr.Tags{{"expiration", "1700000600"}}, 1700000600, true},
		{"zero", nostr.Tags{{"expiration", "0"}}, 0, true},
		{"first wins", nostr.Tags{{"expiration", "10"}, {"expiration", "20"}}, 10, true},
		{"first malformed wins", nostr.Tags{{"expiration", "x"}, {"expiration", "20"}}, 0, false},
		{"no value", nostr.Tags{{"expiration"}}, 0, false},
		{"empty", nostr.Tags{{"expiration", ""}}, 0, false},
		{"letters", nostr.Tags{{"expiration", "soon"}}, 0, false},
		{"negative", nostr.Tags{{"expiration", "-5"}}, 0, false},
		{"plus sign", nostr.Tags{{"expiration", "+5"}}, 0, false},
		{"fraction", nostr.Tags{{"expiration", "1.5"}}, 0, false},
		{"spaces", nostr.Tags{{"expiration", " 5"}}, 0, false},
		{"overflow", nostr.Tags{{"expiration", "99999999999999999999"}}, 0, false},
	} {
		got, ok := protocol.Expiration(&nostr.Event{Tags: tc.tags})
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.wantOK, ok, tc.name)
	}
}

func TestProtected(t *testing.T) {
	t.Parallel()
	require.True(t, protocol.Protected(&nostr.Event{Tags: nostr.Tags{{"t", "go"}, {"-"}}}))
	require.True(t, protocol.Protected(&nostr.Event{Tags: nostr.Tags{{"-", "extra"}}}))
	require.False(t, protocol.Protected(&nostr.Event{Tags: nostr.Tags{{"t", "-"}}}))
	require.False(t, protocol.Protected(&nostr.Event{Tags: nostr.Tags{{"--"}}}))
	require.False(t, protocol.Protected(&nostr.Event{}))
	require.False(t, protocol.Protected(nil))
}

func TestLimits(t *testing.T) {
	t.Parallel()
	l := protocol.DefaultLimits()
	require.NoError(t, l.Validate())

	l.AllowedTopics = map[string]bool{"go": true, "日本語": true}
	require.NoError(t, l.Validate())

	bad := protocol.DefaultLimits()
	bad.MaxFilters = 0
	bad.MaxFutureSkew = 0
	bad.DefaultLimit = 1000
	bad.AllowedTopics = map[string]bool{"Go": true, " ": true}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"MaxFilters", "MaxFutureSkew", "DefaultLimit 1000", `"Go"`, `" "`} {
		require.True(t, strings.Contains(err.Error(), want), "%q missing from %q", want, err)
	}

	doc := protocol.DefaultLimits().Limitation()
	require.Equal(t, 131072, doc.MaxMessageLength)
	require.Equal(t, 10, doc.MaxFilters)
	require.Equal(t, 500, doc.MaxLimit)
	require.Equal(t, 64, doc.MaxSubidLength)
	require.Equal(t, 2000, doc.MaxEventTags)
	require.Equal(t, 65536, doc.MaxContentLength)
	require.True(t, doc.RestrictedWrites)
	open := protocol.DefaultLimits()
	open.RequireTopic = false
	require.False(t, open.Limitation().RestrictedWrites)
}
