package store

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// decodeTags parses a stored tags column: a JSON array of arrays of strings, as
// Postgres prints jsonb. It gives what encoding/json gives (an empty array is
// empty, not nil), at a fraction of the cost: the common tag, whose strings
// have no escapes, is cut out of raw without copying (every string shares
// raw's memory), and anything else is handed to encoding/json.
func decodeTags(raw string) (nostr.Tags, error) {
	if tags, ok := parseTags(raw); ok {
		return tags, nil
	}
	var tags nostr.Tags
	if err := json.Unmarshal([]byte(raw), &tags); err != nil {
		return nil, fmt.Errorf("decode tags: %w", err)
	}
	return tags, nil
}

// parseTags is decodeTags' fast path; ok is false when raw has an escaped
// string, invalid UTF-8, or is not an array of arrays of strings.
func parseTags(raw string) (tags nostr.Tags, ok bool) {
	i := 0
	ws := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	// next consumes c (after blanks) if it is there.
	next := func(c byte) bool {
		ws()
		if i < len(raw) && raw[i] == c {
			i++
			return true
		}
		return false
	}
	if !next('[') {
		return nil, false
	}
	tags = nostr.Tags{}
	if next(']') {
		ws()
		return tags, i == len(raw)
	}
	for {
		if !next('[') {
			return nil, false
		}
		tag := nostr.Tag{}
		if !next(']') {
			for {
				if !next('"') {
					return nil, false
				}
				start := i
				for i < len(raw) && raw[i] != '"' && raw[i] != '\\' && raw[i] >= 0x20 {
					i++
				}
				if i == len(raw) || raw[i] != '"' || !utf8.ValidString(raw[start:i]) {
					return nil, false // (encoding/json replaces invalid UTF-8)
				}
				tag = append(tag, raw[start:i])
				i++
				if next(']') {
					break
				}
				if !next(',') {
					return nil, false
				}
			}
		}
		tags = append(tags, tag)
		if next(']') {
			ws()
			return tags, i == len(raw)
		}
		if !next(',') {
			return nil, false
		}
	}
}
