package bridge

import (
	"encoding/base32"
	"regexp"
	"strings"

	"github.com/kukuri/communitynode/internal/protocol"
)

// NodeToken is the subject token of the person scope (protocol.NodeTopic).
const NodeToken = "NODE"

var (
	plainToken = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	tokenCodec = base32.StdEncoding.WithPadding(base32.NoPadding)
)

// TopicToken returns the subject token of a topic id: the id itself when it
// is 1 to 64 of [a-z0-9-] (not starting with '-'), NodeToken for the person
// scope, else "_" + the lower-case unpadded base32 of its bytes. Distinct
// topics have distinct tokens, and every token is a valid NATS subject token.
func TopicToken(topic string) string {
	switch {
	case topic == protocol.NodeTopic:
		return NodeToken
	case plainToken.MatchString(topic):
		return topic
	default:
		return "_" + strings.ToLower(tokenCodec.EncodeToString([]byte(topic)))
	}
}
