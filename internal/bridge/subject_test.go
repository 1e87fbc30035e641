package bridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

func TestTopicTokens(t *testing.T) {
	seen := map[string]string{}
	for _, topic := range []string{"NODE", "nostr", "go-lang", "a.b", "a b", "*", ">", "", "日本語", "node", "_x", "-x", "UPPER",
		"a234567890123456789012345678901234567890123456789012345678901234",
		"a2345678901234567890123456789012345678901234567890123456789012345"} {
		tok := TopicToken(topic)
		require.Regexp(t, `^[A-Za-z0-9_-]+$`, tok, "topic %q", topic)
		prev, dup := seen[tok]
		require.False(t, dup, "topics %q and %q share token %q", prev, topic, tok)
		seen[tok] = topic
		back, ok := TopicOf(tok)
		require.True(t, ok, tok)
		require.Equal(t, topic, back)
	}
	require.Equal(t, "NODE", TopicToken("NODE"))
	require.Equal(t, "nostr", TopicToken("nostr"))
	require.Equal(t, "_mexge", TopicToken("a.b"))
	for _, bad := range []string{"_mexge!", "_" + "nzxwi4q", "Nostr"} { // "_nzxwi4q" decodes to the plain "nostr"
		_, ok := TopicOf(bad)
		require.False(t, ok, bad)
	}
}

// TopicOf inverts TopicToken; ok is false for a token TopicToken never
// returns. The test uses it to show that no two topics share a token and
// that every token names its topic (nothing in the node decodes subjects).
func TopicOf(token string) (topic string, ok bool) {
	switch {
	case token == NodeToken:
		return protocol.NodeTopic, true
	case plainToken.MatchString(token):
		return token, true
	case strings.HasPrefix(token, "_"):
		b, err := tokenCodec.DecodeString(strings.ToUpper(token[1:]))
		if err != nil || plainToken.Match(b) || string(b) == protocol.NodeTopic {
			return "", false
		}
		return string(b), true
	}
	return "", false
}
