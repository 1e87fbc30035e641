package protocol

import (
	"encoding/json"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/textsearch"
)

// nip50Extensions are the key:value extensions NIP-50 defines for search strings.
// None is supported; they are dropped before parsing, as NIP-50 asks relays to
// ignore extensions they do not support.
var nip50Extensions = []string{"include:", "domain:", "language:", "sentiment:", "nsfw:"}

// ParseSearch parses a filter's NIP-50 search string: unsupported extensions are
// dropped, the rest is a textsearch query. ok is false when nothing searchable
// remains; such a filter matches nothing.
func ParseSearch(search string) (q textsearch.Query, ok bool) {
	fields := strings.Fields(search)
	kept := fields[:0]
	for _, f := range fields {
		lower := strings.ToLower(f)
		ext := false
		for _, p := range nip50Extensions {
			if strings.HasPrefix(lower, p) {
				ext = true
				break
			}
		}
		if !ext {
			kept = append(kept, f)
		}
	}
	q, err := textsearch.ParseQuery(strings.Join(kept, " "))
	return q, err == nil
}

// SearchText is the text of ev that search covers: for a profile (kind 0) the
// people-facing fields of its metadata (ProfileText); else the content,
// followed for addressable kinds (30000-39999, e.g. NIP-23 articles) by the
// values of its title and summary tags. The indexer builds the same text
// (internal/indexer: sourceColumns in SQL, then ProfileText); the two must agree.
func SearchText(ev *nostr.Event) string {
	if ev.Kind == 0 {
		return ProfileText(ev.Content)
	}
	if ev.Kind < 30000 {
		return ev.Content
	}
	var extra []string
	for _, t := range ev.Tags {
		if len(t) >= 2 && (t[0] == "title" || t[0] == "summary") {
			extra = append(extra, t[1])
		}
	}
	if len(extra) == 0 {
		return ev.Content
	}
	return ev.Content + " " + strings.Join(extra, " ")
}

// profileFields are the NIP-01/NIP-24 metadata fields a person is searched by.
var profileFields = []string{"name", "display_name", "about", "nip05"}

// ProfileText is the searchable text of a profile's content (kind 0 metadata
// JSON): its name, display_name, about and nip05 values, space separated, so
// that JSON keys and URLs do not match every profile; content that is not a
// JSON object is searched as it is.
func ProfileText(content string) string {
	var m map[string]any
	if json.Unmarshal([]byte(content), &m) != nil {
		return content
	}
	var parts []string
	for _, f := range profileFields {
		if v, ok := m[f].(string); ok && strings.TrimSpace(v) != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}
