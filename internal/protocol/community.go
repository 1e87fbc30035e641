package protocol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// NodeTopic is the reserved topic id of the person scope: identity events
// (profiles, follow, mute and relay lists, NIP-51 sets, app settings: see
// IsIdentityKind) and events addressed to a member rather than posted in a topic
// (IsPersonKind: DMs, gift wraps, reports of users, profile zaps). No normalised
// `t` value can equal it: NormalizeTopic lower-cases its input, and the
// exhaustive test TestNodeTopicIsUnreachable checks that no character normalises
// to an upper-case ASCII letter. So a client can never publish into it or ask
// for it with #t; such events are read by kinds, authors and #p.
const NodeTopic = "NODE"

// IsIdentityKind reports whether events of this kind describe a person (what
// they say about themselves, their lists and settings) rather than a post: the
// replaceable kinds of NIP-01 (0 profile, 3 follow list, 10000-19999: mute list,
// relay lists, the other per-author lists of NIP-51), the user-owned
// addressable kinds of identityAddressableKinds (NIP-51 sets, NIP-78 app data,
// ...), and NIP-85 trusted assertions (kinds 30382-30385: statements about keys
// and events made for the whole node). Such events belong to NodeTopic; their own
// `t` tags (NIP-51 interests, NIP-85 common topics) are content that #t matches
// (NIP-01), not community topics.
func IsIdentityKind(kind int) bool {
	return ClassOf(kind) == Replaceable || IsAssertionKind(kind) || identityAddressableKinds[kind]
}

// IdentityKindsText lists the identity kinds (IsIdentityKind) for people: NIP-11
// and docs/clients.md print it.
const IdentityKindsText = "0,3,10000-19999,30000,30002-30008,30015,30024,30030,30063,30078,30267,30315,30382-30385,31234,31924,31989,39089,39092,39701"

// identityAddressableKinds are the addressable kinds that hold a person's own
// lists and settings (a survey of the NIPs, 2026-07): NIP-51 sets (30000 follow,
// 30002 relay, 30003 bookmark, 30004-30006 curation, 30007 kind mute, 30008
// badge, 30015 interest, 30030 emoji, 30063 release artifact, 30267 app
// curation, 31924 calendar, 39089 and 39092 starter packs), NIP-78 app data
// (30078), NIP-38 user statuses (30315), drafts (30024 NIP-23, 31234 NIP-37),
// NIP-89 handler recommendations (31989) and NIP-B0 web bookmarks (39701).
// Addressable kinds that are posts (30023 articles, 31922/31923 calendar events,
// 30311 live events, 34550 community definitions, ...) still need a topic.
var identityAddressableKinds = map[int]bool{
	30000: true, 30002: true, 30003: true, 30004: true, 30005: true, 30006: true, 30007: true, 30008: true,
	30015: true, 30030: true, 30063: true, 30267: true, 31924: true, 39089: true, 39092: true,
	30078: true, 30315: true, 30024: true, 31234: true, 31989: true, 39701: true,
}

// Kinds addressed to a person (IsPersonKind) and the private ones among them.
const (
	KindEncryptedDM = 4    // NIP-04 (legacy DMs): private
	KindGiftWrap    = 1059 // NIP-59 gift wrap, NIP-17 DMs: private
	KindReport      = 1984 // NIP-56
	KindLabel       = 1985 // NIP-32
	KindZapReceipt  = 9735 // NIP-57
)

// IsPersonKind reports whether events of this kind may be addressed to a
// person with nothing but `p` tags: NIP-04 DMs (4), gift wraps (1059), reports
// of users (1984), labels of users (1985) and profile zap receipts (9735). Such
// an event that has no topic and inherits none is stored in the person scope
// (NodeTopic) when one of its PersonRefs is a member of this relay.
func IsPersonKind(kind int) bool {
	switch kind {
	case KindEncryptedDM, KindGiftWrap, KindReport, KindLabel, KindZapReceipt:
		return true
	}
	return false
}

// IsPrivateKind reports whether events of this kind are served only to their
// parties (Viewer.MayRead): NIP-04 DMs (4) and NIP-59 gift wraps (1059). Their
// content is encrypted, but who writes to whom, and when, is private too.
func IsPrivateKind(kind int) bool { return kind == KindEncryptedDM || kind == KindGiftWrap }

