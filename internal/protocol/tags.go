package protocol

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/text/unicode/norm"
)

// NormalizeTopic returns the canonical form of a topic (a `t` tag value, a #t filter
// value or a configured topic): Unicode NFKC, strings.ToLower, NFKC again, then
// leading and trailing white space removed. It returns "" when nothing is left.
//
// The result is idempotent (NormalizeTopic(NormalizeTopic(s)) == NormalizeTopic(s)),
// which the fuzz tests check. Full-width and compatibility forms fold to their
// ordinary forms ("ＮＯＳＴＲ" -> "nostr"), scripts without case are unchanged
// ("日本語"). ToLower is the simple lower-case mapping, not case folding: "ß" and
// "ss" remain different topics. The second NFKC pass keeps the result in NFKC
// even where lower-casing leaves the normal form. Inner white space is kept.
func NormalizeTopic(s string) string {
	s = norm.NFKC.String(s)
	s = strings.ToLower(s)
	s = norm.NFKC.String(s)
	return strings.TrimSpace(s)
}

// Topics returns the distinct normalised, non-empty values of the event's `t` tags
// in first-seen order; nil when there are none. The outbox gets one row per topic.
func Topics(ev *nostr.Event) []string {
	if ev == nil {
		return nil
	}
	var out []string
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "t" {
			continue
		}
		t := NormalizeTopic(tag[1])
		if t == "" || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// DTag returns the value of the event's first `d` tag and whether it has one. A
// `["d"]` tag without a value counts as a `d` tag with the empty value.
func DTag(ev *nostr.Event) (string, bool) {
	if ev == nil {
		return "", false
	}
	for _, tag := range ev.Tags {
		if len(tag) >= 1 && tag[0] == "d" {
			if len(tag) >= 2 {
				return tag[1], true
			}
			return "", true
		}
	}
	return "", false
}

// EffectiveKey returns the key under which only the newest event counts:
// "kind:pubkey" for replaceable kinds, "kind:pubkey:d" for addressable kinds (d from
// DTag, so possibly empty and possibly containing ':'; it is always the last part),
// and "" for regular and ephemeral kinds.
func EffectiveKey(ev *nostr.Event) string {
	if ev == nil {
		return ""
	}
	switch ClassOf(ev.Kind) {
	case Replaceable:
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey
	case Addressable:
		d, _ := DTag(ev)
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":" + d
	}
	return ""
}

// Expiration returns the NIP-40 expiration time (unix seconds) from the event's first
// `expiration` tag, and false when there is no such tag or its value is not a
// non-negative decimal integer (ValidateEvent rejects the latter).
func Expiration(ev *nostr.Event) (int64, bool) {
	exp, present, ok := expiration(ev)
	return exp, present && ok
}

// expiration also tells a missing tag (present false) from a malformed one (ok false).
func expiration(ev *nostr.Event) (exp int64, present, ok bool) {
	if ev == nil {
		return 0, false, false
	}
	for _, tag := range ev.Tags {
		if len(tag) < 1 || tag[0] != "expiration" {
			continue
		}
		if len(tag) < 2 || !isDigits(tag[1]) {
			return 0, true, false
		}
		v, err := strconv.ParseInt(tag[1], 10, 64)
		if err != nil {
			return 0, true, false
		}
		return v, true, true
	}
	return 0, false, false
}

// Protected reports whether the event carries the NIP-70 protected tag `["-"]`: any
// tag whose name is "-" counts, so extra elements cannot switch protection off.
func Protected(ev *nostr.Event) bool {
	if ev == nil {
		return false
	}
	for _, tag := range ev.Tags {
		if len(tag) >= 1 && tag[0] == "-" {
			return true
		}
	}
	return false
}

// isLowerHex reports whether s is exactly n lowercase hexadecimal characters.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isSingleLetter reports whether a tag name is one of the indexed names a-z, A-Z.
func isSingleLetter(name string) bool {
	return len(name) == 1 && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))
}

// cleanText reports whether s can be stored as Postgres text: valid UTF-8, no NUL.
func cleanText(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// GroupTag returns the value of the event's first NIP-29 `h` tag (the id of
// the relay-based group it is sent to) and how many distinct `h` values it
// carries (0: no group; more than 1: malformed, internal/groups refuses it).
func GroupTag(ev *nostr.Event) (id string, n int) {
	if ev == nil {
		return "", 0
	}
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		switch {
		case n == 0:
			id, n = tag[1], 1
		case tag[1] != id:
			n++
		}
	}
	return id, n
}

// IsGroupEvent reports whether ev is sent to a NIP-29 group: it has an `h`
// tag and is no identity event (IsIdentityKind: a profile or list belongs to
// its author, never to a group), or it is of a kind NIP-29 reserves (group
// moderation 9000-9020, join and leave requests 9021 and 9022, group state
// 39000-39005), with or without an `h` tag. Such an event's scope is its
// group, decided by the store (internal/groups), not by its `t` tags, which
// are content (matched by #t) as an identity event's are.
func IsGroupEvent(ev *nostr.Event) bool {
	if ev == nil {
		return false
	}
	if (ev.Kind >= 9000 && ev.Kind <= 9022) || (ev.Kind >= 39000 && ev.Kind <= 39005) {
		return true
	}
	_, n := GroupTag(ev)
	return n > 0 && !IsIdentityKind(ev.Kind)
}
