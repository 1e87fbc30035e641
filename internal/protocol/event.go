package protocol

import (
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/audience"
)

// Reasons returned by ValidateEvent and ValidateAuthEvent, each a NIP-01 OK message
// with its machine-readable prefix.
const (
	ReasonNoEvent          = "invalid: no event"
	ReasonMalformedID      = "invalid: id must be 64 lowercase hex characters"
	ReasonMalformedPubKey  = "invalid: pubkey must be 64 lowercase hex characters"
	ReasonMalformedSig     = "invalid: sig must be 128 lowercase hex characters"
	ReasonKindOutOfRange   = "invalid: kind must be between 0 and 65535"
	ReasonAuthKind         = "invalid: kind 22242 (NIP-42 auth) is only accepted in AUTH"
	ReasonFuture           = "invalid: created_at too far in the future"
	ReasonPast             = "invalid: created_at too far in the past"
	ReasonContentTooLong   = "invalid: content too long"
	ReasonTooManyTags      = "invalid: too many tags"
	ReasonEmptyTag         = "invalid: empty tag"
	ReasonTagValueTooLong  = "invalid: tag value too long"
	ReasonBadText          = "invalid: content and tags must be valid UTF-8 without NUL characters"
	ReasonNoDTag           = "invalid: addressable event without d tag"
	ReasonBadExpiration    = "invalid: malformed expiration tag"
	ReasonExpired          = "invalid: expired"
	ReasonMissingTopic     = "restricted: missing topic: add a t tag, or reply to, react to or quote (e, a or q tag) an event stored on this relay"
	ReasonPersonNotMember  = "restricted: this event names (p tag) no member of this relay"
	ReasonTopicTooLong     = "invalid: topic too long"
	ReasonTopicNotEnabled  = "restricted: topic not enabled"
	ReasonPendingFull      = "rate-limited: too many profiles and lists of newcomers are waiting here; try again later"
	ReasonPendingKeyFull   = "restricted: this key already has the most profiles and lists that may wait here for its first post"
	ReasonBadID            = "invalid: bad event id"
	ReasonBadSignature     = "invalid: bad signature"
	ReasonAuthNotAuthKind  = "invalid: auth event must be kind 22242"
	ReasonAuthStale        = "invalid: auth event created_at is not within 10 minutes of now"
	ReasonAuthChallenge    = "invalid: auth challenge does not match"
	ReasonAuthRelay        = "invalid: auth relay tag does not name this relay's URL"
	ReasonAuthMissingRelay = "error: this relay's URL is not configured; it cannot accept sign-ins"
)

// AuthMaxSkew is how far an AUTH event's created_at may be from now (NIP-42: "within
// ~10 minutes").
const AuthMaxSkew = 10 * time.Minute

// ValidateEvent checks everything about ev that does not depend on storage and
// returns "" when it is acceptable, else one of the Reason* constants. Duplicates,
// replaceable ordering, NIP-09 deletions and NIP-70 authorship are the caller's.
//
// The first failure is returned. The field formats come first (the id hash needs
// them), then the id hash (ReasonBadID) and the signature (ReasonBadSignature;
// BIP-340, as go-nostr's Event.CheckSignature checks it: building with the
// `libsecp256k1` tag speeds it up; see checkIDAndSignature), and only then the
// relay's rules, which judge the event its author signed: kind range (kind 22242
// is refused: AUTH events must not be published, NIP-42), created_at at most
// MaxFutureSkew ahead of now and at most MaxPastAge before it, content size, tag
// count, text encoding, empty tags, single-letter tag value size, the d tag of
// addressable kinds, the NIP-40 expiration (malformed, or at or before now:
// ReasonExpired), topics (checkTopics: the part of TopicRules that needs no
// storage, MaxTopics included). So an event whose id or signature does not match
// what it carries is answered invalid (bad event id, bad signature), never with
// a rule's answer about content its author did not sign (restricted: missing
// topic for tags changed in transit). The order costs a signature check for
// each well-signed event a rule refuses, a cost any client could already cause
// with a forged event that passes every rule.
func ValidateEvent(ev *nostr.Event, now time.Time, l Limits) string {
	if ev == nil {
		return ReasonNoEvent
	}
	if r := checkFormat(ev); r != "" {
		return r
	}
	if r := checkIDAndSignature(ev); r != "" {
		return r
	}
	if ev.Kind == nostr.KindClientAuthentication {
		return ReasonAuthKind
	}
	if l.MaxFutureSkew > 0 && int64(ev.CreatedAt) > now.Add(l.MaxFutureSkew).Unix() {
		return ReasonFuture
	}
	if l.MaxPastAge > 0 && int64(ev.CreatedAt) < now.Add(-l.MaxPastAge).Unix() {
		return ReasonPast
	}
	if l.MaxContentBytes > 0 && len(ev.Content) > l.MaxContentBytes {
		return ReasonContentTooLong
	}
	if l.MaxTags > 0 && len(ev.Tags) > l.MaxTags {
		return ReasonTooManyTags
	}
	if !cleanText(ev.Content) {
		return ReasonBadText
	}
	for _, tag := range ev.Tags {
		if len(tag) == 0 {
			return ReasonEmptyTag
		}
		for _, s := range tag {
			if !cleanText(s) {
				return ReasonBadText
			}
		}
		if l.MaxTagValueBytes > 0 && len(tag) >= 2 && isSingleLetter(tag[0]) && len(tag[1]) > l.MaxTagValueBytes {
			return ReasonTagValueTooLong
		}
	}
	if ClassOf(ev.Kind) == Addressable {
		if _, ok := DTag(ev); !ok {
			return ReasonNoDTag
		}
	}
	if exp, present, ok := expiration(ev); present {
		if !ok {
			return ReasonBadExpiration
		}
		if exp <= now.Unix() {
			return ReasonExpired
		}
	}
	return checkTopics(ev, l.TopicRules, l.MaxTagValueBytes)
}