// MaxPersonRefs bounds how many `p` tags of one event are considered for the
// person scope (a report or a zap names one or two people; a DM one).
const MaxPersonRefs = 16

// PersonRefs returns the distinct well-formed `p` tag values of ev, in tag
// order, at most MaxPersonRefs of them.
func PersonRefs(ev *nostr.Event) []string {
	if ev == nil {
		return nil
	}
	var out []string
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "p" && isLowerHex(tag[1], 64) && !slices.Contains(out, tag[1]) {
			out = append(out, tag[1])
			if len(out) == MaxPersonRefs {
				break
			}
		}
	}
	return out
}

// Viewer is who reads: the pubkeys a connection has authenticated as (NIP-42),
// or an operator's tool. The zero Viewer is an anonymous reader.
type Viewer struct {
	// Authed are the authenticated pubkeys.
	Authed []string
	// Operator sees every stored event (export, admin tools); never set for a
	// client connection.
	Operator bool
	// AllGroups reads every NIP-29 group, private and hidden ones included:
	// a connection authenticated as a relay admin or as the node key. It
	// does not open private kinds (DMs) to it.
	AllGroups bool
	// Groups is the current rule of the groups that not everyone may read
	// (private and hidden NIP-29 groups). Nil: no group is; the SQL engine
	// reads the rule from the database instead (cn_relay.group_access).
	Groups GroupGate
}

// GroupGate is the current rule of the NIP-29 groups that not everyone may
// read (GroupKeepsFrom): a private group's events but its state, and a hidden
// group's state, are read by its members only.
type GroupGate interface {
	// Any reports whether any group is private or hidden.
	Any() bool
	// Rule reports whether group id is private, hidden, and whether one of
	// pubkeys is its member.
	Rule(id string, pubkeys []string) (private, hidden, member bool)
}

// GroupRule is one private or hidden group's row of cn_relay.group_access.
// A deleted group is both, with no readers: nobody but those who read every
// group (Viewer.AllGroups, Viewer.Operator) reads anything of it.
type GroupRule struct {
	Private, Hidden bool
	// Deleted says the group was deleted (9008): Private and Hidden are set
	// and Readers is empty. It changes no read rule; the relay answers a REQ
	// that names a deleted group as it answers one naming an unknown id.
	Deleted bool
	// Readers are the members.
	Readers []string
}

// ReadBy reports whether one of pubkeys reads what the group keeps from
// non-members (GroupKeepsFrom): one of them is among its Readers.
func (r GroupRule) ReadBy(pubkeys []string) bool {
	return slices.ContainsFunc(pubkeys, func(pk string) bool { return slices.Contains(r.Readers, pk) })
}

// GroupRules is a GroupGate over rules by group id, holding only the
// private, hidden and deleted groups, as cn_relay.group_access does
// (store.Reader.GroupAccess returns one).
type GroupRules map[string]GroupRule

// Any implements GroupGate.
func (g GroupRules) Any() bool { return len(g) > 0 }

// Rule implements GroupGate: a group without a rule is neither private nor
// hidden.
func (g GroupRules) Rule(id string, pubkeys []string) (private, hidden, member bool) {
	r, ok := g[id]
	if !ok {
		return false, false, false
	}
	return r.Private, r.Hidden, r.ReadBy(pubkeys)
}

// IsGroupStateKind reports whether a kind is a group's state, signed by the
// node: 39000-39005.
func IsGroupStateKind(kind int) bool { return kind >= 39000 && kind <= 39005 }

// GroupKeepsFrom reports whether a group whose flags are private and hidden
// keeps an event of kind from non-members: a private group every event of
// its scope but its state (NIP-29: only members read its messages; anyone
// may read its metadata, to find it and ask to join); a hidden group its
// state, and the kind 5 by which the node deletes that state with the group
// (NIP-29: its metadata is hidden from non-members). A kind 5 of a private
// group is kept back as any of its events is.
func GroupKeepsFrom(private, hidden bool, kind int) bool {
	state := IsGroupStateKind(kind)
	return private && !state || hidden && (state || kind == nostr.KindDeletion)
}

