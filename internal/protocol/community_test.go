package protocol_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// TestNodeTopicIsUnreachable checks the promise behind NodeTopic: no normalised
// topic contains an upper-case ASCII letter. Checking every code point is enough:
// NFKC's decompositions act per character and its compositions never produce an
// ASCII letter, so a string normalises to upper-case ASCII only if one of its
// characters (or a composed character, itself a code point checked here) does.
func TestNodeTopicIsUnreachable(t *testing.T) {
	t.Parallel()
	require.NotEqual(t, protocol.NodeTopic, protocol.NormalizeTopic(protocol.NodeTopic))
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		n := protocol.NormalizeTopic(string(r))
		if strings.IndexFunc(n, func(c rune) bool { return c >= 'A' && c <= 'Z' }) >= 0 {
			t.Fatalf("U+%04X normalises to %q, which contains upper-case ASCII", r, n)
		}
	}
}

func TestIsIdentityKind(t *testing.T) {
	t.Parallel()
	for _, k := range []int{0, 3, 10000, 10002, 10015, 19999, 30382, 30383, 30385} {
		require.True(t, protocol.IsIdentityKind(k), k)
	}
	for _, k := range []int{1, 5, 6, 7, 1111, 1984, 1985, 9735, 20000, 30023, 30381, 30386} {
		require.False(t, protocol.IsIdentityKind(k), k)
	}
}

func TestTopicRefs(t *testing.T) {
	t.Parallel()
	addr := "30023:" + hex64('2') + ":my:post"
	ev := &nostr.Event{Tags: nostr.Tags{
		{"e", hex64('1'), "wss://r", "root"},
		{"E", hex64('3')},
		{"e", hex64('1')}, // duplicate
		{"a", addr},
		{"A", "0:" + hex64('4') + ":"}, // replaceable: an address with an empty d
		{"q", hex64('5')},
		{"q", "30023:" + hex64('6') + ":x"},
		{"p", hex64('7')},               // people are not topic sources
		{"e", "not-an-id"},              // malformed
		{"a", "1:" + hex64('8') + ":x"}, // regular kinds have no address
		{"a", "30023:abc:x"},            // bad pubkey
		{"a", "x:" + hex64('8') + ":x"}, // bad kind
		{"e"},                           // no value
	}}
	refs := protocol.TopicRefs(ev)
	require.Equal(t, []string{hex64('1'), hex64('3'), hex64('5')}, refs.IDs)
	require.Equal(t, []string{addr, "0:" + hex64('4') + ":", "30023:" + hex64('6') + ":x"}, refs.Addresses)
	require.True(t, protocol.TopicRefs(&nostr.Event{Tags: nostr.Tags{{"p", hex64('7')}}}).Empty())
	require.True(t, protocol.TopicRefs(nil).Empty())
}

func TestMatchHashtagsAreOwnTags(t *testing.T) {
	t.Parallel()
	f := nostr.Filter{Tags: nostr.TagMap{"t": {"go"}}}
	reaction := &nostr.Event{ID: hex64('1'), PubKey: hex64('2'), Kind: 7, Tags: nostr.Tags{{"e", hex64('3')}}}
	require.False(t, protocol.Match(f, reaction), "an inherited topic is no t tag")
	note := &nostr.Event{ID: hex64('5'), PubKey: hex64('2'), Kind: 1, Tags: nostr.Tags{{"t", "Go"}}}
	require.True(t, protocol.Match(f, note))
	interests := &nostr.Event{ID: hex64('4'), PubKey: hex64('2'), Kind: 10015, Tags: nostr.Tags{{"t", "go"}}}
	require.True(t, protocol.Match(f, interests), "#t matches the own t tags of every kind (NIP-01)")
	require.True(t, protocol.Match(nostr.Filter{Kinds: []int{10015}}, interests))
}

func TestTopicRulesValidate(t *testing.T) {
	t.Parallel()
	l := protocol.DefaultLimits()
	require.Equal(t, protocol.IdentityWritersMembers, l.IdentityWriters)
	require.False(t, l.RequireTopicInREQ, "stock clients read without #t")
	require.NoError(t, l.Validate())
	l.IdentityWriters = "everyone"
	require.ErrorContains(t, l.Validate(), "identity writers")
	w, err := protocol.ParseIdentityWriters(" ANY ")
	require.NoError(t, err)
	require.Equal(t, protocol.IdentityWritersAny, w)
	l.AllowedTopics = map[string]bool{"go": true}
	require.True(t, l.Enabled(protocol.NodeTopic))
	require.True(t, l.Enabled("go"))
	require.False(t, l.Enabled("rust"))
}