// ValidateAuthEvent checks a NIP-42 AUTH event against the challenge this connection
// was sent and the URLs this relay is (aud: configured, never taken from the
// client's request; see package audience, which compares host, port and path). It
// returns "" or a Reason* constant; on "" the client is authenticated as
// ev.PubKey. Topic and size rules do not apply.
func ValidateAuthEvent(ev *nostr.Event, challenge string, aud audience.Set, now time.Time) string {
	if ev == nil {
		return ReasonNoEvent
	}
	if r := checkFormat(ev); r != "" {
		return r
	}
	if ev.Kind != nostr.KindClientAuthentication {
		return ReasonAuthNotAuthKind
	}
	skew := int64(AuthMaxSkew / time.Second)
	if d := int64(ev.CreatedAt) - now.Unix(); d > skew || d < -skew {
		return ReasonAuthStale
	}
	if firstTagValue(ev, "challenge") != challenge || challenge == "" {
		return ReasonAuthChallenge
	}
	if aud.Empty() {
		return ReasonAuthMissingRelay
	}
	if !aud.Names(firstTagValue(ev, "relay")) {
		return ReasonAuthRelay
	}
	return checkIDAndSignature(ev)
}

// checkTopics applies the topic rules that need no storage (see TopicRules).
// Ephemeral events are never stored and have no topic. Identity events belong to
// NodeTopic whatever their tags say (their normalised `t` values must still fit
// an index entry: #t matches them). An event with own topics needs every one
// enabled. An event without any passes when it references something (the store
// decides whether it inherits a topic), names a person in a person kind (the
// store decides whether that is a member), is exempt, falls back to the default
// topic, or topics are not required.
func checkTopics(ev *nostr.Event, r TopicRules, maxBytes int) string {
	if ClassOf(ev.Kind) == Ephemeral {
		return ""
	}
	topics := Topics(ev)
	// A group event's scope is its group (the store decides it); its t tags
	// are content, as an identity event's are.
	identity := IsIdentityKind(ev.Kind) || IsGroupEvent(ev)
	if len(topics) == 0 {
		if identity || !r.RequireTopic || r.TopicExemptKinds[ev.Kind] || !TopicRefs(ev).Empty() {
			return ""
		}
		if IsPersonKind(ev.Kind) && len(PersonRefs(ev)) > 0 {
			return ""
		}
		if r.DefaultTopic != "" && !IsPrivateKind(ev.Kind) {
			return ""
		}
		if IsPersonKind(ev.Kind) {
			return ReasonPersonNotMember
		}
		return ReasonMissingTopic
	}
	// (An identity event's t tags are content, matched by #t but in no outbox
	// row: a NIP-51 interest list may name many hashtags.)
	if !identity && r.MaxTopics > 0 && len(topics) > r.MaxTopics {
		return TooManyTopicsReason(len(topics), r.MaxTopics)
	}
	for _, t := range topics {
		if maxBytes > 0 && len(t) > maxBytes {
			return ReasonTopicTooLong
		}
		if !identity && !r.Enabled(t) {
			return ReasonTopicNotEnabled
		}
	}
	return ""
}

// checkFormat checks the hex fields and the kind range. It also guarantees the id
// length that go-nostr's CheckID assumes (it indexes the id without checking).
func checkFormat(ev *nostr.Event) string {
	switch {
	case !isLowerHex(ev.ID, 64):
		return ReasonMalformedID
	case !isLowerHex(ev.PubKey, 64):
		return ReasonMalformedPubKey
	case !isLowerHex(ev.Sig, 128):
		return ReasonMalformedSig
	case ev.Kind < 0 || ev.Kind > 65535:
		return ReasonKindOutOfRange
	}
	return ""
}

func firstTagValue(ev *nostr.Event, name string) string {
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == name {
			return tag[1]
		}
	}
	return ""
}