// GroupOf returns the NIP-29 group whose scope (GROUP:<id>) ev is stored in,
// as the store places it: an event sent to a group (IsGroupEvent) by its `h`
// tag; a state event (39000-39005) by its `d` tag; a kind 5 that deletes
// state events by address (the node's deletion of a deleted group's state)
// by the group those addresses name. It is the rule's one home: the store
// writes each event's scope rows from it, and SQL reads them back
// (schema.GroupOfSQL; internal/store's TestGroupOfSQLIsGroupOf walks both).
func GroupOf(ev *nostr.Event) (string, bool) {
	if ev == nil {
		return "", false
	}
	if ev.Kind >= 39000 && ev.Kind <= 39005 {
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "d" {
				return tag[1], true
			}
		}
		return "", true
	}
	if IsGroupEvent(ev) {
		if id, n := GroupTag(ev); n > 0 {
			return id, true
		}
		return "", false
	}
	if ev.Kind == nostr.KindDeletion {
		for _, tag := range ev.Tags {
			if len(tag) < 2 || tag[0] != "a" {
				continue
			}
			kind, rest, _ := strings.Cut(tag[1], ":")
			_, d, ok := strings.Cut(rest, ":")
			if ok && len(kind) == 5 && kind >= "39000" && kind <= "39005" {
				return d, true
			}
		}
	}
	return "", false
}

// MayRead reports whether v may receive ev: every event that is not of a
// private kind; a gift wrap (1059) or NIP-04 DM (4) only when v authenticated as
// a recipient (a `p` tag) or, for kind 4, as its author; and an event of a
// private group, or a hidden group's state (MayReadGroup), only when v
// authenticated as a member. It is the read rule's one home; the SQL query
// engine repeats it (internal/store's filterSQLWith for the private kinds,
// schema.GroupReadableSQL and cn_relay.group_keeps for groups), and
// internal/store's TestReadRuleSQLIsGo walks both over every kind of reader.
func (v Viewer) MayRead(ev *nostr.Event) bool {
	if v.Operator {
		return true
	}
	if IsPrivateKind(ev.Kind) && !v.party(ev) {
		return false
	}
	return v.MayReadGroup(ev)
}

// party reports whether v authenticated as a recipient of ev (a `p` tag)
// or, for kind 4, as its author.
func (v Viewer) party(ev *nostr.Event) bool {
	for _, pk := range v.Authed {
		if ev.Kind == KindEncryptedDM && ev.PubKey == pk {
			return true
		}
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "p" && tag[1] == pk {
				return true
			}
		}
	}
	return false
}

// MayReadGroup is MayRead's group part: false only for an event that its
// group (GroupOf) keeps from non-members (GroupKeepsFrom) when v is no
// member of it (nor an operator, a relay admin or the node: AllGroups).
func (v Viewer) MayReadGroup(ev *nostr.Event) bool {
	if v.Operator || v.AllGroups || v.Groups == nil || !v.Groups.Any() {
		return true
	}
	id, ok := GroupOf(ev)
	if !ok {
		return true
	}
	private, hidden, member := v.Groups.Rule(id, v.Authed)
	return member || !GroupKeepsFrom(private, hidden, ev.Kind)
}

// GroupsNamed returns the group ids a filter names in #h.
func GroupsNamed(f nostr.Filter) []string { return f.Tags["h"] }

// AsksPrivate reports whether a filter names a private kind in its kinds: a
// reader that has not authenticated is asked to (NIP-42 auth-required) rather
// than served an empty answer. Filters without kinds are served, minus what the
// reader may not see.
func AsksPrivate(f nostr.Filter) bool {
	return slices.ContainsFunc(f.Kinds, IsPrivateKind)
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
	// IdentityWritersMembers publishes identity events of members only: authors
	// with at least one event stored in a community topic (own or inherited),
	// keys an operator admitted (NIP-86 allowpubkey), and keys whose trust rank
	// passes the relay's gate. A newcomer's identity events are accepted and
	// kept pending (not served, indexed or in the outbox) until the key becomes a
	// member, then published as if they had just arrived. Spam keys cannot fill
	// the node with profiles, and an app's sign-up (profile, follows, relay
	// lists sent once, before the first post) is not lost.
	IdentityWritersMembers IdentityWriters = "members"
	// IdentityWritersAny publishes identity events from every author at once.
	IdentityWritersAny IdentityWriters = "any"
)

