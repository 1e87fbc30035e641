package protocol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// NodeTopic is the reserved topic id of node-wide identity events (profiles,
// follow, mute and relay lists: every replaceable kind, see IsIdentityKind). No
// normalised `t` value can equal it: NormalizeTopic lower-cases its input, and
// the exhaustive test TestNodeTopicIsUnreachable checks that no character
// normalises to an upper-case ASCII letter. So a client can never publish into
// it or ask for it with #t; identity events are read by kinds and authors.
const NodeTopic = "NODE"

// IsIdentityKind reports whether events of this kind describe a person rather
// than a post: the replaceable kinds of NIP-01 (0 profile, 3 follow list and
// 10000-19999: mute list, relay list, and the other per-author lists of NIP-51).
// NIP-85 trusted assertions (kinds 30382-30385) are statements about keys and
// events made for the whole node, so they are identity events too. Such events
// belong to NodeTopic only; their own `t` tags (NIP-51 interests, NIP-85 common
// topics) are content, not community topics.
func IsIdentityKind(kind int) bool {
	return ClassOf(kind) == Replaceable || IsAssertionKind(kind)
}

// NIP-85 trusted assertion kinds.
const (
	KindUserAssertion       = 30382 // d = the subject's pubkey
	KindEventAssertion      = 30383
	KindAddressAssertion    = 30384
	KindIdentifierAssertion = 30385
)

// IsAssertionKind reports whether kind is a NIP-85 trusted assertion.
func IsAssertionKind(kind int) bool {
	return kind >= KindUserAssertion && kind <= KindIdentifierAssertion
}

// IdentityWriters says who may publish identity events.
type IdentityWriters string

const (
	// IdentityWritersMembers accepts identity events only from members: authors
	// with at least one event stored in a community topic (own or inherited).
	// Spam keys cannot fill the node with profiles, and every author whose posts
	// are shown here can publish a profile.
	IdentityWritersMembers IdentityWriters = "members"
	// IdentityWritersAny accepts identity events from every author.
	IdentityWritersAny IdentityWriters = "any"
)

// ParseIdentityWriters parses "members" or "any".
func ParseIdentityWriters(s string) (IdentityWriters, error) {
	switch w := IdentityWriters(strings.ToLower(strings.TrimSpace(s))); w {
	case IdentityWritersMembers, IdentityWritersAny:
		return w, nil
	}
	return "", fmt.Errorf("identity writers must be %q or %q, got %q", IdentityWritersMembers, IdentityWritersAny, s)
}

// TopicRules are the community's rules about topics. ValidateEvent applies the
// part that needs no storage; the store applies the rest (inheritance, the
// allow-list on inherited topics, IdentityWriters), because it depends on what
// is stored.
//
// Every stored event belongs to topics: its own (`t` tags), else those it
// inherits from the stored events it references (TopicRefs), and an identity
// event belongs to NodeTopic. An event that ends up with none is refused with
// ReasonMissingTopic, unless RequireTopic is off or its kind is exempt.
type TopicRules struct {
	// RequireTopic: events need a topic, own or inherited (default true).
	RequireTopic bool
	// TopicExemptKinds are accepted without a topic when they cannot inherit one.
	// The default exempts kind 5 (NIP-09): a deletion may arrive before its
	// target, and it acts on the targets, whose topics are known.
	TopicExemptKinds map[int]bool
	// RequireTopicInREQ: every REQ/COUNT filter must carry "#t" with at least one
	// topic, else ReasonTopicFilterRequired (default false; kukuri-style clients
	// that only read by topic can turn it on). Filters asking only for identity
	// kinds are exempt: those events have no community topic.
	RequireTopicInREQ bool
	// AllowedTopics, when not nil, lists the enabled topics (keys must be
	// normalised, see NormalizeTopic); an event or filter naming any other topic
	// gets ReasonTopicNotEnabled. Inherited topics that are not enabled are
	// dropped; an event left with none is refused with ReasonTopicNotEnabled.
	// NodeTopic is always enabled. Nil enables every topic.
	AllowedTopics map[string]bool
	// IdentityWriters says who may publish identity events (default members).
	IdentityWriters IdentityWriters
}

// DefaultTopicRules returns the rules documented on each TopicRules field.
func DefaultTopicRules() TopicRules {
	return TopicRules{
		RequireTopic:     true,
		TopicExemptKinds: map[int]bool{nostr.KindDeletion: true},
		IdentityWriters:  IdentityWritersMembers,
	}
}

// Enabled reports whether topic may be stored under these rules.
func (r TopicRules) Enabled(topic string) bool {
	return topic == NodeTopic || r.AllowedTopics == nil || r.AllowedTopics[topic]
}

// Refs are the stored events an event refers to, whose topics it inherits when
// it has none of its own.
type Refs struct {
	IDs       []string // event ids (64 lowercase hex)
	Addresses []string // "kind:pubkey:d" of replaceable and addressable events
}

// Empty reports whether there is no reference.
func (r Refs) Empty() bool { return len(r.IDs) == 0 && len(r.Addresses) == 0 }

// TopicRefs returns the references through which an event inherits topics, in
// tag order without duplicates: the first value of `e` and `E` tags (NIP-10
// replies, NIP-18 reposts, NIP-25 reactions, NIP-22 comments and their root,
// NIP-56 reports, NIP-57 zap receipts, NIP-32 labels, NIP-09 deletions), `a` and
// `A` tags (addressable targets), and `q` tags (NIP-18 quotes: an id or an
// address). Malformed values are ignored.
func TopicRefs(ev *nostr.Event) Refs {
	var r Refs
	if ev == nil {
		return r
	}
	addID := func(v string) {
		if isLowerHex(v, 64) && !slices.Contains(r.IDs, v) {
			r.IDs = append(r.IDs, v)
		}
	}
	addAddress := func(v string) {
		if IsAddress(v) && !slices.Contains(r.Addresses, v) {
			r.Addresses = append(r.Addresses, v)
		}
	}
	for _, tag := range ev.Tags {
		if len(tag) < 2 {
			continue
		}
		switch tag[0] {
		case "e", "E":
			addID(tag[1])
		case "a", "A":
			addAddress(tag[1])
		case "q":
			if isLowerHex(tag[1], 64) {
				addID(tag[1])
			} else {
				addAddress(tag[1])
			}
		}
	}
	return r
}

// IsAddress reports whether v is "kind:pubkey:d" naming a replaceable or
// addressable event (d may be empty, and may contain ':').
func IsAddress(v string) bool {
	kind, rest, ok := strings.Cut(v, ":")
	if !ok || !isDigits(kind) || len(kind) > 5 {
		return false
	}
	pubkey, _, ok := strings.Cut(rest, ":")
	if !ok || !isLowerHex(pubkey, 64) {
		return false
	}
	k := 0
	for i := 0; i < len(kind); i++ {
		k = k*10 + int(kind[i]-'0')
	}
	c := ClassOf(k)
	return c == Replaceable || c == Addressable
}