// Summary states in one line what a client author must know about these rules
// (cnctl dev prints it under the URLs).
func (r TopicRules) Summary() string {
	var b strings.Builder
	switch {
	case r.DefaultTopic != "":
		fmt.Fprintf(&b, "posts without a t tag or a stored event to reply to go to topic %q", r.DefaultTopic)
	case r.RequireTopic:
		b.WriteString("posts need a t tag or must reply to, react to or quote (e/a/q) an event stored here")
	default:
		b.WriteString("posts need no topic")
	}
	if r.AllowedTopics != nil {
		b.WriteString(" (only the allowed topics)")
	}
	b.WriteString("; profiles and lists are the person scope")
	if r.IdentityWriters != IdentityWritersAny {
		b.WriteString(" (a newcomer's wait, answered \"pending:\", until its first post)")
	}
	b.WriteString("; DMs, reports and zaps of a member need only a p tag; kinds 4 and 1059 are served after NIP-42 AUTH to their recipients; ephemeral events (NIP-46) are relayed live; #t matches own t tags of every kind")
	return b.String()
}

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
// Every stored event belongs to topics (its scope), decided in this order:
//
//  1. an identity event (IsIdentityKind) belongs to NodeTopic, the person scope;
//  2. an event with `t` tags belongs to those (every one must be enabled);
//  3. else to the enabled topics of the stored events it references (TopicRefs);
//  4. else, for a kind addressed to a person (IsPersonKind), to NodeTopic when one
//     of its `p` tags (PersonRefs) names a member;
//  5. else, for an exempt kind (TopicExemptKinds), to NodeTopic: the event is
//     for the whole node, and has outbox rows like every other (live delivery,
//     consumers and the relay's event cache follow the outbox);
//  6. else to DefaultTopic when one is set (not for private kinds);
//  7. else it is refused with ReasonMissingTopic (ReasonPersonNotMember for a
//     person kind that names no member), unless RequireTopic is off (it is then
//     stored without a topic, and without outbox rows).
type TopicRules struct {
	// RequireTopic: events need a topic, own or inherited (default true).
	RequireTopic bool
	// TopicExemptKinds are accepted without a topic of their own when they
	// cannot inherit one: they take the person scope (NodeTopic). The default
	// exempts kind 5 (NIP-09): a deletion may arrive before its target, and it
	// acts on the targets, whose topics are known.
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
	// IdentityWriters says whose identity events are published at once (default
	// members; the others wait until their key becomes a member).
	IdentityWriters IdentityWriters
	// DefaultTopic, when not "", is the single-community mode: an event with no
	// topic and nothing to inherit is stored in this topic (normalised, enabled)
	// instead of being refused. Off by default.
	DefaultTopic string
	// MaxTopics bounds the topics of one event (default 8): every topic costs a
	// topic row and an outbox row that every consumer processes. An event with
	// more distinct own topics is refused (TooManyTopicsReason); an event that
	// inherits more keeps the first MaxTopics in sort order.
	MaxTopics int
}

// DefaultMaxTopics is the default TopicRules.MaxTopics.
const DefaultMaxTopics = 8

// TooManyTopicsReason is the OK message for an event with n own topics, more
// than max.
func TooManyTopicsReason(n, max int) string {
	return fmt.Sprintf("invalid: too many topics (%d distinct t tags; this relay accepts at most %d per event)", n, max)
}

// DefaultTopicRules returns the rules documented on each TopicRules field.
func DefaultTopicRules() TopicRules {
	return TopicRules{
		RequireTopic:     true,
		TopicExemptKinds: map[int]bool{nostr.KindDeletion: true},
		IdentityWriters:  IdentityWritersMembers,
		MaxTopics:        DefaultMaxTopics,
	}
}

// OrDefault returns r, or DefaultTopicRules for the zero TopicRules (a
// configuration that leaves them unset).
func (r TopicRules) OrDefault() TopicRules {
	if !r.RequireTopic && r.TopicExemptKinds == nil && !r.RequireTopicInREQ && r.AllowedTopics == nil &&
		r.IdentityWriters == "" && r.DefaultTopic == "" && r.MaxTopics == 0 {
		return DefaultTopicRules()
	}
	return r
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
